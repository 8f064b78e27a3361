"""The ledger cannot lie: an item's recorded decision is the frozen acceptance rule's recomputation.

An experiment item records its formal evidence as ``evidence.formal = [CANDIDATE, BEST]``: the
candidate's formal round (paired with the current best) first, then the current best's round
(docs/ledger.md). :func:`decision` recomputes the formal compare of exactly those two rounds from
the raw files (``compare.load_formal``) and returns the frozen rule's item decision
(``acceptance.accept``, rule ``protocol.acceptance.rule`` of PERFORMANCE_CASES.json). ``ledger.py
update --status accepted`` refuses a closure the rule did not decide; stage5_check P7 recomputes
every experiment item's decision the same way (:func:`decision_problems`).

A judged code keeps its judgement (``P7.judged_code``): the code a formal compare rejected (the
executable_sha256 of its candidate round, ``slower``/``no_stable_gain``) may not be accepted later
under any item id, its own included (a retry of the same code relabelled until noise lets one
through). Only the later acceptance is refused: a rejection after an acceptance is conservative.
``ledger.py update --status accepted`` refuses it; P7 recomputes it (:func:`judged_problems`). A
code that differs by one byte is other code (docs/stage5-check.md, "cannot catch").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import compare, versions
from .ledger import find_item
from .. import fsio
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
    if item["status"] == "accepted" and (judged := [p for p in judged_problems(op_dir, led) if p[0] == item_id]):
        raise ContractError("ledger.json", f"{item_id}.status", f"accepted refused (P7.judged_code): {judged[0][1]}",
                            "close it rejected: a judged code keeps its judgement under any item id; change the "
                            "code to try another mechanism")
    return led


def _code_of(op_dir: Path, ref: str, cache: dict[str, str | None]) -> str | None:
    """``executable_sha256`` of the round ``ref`` (a round name or collection id; None: not found)."""
    if ref not in cache:
        from ..measure import evidence   # I/O, at the edge
        try:
            path = evidence.find_round(op_dir, ref)
            cache[ref] = fsio.read_json(path / evidence.COLLECTION_JSON, what="collection.json").get("executable_sha256")
        except (PerftuneError, AttributeError):
            cache[ref] = None
    return cache[ref]


def _closed_at(item: dict[str, Any], status: str) -> int | None:
    """The revision of ``item``'s first transition to ``status`` (None: never)."""
    return next((h.get("revision") for h in item.get("history", []) if h.get("to") == status), None)


def judged_problems(op_dir: str | Path, ledger: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(item, message, expected, actual)`` per accepted item whose candidate code a formal compare had
    rejected before (any item, reopened ones too: the history keeps the rejection)."""
    root, cache = Path(op_dir), {}
    rejected = []   # (revision, item id, code, round)
    for item in ledger.get("items", []):
        formal, at = list((item.get("evidence") or {}).get("formal") or []), _closed_at(item, "rejected")
        reason = item.get("reason_code") if item.get("status") == "rejected" else "reopened"
        if at is None or len(formal) < 2 or reason not in FORMAL_REASONS + ("reopened",):
            continue
        rejected.append((at, item["item_id"], _code_of(root, formal[0], cache), formal[0]))
    out = []
    for item in (i for i in ledger.get("items", []) if i.get("status") == "accepted"):
        formal, at = list((item.get("evidence") or {}).get("formal") or []), _closed_at(item, "accepted")
        code = _code_of(root, formal[0], cache) if formal else None
        earlier = [r for r in rejected if code and r[2] == code and at is not None and r[0] < at]
        if earlier:
            rev, other, _code, rnd = earlier[0]
            out.append((item["item_id"], f"{item['item_id']}: accepted code sha256 {code[:12]} that {other} had "
                        f"rejected at revision {rev} (its formal round {rnd}); {len(earlier)} earlier rejection(s) of "
                        "this code", f"code {code[:12]} stays rejected",
                        f"accepted at revision {at} as {item['item_id']}"))
    return out


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
