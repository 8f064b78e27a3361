#!/usr/bin/env python3
"""Validate the artefacts Stages 1-4 hand on (the machine part of stage1-check .. stage4-check).

Checks presence, format (schemas/ and docs/stage-artefacts.md) and cross-references of every
artefact of stages 1..N: SPEC sections and P0 table, EXPLORE_REPORT, PRO_MATERIAL_INDEX (lists
every selected KB class), MEMORY, KB_SELECTION (references exist, case scopes are P0 ids); the
goldens' functions, `_validate()` and `golden_cases` building every P0 case (run once in a child
process); DESIGN §0-§10, DESIGN_BINDINGS (bind every selected obligation), module_interfaces.yaml;
test_<op>.py (one test per P0 case, wrapper signature = module_interfaces by ast), KB_USAGE (every
obligation, code references resolve) and, for Stage 4, the Stage 4 static gates. Writes
docs/stages/stage<N>_check.json (verdict, failures with categories, the hash of every input) and
prints one line per problem.

usage:
  validate_stage.py {1,2,3,4} --op-dir DIR [--op NAME] [--timeout SECONDS] [--json]

example:
  python3 scripts/validate_stage.py 1 --op-dir custom/softmax

exit codes: 0 PASSED, 1 FAILED (a problem is listed), 2 usage error (no such directory),
3 only the environment blocks (the golden needs a module that is not installed).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.contract import schemas
from perftune.errors import run_cli
from perftune.verify import stage_check


def build_parser():
    parser = parser_from_doc(__doc__, "validate_stage.py")
    parser.add_argument("stage", type=int, choices=(1, 2, 3, 4), help="the stage whose hand-off is checked")
    add_op_dir(parser)
    parser.add_argument("--op", help="operator name (default: the directory name)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="limit for running the golden once (default %(default)s)")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    verdict = stage_check.run(args.op_dir, args.stage, args.op, timeout_s=args.timeout)
    out = stage_check.check_path(args.op_dir, args.stage)
    schemas.validate(verdict, "stage_check", out)
    fsio.write_json(out, verdict)
    shown = fsio.display_path(out, args.op_dir)
    print(fsio.dumps(verdict) if args.json else stage_check.render_text(verdict, shown), end="")
    return stage_check.exit_code(verdict)


if __name__ == "__main__":
    sys.exit(run_cli(main))
