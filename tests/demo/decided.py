"""What a delivered operator folder's compares decided is what it delivers (#27 Acceptance, Found 1).

:func:`problems` reads one delivery (the demo's, linear's, GELU's, the pypto-sim example's) and names every
place where the ledger, the candidates, the selection or the report disagree with the frozen rule's own
decision: an ``accepted`` item whose formal compare (recomputed) did not accept, a formal rejection whose
compare decided otherwise, a ``quick_not_promoted`` item whose quick compare promoted, a candidate whose
items are not all accepted, a chosen version the selection gate marks, a report row with another status.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from perftune.decide import item_decision


def _json(path: Path):
    return json.loads(path.read_text())


def problems(op: Path) -> list[str]:
    led = _json(op / "docs/perf/ledger.json")
    out = list(item_decision.decision_problems(op, led))      # accepted + formal rejections, recomputed
    quick = {}
    for folder in sorted((op / "docs/perf/quick").glob("quick_*")):
        qc = folder / "quick_compare.json"
        if qc.is_file():
            data = _json(qc)
            quick[data["quick_collection_id"]] = data["promotion"]["promote"]
    status = {i["item_id"]: i for i in led["items"]}
    for item in led["items"]:
        ev = item["evidence"]
        if item["reason_code"] == "quick_not_promoted" and quick.get((ev.get("quick") or [None])[-1]) is not False:
            out.append(f"{item['item_id']}: quick_not_promoted but its screen {ev.get('quick')} promoted")
        if item["status"] == "accepted" and len(ev.get("formal") or []) < 2:
            out.append(f"{item['item_id']}: accepted without a formal compare")
    candidates = _json(op / "docs/perf/candidates.json")["candidates"]
    for cand in candidates[1:]:
        bad = [i for i in cand.get("items") or [] if status[i]["status"] != "accepted"]
        if bad or not cand.get("items"):
            out.append(f"candidate {cand['version_id']}: items {cand.get('items')} are not all accepted ({bad})")
    selection = _json(op / "docs/perf/selection.json")
    chosen = next(c for c in selection["candidates"] if c["version_id"] == selection["chosen"])
    if not chosen.get("eligible"):
        out.append(f"chosen {selection['chosen']} fails the selection gate: {chosen}")
    report = (op / "PERFORMANCE_REPORT.md").read_text()
    for item in led["items"]:
        row = re.search(rf"^\| {re.escape(item['item_id'])} \| [a-z_]+ \| ([a-z_]+) \|", report, re.M)
        if row is None or row.group(1) != item["status"]:
            out.append(f"report row of {item['item_id']}: {row and row.group(1)} != ledger {item['status']}")
    return out
