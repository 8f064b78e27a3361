"""The ledger cannot lie: an item's recorded decision is the frozen acceptance rule's recomputation.

An experiment item records its formal evidence as ``evidence.formal = [CANDIDATE, BEST]``: the
candidate's formal round (paired with the current best) first, then the current best's round
(docs/ledger.md). :func:`decision` recomputes the formal compare of exactly those two rounds from
the raw files (``compare.load_formal``) and returns the frozen rule's item decision
(``acceptance.accept``, rule ``protocol.acceptance.rule`` of PERFORMANCE_CASES.json). ``ledger.py
update --status accepted`` refuses a closure the rule did not decide; stage5_check P7 recomputes
every experiment item's decision the same way (:func:`decision_problems`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import compare, versions
from .ledger import find_item
from ..errors import ContractError, PerftuneError

# reason codes that a formal compare decides (the others are decided by a quick screen or a test)
FORMAL_REASONS = ("slower", "no_stable_gain")


def decision(op_dir: str | Path, formal_ids: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The frozen rule's decision of the formal compare ``formal_ids[1]`` (best) → ``formal_ids[0]`` (candidate)."""
    if len(formal_ids) < 2:
        raise ContractError("ledger.json", "evidence.formal", f"{list(formal_ids)} names no compare",
                            "pass --formal CANDIDATE_ROUND BEST_ROUND (the candidate's paired round, then the "
                            "current best's round)")
    perf = compare.load_formal(op_dir, formal_ids[1], formal_ids[0], newest=False)
    return perf["item_acceptance"]


def accepted_problem(op_dir: str | Path, item: dict[str, Any]) -> str | None:
    """Why ``item`` may not be ``accepted`` (None when its formal compare decided accept)."""
    got = decision(op_dir, item["evidence"]["formal"])
    if got["status"] == "accepted":
        return None
    return (f"the formal compare {item['evidence']['formal'][:2]} decided {got['status']}/{got['reason_code']} "
            f"under the frozen rule {got['rule']} ({got['note']})")


def require_decided(op_dir: str | Path, item_id: str, led: dict[str, Any]) -> dict[str, Any]:
    """``led`` when ``item_id`` is not ``accepted`` or its formal compare decided accept (else refused); a
    closing experiment's tried code is archived and cited (:func:`perftune.decide.versions.archive_tried`)."""
    item = find_item(led, item_id)
    ev = item["evidence"]
    if item["status"] in ("accepted", "rejected") and ev.get("correctness"):
        ev["code_ref"] = versions.archive_tried(op_dir, item_id, ev["correctness"]) or ev.get("code_ref")
    if item["status"] == "accepted" and (problem := accepted_problem(op_dir, item)):
        raise ContractError("ledger.json", f"{item_id}.status", f"accepted refused: {problem}",
                            "close it with the decided status and reason code (docs/statistics.md, "
                            "\"Frozen decision rules\")")
    return led


def decision_problems(op_dir: str | Path, ledger: dict[str, Any]) -> list[str]:
    """P7: every experiment item's recorded status/reason is its formal compare's recomputed decision."""
    out = []
    for item in ledger.get("items", []):
        ev, status, reason = item.get("evidence") or {}, item.get("status"), item.get("reason_code")
        if not (status == "accepted" or (status == "rejected" and reason in FORMAL_REASONS)):
            continue
        formal = list(ev.get("formal") or [])
        if status == "rejected" and len(formal) < 2:
            continue  # a rejection without a compare is judged by its other evidence (ledger_check)
        try:
            got = decision(op_dir, formal)
        except PerftuneError as exc:
            out.append(f"{item['item_id']}: its {status} decision cannot be recomputed: {exc.line()}")
            continue
        if (got["status"], got["reason_code"] if got["status"] == "rejected" else None) != (
                status, reason if status == "rejected" else None):
            out.append(f"{item['item_id']}: recorded {status}/{reason} but its formal compare {formal[:2]} "
                       f"recomputes to {got['status']}/{got['reason_code']} under the frozen rule {got['rule']}")
    return out
