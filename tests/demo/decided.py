"""What a delivered operator folder's compares decided is what it delivers (#27 Acceptance, Found 1).

:func:`problems` reads one delivery (the demo's, linear's, GELU's, the pypto-sim example's) and names every
place where the ledger, the candidates, the selection or the report disagree with the raw evidence: an
``accepted`` item whose formal round's point estimates cannot pass the acceptance rule, a ``rejected/slower``
item none of whose target cases is slower even by its point estimate, a ``quick_not_promoted`` item whose
quick compare promoted, a candidate whose items are not all accepted, a chosen version the selection gate
marks, a report row with another status.

The formal decisions are recomputed here from the raw samples with numpy (medians, the frozen band), not
with the product's decision code that stage5_check P7 runs (#38 Deliver 6): the rule's CIs contain their
point estimates, so an accepted suite has a point score above 1 and a ``slower`` case a point below
``1/(1+δ)``; these necessary conditions hold whatever the bootstrap draws.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from perftune.measure import evidence


def _json(path: Path):
    return json.loads(path.read_text())


def problems(op: Path) -> list[str]:
    led = _json(op / "docs/perf/ledger.json")
    out = formal_problems(op, led)
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


def _speedups(op: Path, formal: list[str], man: dict) -> dict[str, float]:
    """Per target case: the best's aggregated (frozen aggregation) time over the candidate's (the candidate round's partner arm when
    it is paired with the best, else the best's own round)."""
    cand = evidence.load_round(op, formal[0])
    best = None if cand.paired else evidence.load_round(op, formal[1])
    agg = np.median if man["protocol"]["aggregation"] == "median" else np.mean
    out = {}
    for case in man["optimization_target"]["case_ids"]:
        base = cand.cases[case].baseline_samples_us if best is None else best.cases[case].samples_us
        out[case] = float(agg(base) / agg(cand.cases[case].samples_us))
    return out


def formal_problems(op: Path, led: dict) -> list[str]:
    man = _json(op / "PERFORMANCE_CASES.json")
    band_low = 1 / (1 + man["protocol"]["decision"]["noise_band"])
    out = []
    for item in led["items"]:
        formal = (item.get("evidence") or {}).get("formal") or []
        slower = item["status"] == "rejected" and item["reason_code"] == "slower"
        if len(formal) < 2 or not (item["status"] == "accepted" or slower):
            continue
        speedups = _speedups(op, formal, man)
        score = (float(np.mean(list(speedups.values()))) if man["protocol"].get("aggregate_metric", "mean_case_speedup")
                 == "mean_case_speedup" else float(np.exp(np.mean(np.log(list(speedups.values()))))))
        if item["status"] == "accepted" and score <= 1:
            out.append(f"{item['item_id']}: accepted with a point suite score {score:.3f} <= 1 ({speedups})")
        if slower and min(speedups.values()) >= band_low:
            out.append(f"{item['item_id']}: rejected/slower but no target case is slower by its point ({speedups})")
    return out
