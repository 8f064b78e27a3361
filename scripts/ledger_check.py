#!/usr/bin/env python3
"""Check that the Stage 5 ledger docs/perf/ledger.json is closed, and print every problem.

Checks: schema; coverage equals the sources enumerated now from the folder `ledger.py init` recorded
(`sources_origin`: inside the op dir or the plugin, never absolute; same ids and source hashes); zero
non-terminal items; closing evidence and reason codes; relation targets exist; no `conflict`
between two accepted items; cited formal collection ids are complete formal rounds on disk,
quick and correctness ids exist; derived items were created only after the presets closed; the
final candidate sweep is recorded and not stale.

usage:
  ledger_check.py --op-dir DIR [--json]

example:
  python3 scripts/ledger_check.py --op-dir custom/softmax --json

exit codes: 0 closed, 1 not closed (problems listed), 2 malformed ledger or sources.
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.decide import ledger, ledger_sources
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "ledger_check.py")
    add_op_dir(parser)
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    path = ledger.ledger_path(args.op_dir)
    obj = ledger.load_ledger(path)
    enum = ledger_sources.recorded_sources(args.op_dir, obj)
    problems = ledger.check(obj, enum, args.op_dir)
    if args.json:
        print(fsio.dumps({"closed": not problems, "ledger": fsio.file_record(path, args.op_dir),
                          "counts": {k: v["count"] for k, v in enum.summary().items()},
                          "n_items": len(obj["items"]), "problems": [p.as_dict() for p in problems]}), end="")
    else:
        for problem in problems:
            print(f"{problem.code}: {problem.item_id}: {problem.message}")
        print(f"{path}: {'closed' if not problems else f'NOT closed ({len(problems)} problems)'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
