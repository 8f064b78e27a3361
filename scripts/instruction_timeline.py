#!/usr/bin/env python3
"""Supplemental instruction timeline per P0 case of a formal round (msprof backend, final acceptance).

`collect` traces every case of a complete formal round of the current sources once more, on the
card (application profiler with instruction profiling, then the timeline export) or without a
card (`msprof op simulator`), and writes docs/perf/timeline/<round>/<case folder>/timeline.json:
per-pipe busy intervals inside the one target-kernel window, overlap counted only within one lane,
completeness checks and the hashes of the archived exports. Timeline durations never replace
formal numbers. `parse` reads one Chrome trace file and prints the per-pipe model (no profiling).

usage:
  instruction_timeline.py collect --op-dir DIR --round ROUND [--source card|simulator]
                          [--kernel-name NAME] [--soc-version SOC] [--json]
  instruction_timeline.py parse --trace FILE --op-name NAME [--json]

example:
  python3 scripts/instruction_timeline.py collect --op-dir custom/softmax --round round_007

exit codes: 0 every case has a complete timeline, 1 a case failed (named, nothing half-written),
2 usage/contract error, 3 environment error (msprof missing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import run_cli
from perftune.measure import timeline_collect
from perftune.profiler import timeline


def build_parser():
    parser = parser_from_doc(__doc__, "instruction_timeline.py")
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser("collect", help="trace every case of a formal round and write timeline.json files")
    collect.add_argument("--op-dir", required=True, help="operator directory")
    collect.add_argument("--round", required=True, help="round_NNN, its path or collection id (the final round)")
    collect.add_argument("--source", choices=timeline_collect.SOURCES, default="card",
                         help="card: instruction profiling + export; simulator: msprof op simulator")
    collect.add_argument("--kernel-name", help="simulator only: the exact (mangled) kernel symbol")
    collect.add_argument("--soc-version", help="simulator only: the simulator model, e.g. Ascend950")
    add_json_flag(collect)
    parse = sub.add_parser("parse", help="print the per-pipe model of one Chrome trace file")
    parse.add_argument("--trace", required=True, help="a timeline export or trace.json")
    parse.add_argument("--op-name", required=True, help="the target kernel's exact name (its window)")
    add_json_flag(parse)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "parse":
        text = Path(args.trace).read_text(encoding="utf-8")
        window, events, names = timeline.events_from_chrome(text, args.trace, args.op_name)
        model = timeline.summarise(window, events, lane_names=names)
        print(fsio.dumps(model), end="") if args.json else print(
            "\n".join(f"{f}: busy {v['busy']} over {v['lanes']} lanes" for f, v in model["pipes"].items()))
        return 0
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    rows = timeline_collect.collect_round(args.op_dir, args.round, source=args.source, kernel_name=args.kernel_name,
                                          soc_version=args.soc_version, progress=say)
    if args.json:
        print(fsio.dumps({"cases": rows}), end="")
    failed = [r for r in rows if r["status"] != "complete"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
