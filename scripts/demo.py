#!/usr/bin/env python3
"""The end-to-end Stage 5 run on one operator folder (cpu backend), by SKILL.md's own commands.

Copies the operator folder (without variants/) into a new work folder run_NNN and runs, as
subprocesses exactly as an agent would, the step blocks of skills/pypto-pro-op-perf-tune/SKILL.md
in their order: complete correctness → freeze → golden → platform probe → preflight → baseline
(v000) → ledger init/show → planned closures → record v000 → per planned experiment (hypothesis or
bottleneck profile + derived item, apply the version, correctness, quick + promotion, paired formal
+ compare, acceptance, record, close) → sweep → ledger check → choose → chosen code in place →
static gates → correctness → final paired round → compare → confirm → terminal evidence → report →
stage5_check. The folder's variants/variants.json is the plan (docs/operator-format.md). Without
--op-dir it runs the bundled example --example (default softmax). One progress line per step, a
summary at the end; step logs and summary.json in run_NNN/demo_logs/.

usage:
  demo.py [--op-dir DIR | --example NAME] [--workdir DIR] [--keep] [--json]

example:
  python3 scripts/demo.py --example linear --workdir /tmp/stage5_demo --keep

exit codes: stage5_check's (0 PASSED, 1 FAILED); 2 when the operator folder is incomplete, a step's
script is missing or a step fails on a contract error (one line naming the file or step and its
log); 3 environment error.
"""

from __future__ import annotations

import sys

from perftune.demo import flow, opfolder, plan
from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "demo.py")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--op-dir", type=path_arg, help="operator folder in the documented format (docs/operator-format.md)")
    which.add_argument("--example", default=opfolder.DEFAULT_EXAMPLE,
                       help=f"bundled example under examples/ (default {opfolder.DEFAULT_EXAMPLE})")
    parser.add_argument("--workdir", type=path_arg, help="folder for the runs (default: demo_work/ in the plugin root)")
    parser.add_argument("--keep", action="store_true", help="keep earlier demo runs in the work folder")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    stream = sys.stderr if args.json else sys.stdout
    say = lambda line: print(line, file=stream, flush=True)  # noqa: E731
    folder = args.op_dir or opfolder.example(args.example)
    code, result = flow.run_demo(args.workdir, op_dir=folder, keep=args.keep, progress=say,
                                 bar_stream=stream if stream.isatty() else None)
    if args.json:
        print(fsio.dumps(result), end="")
    else:
        print("\n".join(plan.summary_lines(result)))
        print(f"outcomes: {result['outcomes']}")
        print(f"finished in {result['seconds']} s; work folder {result['workdir']}")
        print(result["verifier"])  # the last line is the verifier's verdict
    return code


if __name__ == "__main__":
    sys.exit(run_cli(main))
