"""Case-library routing and the next step of a bound label: cases, cards, methods and templates.

The case library (``references/case-library/INDEX.md``) is reference material, not a ledger source.
The bottleneck-analysis step asks for cases like the one at hand: :func:`route` keeps the active
rows whose ``op_type`` equals the operator type and whose ``bound`` is one of the label's families,
orders them by family, evidence grade (``measured_public_doc`` first, then ``measured_third_party``,
``described``, ``inferred``) and id, and returns at most :data:`MAX_CASES`. A bound label of the
routing vocabulary (``data_movement_candidate``) or of terminal evidence (``data_movement_bound``) is
reduced to its family (``data_movement``); a diagnosis label (``profiler/diagnosis.py``: ``mte2_bound``,
``launch_bound``, ``occupancy_bound`` ...) and ``no_dominant_pipe`` map to the families of
``protocol.DIAGNOSIS_FAMILIES`` (:func:`families`).

:func:`sources` is the next step that never ends empty: every active, optimization-eligible row of the
knowledge-card, general-method and template INDEX tables whose ``bound_hint`` is one of the label's
families, in family then INDEX order (operator-independent, so every label of every op reaches at
least one; ``tests/knowledge/test_cases.py`` checks every label against the shipped tables). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract import protocol
from ..errors import ContractError
from .integrity import CASE_BOUNDS, EVIDENCE_GRADES, table_rows

SOURCE_KINDS = (("knowledge_card", "knowledge-cards"), ("general_method", "general-methods"), ("template", "templates"))

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


@dataclass(frozen=True)
class SourceRow:
    item_id: str
    title: str
    kind: str
    bound_hint: str
    file: str                 # relative to the references folder
    expected_metric: str


def families(label: str) -> tuple[str, ...]:
    """The knowledge families a bound label routes to, first family first (module docstring)."""
    text = label.strip().lower()
    if text in protocol.DIAGNOSIS_FAMILIES:
        return protocol.DIAGNOSIS_FAMILIES[text]
    return (bound_family(text),)


def bound_family(label: str) -> str:
    """``data_movement_candidate`` / ``data_movement_bound`` / ``data_movement`` -> ``data_movement``; a
    diagnosis label -> its first family (:func:`families`)."""
    text = label.strip().lower()
    if text in protocol.DIAGNOSIS_FAMILIES:
        return protocol.DIAGNOSIS_FAMILIES[text][0]
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
    """At most ``min(limit, 3)`` cases with the same operator type and one of the label's families, first
    family first, best grade first."""
    wanted = families(bound)
    want = op_type.strip().lower()
    same = [c for c in cases if c.op_type.lower() == want and c.bound in wanted]
    rank = {g: i for i, g in enumerate(EVIDENCE_GRADES)}
    same.sort(key=lambda c: (wanted.index(c.bound), rank.get(c.evidence_grade, len(rank)), c.case_id))
    return same[: max(0, min(limit, MAX_CASES))]


def parse_sources(texts: dict[str, str]) -> list[SourceRow]:
    """Active, optimization-eligible rows of the INDEX texts keyed by source kind (``SOURCE_KINDS``)."""
    out = []
    for kind, folder in SOURCE_KINDS:
        for cells in table_rows(texts.get(kind, "")):
            if cells.get("lifecycle") != "active" or cells.get("optimization_eligible", "").lower() != "yes":
                continue
            out.append(SourceRow(cells["id"], cells.get("title", ""), kind, cells.get("bound_hint", ""),
                                 f"{folder}/{cells['file']}", cells.get("expected_metric", "")))
    return out


def sources(rows: list[SourceRow], bound: str) -> list[SourceRow]:
    """Every row whose ``bound_hint`` is one of the label's families, family then INDEX order."""
    wanted = families(bound)
    return [r for family in wanted for r in rows if r.bound_hint == family]
