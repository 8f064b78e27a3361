"""The rounds' hash chain: each formal round's collection seals the previous round (issue 28 item 5).

When a round completes, its ``collection.json`` gets ``previous_seal`` beside its ``evidence_seal``:
the round folder just below its number (``round`` name, ``collection_id``, ``status`` when this round
completed) and that round's own seal (``sha256``: its ``evidence_seal`` sha256 when it was complete,
else null) and ``link_sha256`` = sha256 of ``"<previous link_sha256>\\0<previous seal sha256>"``
(the previous round's own ``previous_seal.link_sha256``, "" for round 1), so a link commits to the
whole history below it. ``round_001`` carries ``{"round": null}``.

:func:`problems` (stage5-check P3, ``P3.history_chain``) reads every round folder:

- numbers are reserved at max + 1 and never reused (``measure/evidence.py``), so a missing number
  below the newest round is a deleted round;
- a link must name the folder below it, whose seal (when the link recorded one) is still the same:
  a round replaced by another collection breaks it;
- once a round carries a link, every later round must (a link stripped from ``collection.json``);
  rounds collected before the chain existed carry none and read as ``unchained`` (the verdict says
  so), their history is not checked.

What it cannot see: the newest rounds deleted (nothing later points at them), or every later
``collection.json`` rewritten by hand with recomputed links; P10's re-measurement bounds what such a
pick of the best round can claim.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import PerftuneError

COLLECTION_JSON = "collection.json"
_NUMBER = re.compile(rf"^{protocol.ROUND_PREFIX}(\d+)$")


def _rounds(perf: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in (perf.iterdir() if perf.is_dir() else [])
            if (m := _NUMBER.match(p.name)) and p.is_dir() and not p.is_symlink()}


def _header(round_dir: Path) -> dict[str, Any]:
    try:
        obj = fsio.read_json(round_dir / COLLECTION_JSON, what="collection.json")
    except PerftuneError:
        return {}
    return obj if isinstance(obj, dict) else {}


def link_sha(previous: dict[str, Any]) -> str:
    """The chain value a link to the round with header ``previous`` commits to."""
    below = (previous.get("previous_seal") or {}).get("link_sha256") or ""
    seal = (previous.get("evidence_seal") or {}).get("sha256") or ""
    return hashlib.sha256(f"{below}\0{seal}".encode("utf-8")).hexdigest()


def link(round_dir: Path) -> dict[str, Any]:
    """``previous_seal`` of the round in ``round_dir``, written when it completes."""
    match = _NUMBER.match(round_dir.name)
    number = int(match.group(1)) if match else 0
    below = [n for n in _rounds(round_dir.parent) if n < number]
    if not below:
        return {"round": None}
    prev_dir = _rounds(round_dir.parent)[max(below)]
    prev = _header(prev_dir)
    complete = prev.get("status") == "complete"
    return {"round": prev_dir.name, "collection_id": prev.get("collection_id"), "status": prev.get("status"),
            "sha256": (prev.get("evidence_seal") or {}).get("sha256") if complete else None,
            "link_sha256": link_sha(prev)}


def problems(op_dir: Path) -> tuple[list[str], dict[str, Any]]:
    """Gaps and broken links in the round history, and the note (chained / unchained rounds)."""
    rounds = _rounds(Path(op_dir) / protocol.PERF_DIR)
    out: list[str] = []
    if not rounds:
        return out, {"rounds": 0}
    missing = [n for n in range(1, max(rounds) + 1) if n not in rounds]
    if missing:
        names = [f"{protocol.ROUND_PREFIX}{n:0{protocol.ROUND_DIGITS}d}" for n in missing]
        out.append(f"round folder(s) {names} are missing below {rounds[max(rounds)].name}: round numbers are never "
                   "reused, so a round was deleted (history cannot be pruned)")
    headers = {n: _header(p) for n, p in rounds.items()}
    chained, unchained = [], []
    for number in sorted(rounds):
        header, name = headers[number], rounds[number].name
        recorded = header.get("previous_seal")
        if recorded is None:
            if header.get("status") == "complete":
                unchained.append(name)
                if chained:
                    out.append(f"{name} carries no previous_seal but the earlier {chained[-1]} does: its link was "
                               "removed from collection.json")
            continue
        chained.append(name)
        out += _link_problems(name, recorded, rounds, headers)
    return out, {"rounds": len(rounds), "chained": len(chained), "unchained": unchained}


def _link_problems(name: str, recorded: dict[str, Any], rounds: dict[int, Path],
                   headers: dict[int, dict[str, Any]]) -> list[str]:
    number = int(_NUMBER.match(name).group(1))
    below = [n for n in rounds if n < number]
    if recorded.get("round") is None:
        return [f"{name} says it is the first round, but {rounds[max(below)].name} exists below it"] if below else []
    prev_number = _NUMBER.match(str(recorded["round"]))
    prev = headers.get(int(prev_number.group(1))) if prev_number else None
    if prev is None:
        return [f"{name} seals the previous round {recorded['round']}, which no longer exists (a pruned history)"]
    if prev.get("collection_id") != recorded.get("collection_id"):
        return [f"{name} sealed {recorded['round']} as {recorded.get('collection_id')}, the folder now holds "
                f"{prev.get('collection_id')}: the round was replaced"]
    if recorded.get("sha256") and (prev.get("evidence_seal") or {}).get("sha256") != recorded["sha256"]:
        return [f"{name} sealed {recorded['round']} with evidence seal {recorded['sha256'][:12]}, it is now "
                f"{str((prev.get('evidence_seal') or {}).get('sha256'))[:12]}: the round was replaced or re-sealed"]
    if recorded.get("sha256") and recorded.get("link_sha256") != link_sha(prev):
        return [f"{name}'s link to {recorded['round']} does not commit to the history below it (the chain was "
                "rewritten)"]
    return []


def last_round_problems(op_dir: Path, final: dict[str, Any], final_dir: Path) -> list[str]:
    """The final round is the last complete formal round of the delivered code (no better one kept)."""
    number = _NUMBER.match(final_dir.name)
    if not number:
        return []
    later = [p.name for n, p in sorted(_rounds(final_dir.parent).items()) if n > int(number.group(1))
             and (h := _header(p)).get("status") == "complete" and h.get("mode") == "compare"
             and h.get("executable_sha256") == final.get("executable_sha256")]
    return [f"the final round {final_dir.name} is not the last formal round of the delivered code: {later} measured "
            "it later (deliver the last round, never the best of several)"] if later else []
