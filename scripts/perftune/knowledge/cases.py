"""Case-library routing: at most three measured cases of the same operator type and bound.

The case library (``references/case-library/INDEX.md``) is reference material, not a ledger source.
The bottleneck-analysis step asks for cases like the one at hand: :func:`route` keeps the active
rows whose ``op_type`` equals the operator type and whose ``bound`` equals the bound family, orders
them by evidence grade (``measured_public_doc`` first, then ``measured_third_party``,
``described``, ``inferred``) and then id, and returns at most :data:`MAX_CASES`. A bound label of
the routing vocabulary (``data_movement_candidate``) or of terminal evidence
(``data_movement_bound``) is reduced to its family (``data_movement``). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ContractError
from .integrity import CASE_BOUNDS, EVIDENCE_GRADES, table_rows

MAX_CASES = 3
_SUFFIXES = ("_candidate", "_bound")


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    title: str
    op_type: str
    bound: str
    evidence_grade: str
    file: str


def bound_family(label: str) -> str:
    """``data_movement_candidate`` / ``data_movement_bound`` / ``data_movement`` -> ``data_movement``."""
    text = label.strip().lower()
    for suffix in _SUFFIXES:
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    if text not in CASE_BOUNDS:
        raise ContractError("--bound", "bound", f"{label!r} is not a bound family",
                            f"use one of {list(CASE_BOUNDS)} (a _candidate/_bound suffix is accepted)")
    return text


def parse_cases(text: str, source: str = "case-library/INDEX.md") -> list[CaseRow]:
    """Active rows of the case INDEX table."""
    rows = table_rows(text)
    if not rows:
        raise ContractError(source, "table", "no markdown table", "see docs/knowledge-base.md for the format")
    out = []
    for n, cells in enumerate(rows, 1):
        if cells.get("lifecycle", "active") != "active":
            continue
        missing = [k for k in ("id", "op_type", "bound", "evidence_grade", "file") if not cells.get(k)]
        if missing:
            raise ContractError(source, f"table row {n}", f"missing {missing}", "fill every cell")
        out.append(CaseRow(cells["id"], cells.get("title", ""), cells["op_type"], cells["bound"],
                           cells["evidence_grade"], cells["file"]))
    return out


def route(cases: list[CaseRow], op_type: str, bound: str, limit: int = MAX_CASES) -> list[CaseRow]:
    """At most ``min(limit, 3)`` cases with the same operator type and bound family, best grade first."""
    family = bound_family(bound)
    want = op_type.strip().lower()
    same = [c for c in cases if c.op_type.lower() == want and c.bound == family]
    rank = {g: i for i, g in enumerate(EVIDENCE_GRADES)}
    same.sort(key=lambda c: (rank.get(c.evidence_grade, len(rank)), c.case_id))
    return same[: max(0, min(limit, MAX_CASES))]
