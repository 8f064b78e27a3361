#!/usr/bin/env python3
"""Create a new operator folder with every Stage 1-4 artefact in its format, placeholders marked.

Writes <DIR>/<NAME>/: SPEC.md, EXPLORE_REPORT.md, PRO_MATERIAL_INDEX.md, MEMORY.md,
KB_SELECTION.json (Stage 1), <NAME>_golden.py, <NAME>_golden_cpu.py (Stage 2), DESIGN.md,
DESIGN_BINDINGS.json, module_interfaces.yaml (Stage 3), test_<NAME>.py, KB_USAGE.json (Stage 4).
Every placeholder is `<FILL: what to write>`; validate_stage.py refuses a file while one is left.
Formats: docs/stage-artefacts.md. An existing folder is never overwritten.

usage:
  new_operator.py --op NAME --dir DIR [--json]

example:
  python3 scripts/new_operator.py --op rmsnorm --dir custom

exit codes: 0 created, 2 usage error (name not an identifier, folder exists).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.artefacts import scaffold
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "new_operator.py")
    parser.add_argument("--op", required=True, help="operator name (a Python identifier)")
    parser.add_argument("--dir", required=True, help="parent folder (e.g. custom); <DIR>/<NAME> is created")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    root, written = scaffold.create(args.dir, args.op)
    if args.json:
        print(fsio.dumps({"op_dir": str(root), "files": written}), end="")
    else:
        print(f"created {root} with {len(written)} files: {', '.join(written)}")
        print(f"next: fill every <FILL: ...>, then python3 scripts/validate_stage.py 1 --op-dir {root}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
