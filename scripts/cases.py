#!/usr/bin/env python3
"""Route a bottleneck to its next step: the cards, methods and templates of its bound families, and at
most three measured cases of the same operator type.

Reads the INDEX tables shipped with the perf-tune skill. --bound takes a bound family (compute,
data_movement, scalar, wait, any), a routing label (data_movement_candidate) or a diagnosis label of
profiler_inspect.py / terminal_evidence.py (mte2_bound, launch_bound, occupancy_bound, ...; its
families: docs/knowledge-base.md). `sources` lists every active, optimization-eligible card, method
and template of those families (never empty for a known label); `cases` the active cases of the
operator type, best evidence grade first (reference only, not a ledger source). A case's numbers
describe another operator on another platform: never a target for ours.

usage:
  cases.py --op-type TYPE --bound LABEL [--limit N] [--references DIR] [--json]
example:
  python3 scripts/cases.py --op-type matmul --bound data_movement_candidate --json
exit codes: 0 routed (possibly no case), 2 usage/contract error (unknown bound, missing INDEX).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import ContractError, run_cli
from perftune.knowledge import cases

REFERENCES = Path(__file__).resolve().parents[1] / "skills" / "pypto-pro-op-perf-tune" / "references"


def build_parser():
    parser = parser_from_doc(__doc__, "cases.py")
    parser.add_argument("--op-type", required=True, help="operator type, e.g. matmul, attention")
    parser.add_argument("--bound", required=True, help="bound family, routing or diagnosis label, e.g. mte2_bound")
    parser.add_argument("--limit", type=int, default=cases.MAX_CASES, help="at most this many (max 3)")
    parser.add_argument("--references", default=str(REFERENCES), help="the skill's references folder")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.limit < 1:
        raise ContractError("cases.py", "--limit", "must be >= 1", "pass 1, 2 or 3")
    index = Path(args.references) / "case-library" / "INDEX.md"
    if not index.is_file():
        raise ContractError(index, "-", "case INDEX is missing", "pass the skill's references folder")
    rows = cases.parse_cases(index.read_text(encoding="utf-8"), str(index))
    found = cases.route(rows, args.op_type, args.bound, args.limit)
    family, wanted = cases.bound_family(args.bound), cases.families(args.bound)
    references = Path(args.references)
    texts = {kind: (references / folder / "INDEX.md").read_text(encoding="utf-8")
             for kind, folder in cases.SOURCE_KINDS if (references / folder / "INDEX.md").is_file()}
    items = cases.sources(cases.parse_sources(texts), args.bound)
    known = sorted({c.op_type for c in rows})
    if args.json:
        print(fsio.dumps({"op_type": args.op_type, "bound": family, "families": list(wanted), "known_op_types": known,
                          "sources": [{**asdict(r), "path": (references / r.file).as_posix()} for r in items],
                          "cases": [{**asdict(c), "path": (index.parent / c.file).as_posix()} for c in found]}), end="")
        return 0
    for r in items:
        print(f"{r.item_id}  [{r.kind}, {r.bound_hint}]  {r.title}\n   {references / r.file}")
    for c in found:
        print(f"{c.case_id}  [{c.evidence_grade}]  {c.title}\n   {index.parent / c.file}")
    if not found:
        print(f"no case of op_type {args.op_type!r} with bound {'/'.join(wanted)!r} (op types: {', '.join(known)})")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
