#!/usr/bin/env python3
"""Render PERFORMANCE_REPORT.md (+ figures under docs/perf/figures/) from all Stage 5 evidence.

Sections: frozen contract and target cases; baseline vs final per case with CIs, verdicts and the
target block; the optimisation ledger; candidates, scores, tie set and the selection reasoning;
terminal evidence per P0 case and residual bottlenecks; figures; paths of all evidence. Numbers
are recomputed from the raw rounds (never copied from agent-written files).

usage:
  perf_report.py --op-dir DIR [--json]

example:
  python3 scripts/perf_report.py --op-dir custom/softmax

exit codes: 0 written, 2 missing or invalid evidence (message names file and field).
"""

from __future__ import annotations

import sys

from perftune.report import final_report
from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "perf_report.py")
    add_op_dir(parser)
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    result = final_report.build(args.op_dir)
    if args.json:
        print(fsio.dumps(result), end="")
    else:
        print(f"wrote {result['report']} ({len(result['figures'])} figures, {result['evidence_paths']} evidence paths)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
