#!/usr/bin/env python3
"""stage5-check: verify a Stage 5 deliverable from raw evidence (Stage 4 static gates + IN + P1-P10).

Runs the machine-checkable Stage 4 gates on test_<op>.py, then P1 files, P2 contract, P3
evidence, P4 numbers (recomputed from raw samples), P5 correctness, P6 target, P7 ledger and
best-version closure, P8 terminal evidence, P9 measured inputs and precision gate = the frozen ones,
P10 the verifier's own paired re-measurement (default on for cpu; archived in
docs/perf/stage5_remeasure/; its time budget is the frozen protocol.remeasure_budget_s, no flag).
Every failure is reported with its evidence; one primary failure_category is chosen by the
documented priority. Writes docs/perf/stage5_check.json
and prints the verifier's text verdict. It never trusts numbers written by an agent.

usage:
  stage5_check.py --op-dir DIR --target-case-ids ID [ID ...] --selection-mode MODE
                  [--remeasure | --no-remeasure] [--json]

example:
  python3 scripts/stage5_check.py --op-dir custom/softmax --target-case-ids r64_c4096_fp32 \
      --selection-mode user_selected

exit codes: 0 PASSED, 1 FAILED, 2 usage error or frozen contract blocked, 3 environment only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perftune import fsio
from perftune.contract import protocol, schemas
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli
from perftune.verify import stage5


def build_parser():
    parser = parser_from_doc(__doc__, "stage5_check.py")
    add_op_dir(parser)
    parser.add_argument("--target-case-ids", nargs="+", required=True, help="dispatch target case ids")
    parser.add_argument("--selection-mode", required=True, choices=protocol.SELECTION_MODES)
    parser.add_argument("--no-rerun", action="store_true",
                        help="do not re-run the tests when no recorded run matches the delivered code")
    parser.add_argument("--remeasure", action=argparse.BooleanOptionalAction, default=None,
                        help="re-measure final vs baseline code (default: on for cpu, off for msprof)")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    result = stage5.check(args.op_dir, args.target_case_ids, args.selection_mode, rerun_tests=not args.no_rerun,
                          remeasure=args.remeasure)
    out = Path(args.op_dir) / protocol.PERF_DIR / protocol.STAGE5_CHECK_NAME
    verdict = result.as_dict()
    schemas.validate(verdict, "stage5_check", out)
    fsio.write_json(out, verdict)
    shown = fsio.display_path(out, args.op_dir)
    print(fsio.dumps(verdict) if args.json else stage5.render_text(result, shown), end="")
    return stage5.exit_code(result)


if __name__ == "__main__":
    sys.exit(run_cli(main))
