#!/usr/bin/env python3
"""Run the machine-checkable Stage 4 gates on test_<op>.py of an operator directory.

The gates read test_<op>.py, <op>_golden.py and <op>_golden_cpu.py with ast (pypto_pro is never
imported here): Pro-only imports, one @pl.jit kernel, <op>_wrapper and its signature, one kernel
launch outside any loop, tests calling the wrapper, >= 4 tests, _assert_precision, the golden_cpu
import, the device from _get_device(), golden purity. Delivery import safety copies the three files
into an empty temp dir and imports the test module in a subprocess; a missing pypto_pro, torch_npu
or torch there is an environment problem (gate `blocked`, env_error), not a FAIL.
Gate ids, upstream numbers and lint rules: docs/stage4-gates.md.

usage:
  stage4_gates.py --op-dir DIR [--op NAME] [--import-timeout SECONDS] [--json]

example:
  python3 scripts/stage4_gates.py --op-dir custom/softmax --json

exit codes: 0 every gate PASS or not_applicable, 1 a gate FAILed, 2 usage/contract error (op dir or
test file missing), 3 no gate failed but a gate is blocked by the environment (env_error).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli
from perftune.verify import stage4


def build_parser():
    parser = parser_from_doc(__doc__, "stage4_gates.py")
    add_op_dir(parser)
    parser.add_argument("--op", help="operator name (default: the directory name); files test_<op>.py ...")
    parser.add_argument("--import-timeout", type=float, default=stage4.DEFAULT_IMPORT_TIMEOUT_S,
                        metavar="SECONDS", help="limit for the delivery import probe (default %(default)s)")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    result = stage4.run_gates(args.op_dir, args.op, import_timeout_s=args.import_timeout)
    if args.json:
        print(fsio.dumps({**result.as_dict(), "exit_code": result.exit_code}), end="")
    else:
        print(stage4.render_text(result), end="")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(run_cli(main))
