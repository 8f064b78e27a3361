#!/usr/bin/env python3
"""The end-to-end Stage 5 demo on the bundled softmax operator (cpu backend), with the real scripts.

Copies examples/softmax (without variants/) into a new work folder run_NNN and runs, as
subprocesses exactly as a user would: freeze_cases → collect_golden_reference → platform probe →
check_correctness → collect_perf preflight/formal (baseline) → select_best record → ledger init and
planned closures → per variant (examples/softmax/variants/variants.json): apply, correctness, quick,
promotion by the frozen rule, formal + compare + record, close the ledger item → ledger sweep →
ledger_check → select_best choose → apply the chosen version → final paired formal round →
compare_perf → select_best confirm → terminal_evidence build → perf_report → stage5_check.
Prints one progress line per step (on a terminal, measuring steps also draw a per-case progress
bar) and a summary (per-case baseline/final time, speed-up with CI
and verdict, chosen version and why, verifier verdict, report path). Step logs: run_NNN/demo_logs/.

usage:
  demo.py [--workdir DIR] [--keep] [--json]

example:
  python3 scripts/demo.py --workdir /tmp/stage5_demo --keep

exit codes: stage5_check's (0 PASSED, 1 FAILED); 2 when a step's script is missing or a step
fails on a contract error (the message names the step and its log); 3 environment error.
"""

from __future__ import annotations

import sys

from perftune.demo import driver, plan
from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "demo.py")
    parser.add_argument("--workdir", help="folder for the runs (default: demo_work/ in the plugin root)")
    parser.add_argument("--keep", action="store_true", help="keep earlier demo runs in the work folder")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    stream = sys.stderr if args.json else sys.stdout
    say = lambda line: print(line, file=stream, flush=True)  # noqa: E731
    code, result = driver.run_demo(args.workdir, keep=args.keep, progress=say,
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
