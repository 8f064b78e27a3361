#!/usr/bin/env python3
"""Run every test of test_<op>.py (P0 cases and all others) and record the run with its code hash.

No manifest is needed (this is the first Stage 5 step). Each test_* function runs in its own subprocess from the op dir (no pytest), with
TILE_FWK_DEVICE_ID set and ASCEND_RT_VISIBLE_DEVICES removed. The record
docs/perf/correctness/<run_id>.json keeps executable_sha256 (the same code identity as evidence
rounds), and per test its case id (the function name for a test outside the manifest), p0
(true/false; null before the freeze), passed, matched_ratio, max_abs_error (null when not printed) and the output
tail. Cite the run id in the ledger (--correctness) and in select_best.py record.
With a frozen manifest the P0 probes also run stage5_check's P9 rules on this code now (early: the
applied gate, the fresh-seed probes, calls into the frozen oracle, tail inputs, support shapes, observed
KB obligations; verify/early.py): a finding fails the run and names its check id.

usage:
  check_correctness.py --op-dir DIR [--test-file test_<op>.py] [--timeout S] [--json]

example:
  python3 scripts/check_correctness.py --op-dir custom/softmax --json

exit codes: 0 every test passed, 1 a test (P0 or not), a P0 case's probe or an early P9 check failed, 2 usage/contract
error (no test file).
"""

from __future__ import annotations

import sys

from perftune.measure import correctness, evidence
from perftune.verify import early
from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "check_correctness.py")
    add_op_dir(parser)
    parser.add_argument("--test-file", help="test file inside --op-dir (default test_<op>.py)")
    parser.add_argument("--timeout", type=float, default=correctness.DEFAULT_TIMEOUT_S, help="seconds per case")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    path, record = correctness.run_all(args.op_dir, at=evidence.utc_now(), test_file=args.test_file,
                                       timeout_s=args.timeout, judge=early.judge)
    if args.json:
        print(fsio.dumps({"record": fsio.display_path(path, args.op_dir), **record}), end="")
    else:
        for case in record["cases"]:
            kind = {True: "P0", False: "non-P0", None: "-"}[case.get("p0")]
            print(f"{case['id']:<24} {kind:<6} {'PASS' if case['passed'] else 'FAIL'}  matched_ratio={case['matched_ratio']}"
                  f"  max_abs_error={case['max_abs_error']}")
            if (why := correctness.probe_failure(case)):
                print(f"{case['id']:<24} probe FAILED: {why}")
        for found in (record.get("early") or {}).get("findings", []):
            print(f"{found['check']:<24} {found['category']}: {found['message']}")
        print(f"{path}: run {record['run_id']}, {'all passed' if record['all_passed'] else 'FAILED'}")
    return 0 if record["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
