#!/usr/bin/env python3
"""Terminal evidence per P0 case (DESIGN §8 P8): roofline status, pipeline and scalar evidence.

`probe` measures this machine's practical numpy roof once (copy bandwidth on a 64 MiB array,
in-cache float32 multiply-add and exp rates) and writes a platform file (schemas/platform).
`build` reads the frozen manifest (with the operator's necessary-work model, frozen from SPEC.md's
"Necessary work" section: docs/operator-format.md), one complete formal round (samples recomputed from raw files)
and a platform file, measures the kernel's fixed per-call overhead on the current sources (cpu),
and writes docs/perf/terminal_evidence.json with, per case, `roofline_terminal` (work, bytes,
intensity, floors, attained fraction, status and reason), `pipeline_evidence` and
`scalar_evidence`, each with recorded grounds. Rules and thresholds: scripts/perftune/terminal/roofline.py
and docs/demo.md.

usage:
  terminal_evidence.py probe --output FILE [--json]
  terminal_evidence.py build --op-dir DIR --round ROUND [--platform FILE] [--output PATH] [--json]

example:
  python3 scripts/terminal_evidence.py probe --output custom/softmax/docs/perf/platform_cpu.json
  python3 scripts/terminal_evidence.py build --op-dir custom/softmax --round round_007

exit codes: 0 written, 2 usage/contract error (missing round, platform or manifest), 3 environment.
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.terminal import records as terminal_evidence
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc, path_arg
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "terminal_evidence.py")
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe", help="measure the cpu platform peaks and write a platform file")
    probe.add_argument("--output", required=True, type=path_arg, help="platform file to write (e.g. <op>/docs/perf/platform_cpu.json)")
    add_json_flag(probe)
    build = sub.add_parser("build", help="write docs/perf/terminal_evidence.json for a formal round")
    add_op_dir(build, "operator directory")
    build.add_argument("--round", required=True, help="round_NNN, its path, or its collection id (the final round)")
    build.add_argument("--platform", type=path_arg, help="platform file (cpu default: <op-dir>/docs/perf/platform_cpu.json)")
    build.add_argument("--output", help="path inside --op-dir (default docs/perf/terminal_evidence.json)")
    add_json_flag(build)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "probe":
        path, obj = terminal_evidence.probe(args.output)
        summary = {k: v["value"] for k, v in obj["peaks"].items()}
        lines = [f"{k}: {v:.4g}" for k, v in sorted(summary.items())]
    else:
        path, obj = terminal_evidence.build(args.op_dir, args.round, platform_file=args.platform, output=args.output)
        summary = {c["case"]: c["roofline_terminal"]["status"] for c in obj["cases"]}
        lines = [f"{c['case']}: {c['roofline_terminal']['status']} "
                 f"(attained {c['roofline_terminal']['attained_fraction']}, scalar dominant "
                 f"{c['scalar_evidence']['dominant']}, pipeline {c['pipeline_evidence']['status']})"
                 for c in obj["cases"]]
    if args.json:
        print(fsio.dumps({"command": args.command, "output": str(path), "summary": summary, "content": obj}), end="")
    else:
        print("\n".join([f"{path}: written"] + lines))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
