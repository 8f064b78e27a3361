#!/usr/bin/env python3
"""Collect the golden reference timing GOLDEN_PERF_REPORT.json (+ .md) once, before the baseline.

Imports the golden module, builds every frozen manifest case with the factory (seed 42, outside
the timed region), times the golden function per repeat and writes the report atomically. The
golden source and manifest hashes are snapshotted before and verified after; the case id set
must equal the manifest's exactly. An existing report is never overwritten. The cpu backend times
one call with perf_counter_ns (pypto-sim too: its golden runs on the host); torch_npu sums Duration(us)
of the repeat's kernel_details.csv.

usage:
  collect_golden_reference.py GOLDEN --function F --factory FACTORY --case-manifest M
      --output-dir D --device N --warmup N --repeats N --seed 42 [--backend cpu|torch_npu|pypto-sim] [--json]

example:
  python3 scripts/collect_golden_reference.py custom/softmax/softmax_golden.py \
      --function softmax_golden --factory golden_cases \
      --case-manifest custom/softmax/PERFORMANCE_CASES.json --output-dir custom/softmax \
      --device 0 --warmup 2 --repeats 10 --seed 42

exit codes: 0 written, 2 usage/contract error (seed != 42, id mismatch, report exists, changed
source), 3 environment error (torch/torch_npu or the NPU missing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune.measure import evidence, golden_timing
from perftune import fsio
from perftune.contract import golden
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "collect_golden_reference.py")
    parser.add_argument("golden", type=path_arg, help="the <op>_golden.py file")
    parser.add_argument("--function", required=True, help="golden function to time")
    parser.add_argument("--factory", required=True, help="factory(manifest_cases) -> [(id, args, kwargs)]")
    parser.add_argument("--case-manifest", required=True, type=path_arg, help="frozen PERFORMANCE_CASES.json")
    parser.add_argument("--output-dir", required=True, type=path_arg, help="where the report is written (op dir)")
    parser.add_argument("--device", required=True, type=int, help="physical device id")
    parser.add_argument("--warmup", required=True, type=int, help="untimed calls per case")
    parser.add_argument("--repeats", required=True, type=int, help="timed repeats per case")
    parser.add_argument("--seed", required=True, type=int, help="must be 42")
    parser.add_argument("--backend", choices=golden.GOLDEN_BACKENDS, default="cpu")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    path, report = golden_timing.collect(
        args.golden, function=args.function, factory=args.factory, manifest_path=args.case_manifest,
        output_dir=args.output_dir, device_id=args.device, warmup=args.warmup, repeats=args.repeats,
        seed=args.seed, backend=args.backend, created_at=evidence.utc_now())
    if args.json:
        print(fsio.dumps({"report": fsio.file_record(path), "content": report}), end="")
    else:
        for case in report["cases"]:
            print(f"{case['id']}: median {case['median_total_us']:.3f} us over {len(case['raw_repeat_e2e_us'])} repeats")
        print(f"{path}: written")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
