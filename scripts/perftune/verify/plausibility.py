"""``P10.plausibility``: a delivered speed-up far beyond what the ledger's accepted mechanisms explain.

Each ``accepted`` ledger item cites the formal compare that decided it (``evidence.formal =
[CANDIDATE, BEST]``, ``decide/item_decision.py``); the speed-up that compare recomputes for a case
is what that mechanism delivered on top of the code before it. Accepted items stack, so the
product of their speed-ups is the speed-up the accepted mechanisms explain (1 without one). A target
case whose delivered speed-up exceeds ``FACTOR`` × that product is **implausible**: something other
than the accepted mechanisms made the final round fast (a cache, a skipped computation, a slowed
baseline arm, a timing that is not the call's).

It never FAILs alone, because the product is a noisy estimate: each factor is one paired round
collected at its own moment, and on the 2-core VM load swings a paired fp32 ratio 2-5x within
minutes (docs/stage5-check.md, P10), so an honest chain of two items can read 4x off the final
compare; a FAIL on it would fail honest work on noise. Instead it is reported (``stage5_check.json``
``plausibility``, the text verdict) and makes the stricter checks run on the case: the fresh-data
re-measurement (``P10.fresh_data``) runs even below its speed-up filter (cpu: a paired collection;
pypto-sim: one re-simulated launch per code on fresh data, ``verify/resimulate.py``); where P10 has no
fresh-data run (msprof) or does not run, the block and the text verdict say so (:func:`follow_up`).
What FAILs is what those checks find (``P9.sampled_values``, ``P10.baseline_arm``, ``P8.below_floor``, ``P10.fresh_data``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..decide import compare
from ..errors import PerftuneError

FACTOR = 4.0
FRESH_BACKENDS = ("cpu", "pypto-sim")   # the backends whose P10 has a fresh-data run (remeasure, resimulate)


def _accepted_speedups(op_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """``[{item, formal, speedups: {case: speed-up}}]`` of every accepted item, and what did not load."""
    path = op_dir / protocol.PERF_DIR / protocol.LEDGER_NAME
    try:
        items = fsio.read_json(path, what="ledger").get("items", [])
    except PerftuneError as exc:
        return [], [exc.line()]
    out, unusable = [], []
    for item in (i for i in items if isinstance(i, dict) and i.get("status") == "accepted"):
        formal = list((item.get("evidence") or {}).get("formal") or [])
        try:
            perf = compare.load_formal(op_dir, formal[1], formal[0], newest=False)
        except (PerftuneError, IndexError) as exc:   # P7.item_decision reports it
            unusable.append(f"{item.get('item_id')}: {exc}")
            continue
        out.append({"item": item.get("item_id"), "formal": formal[:2],
                    "speedups": {c["case"]: c.get("speedup") for c in perf.get("per_case", [])}})
    return out, unusable


def assess(op_dir: Path, perf: dict[str, Any], target_case_ids) -> dict[str, Any]:
    """The ``plausibility`` block of the verdict (:func:`judge` on the ledger's accepted items)."""
    accepted, unusable = _accepted_speedups(op_dir)
    return {**judge(perf.get("per_case", []), accepted, target_case_ids), "unusable_items": unusable}


def judge(per_case: list[dict[str, Any]], accepted: list[dict[str, Any]], target_case_ids) -> dict[str, Any]:
    """Per target case of ``per_case`` (performance.json rows): delivered, explained, ratio, implausible (pure)."""
    cases = []
    for row in (c for c in per_case if c.get("case") in set(target_case_ids)):
        explained = 1.0
        for item in accepted:
            value = item["speedups"].get(row["case"])
            explained *= value if isinstance(value, (int, float)) and value > 0 else 1.0
        delivered = row.get("speedup")
        ratio = delivered / explained if isinstance(delivered, (int, float)) else None
        cases.append({"case": row["case"], "delivered_speedup": delivered, "explained_speedup": round(explained, 6),
                      "ratio": None if ratio is None else round(ratio, 6),
                      "implausible": ratio is not None and ratio > FACTOR})
    return {"id": "P10.plausibility", "factor": FACTOR, "items": [a["item"] for a in accepted], "cases": cases,
            "implausible": [c["case"] for c in cases if c["implausible"]],
            "consequence": "reported, never a failure alone"}   # what runs on them: follow_up


def follow_up(block: dict[str, Any], backend: str, remeasured: bool) -> None:
    """What the verifier does on the implausible cases, said as it is: the fresh-data re-measurement runs
    where P10 has one (cpu's paired collection, pypto-sim's re-simulation) and P10 runs; else it is only reported."""
    block["fresh_forced"] = runs = remeasured and backend in FRESH_BACKENDS
    block["consequence"] = "reported, never a failure alone; " + (
        "the fresh-data re-measurement runs on every implausible case" if runs else
        f"no fresh-data run ({'the re-measurement is off' if not remeasured else backend + ' has none'})")


def render(block: dict[str, Any] | None) -> str:
    """One line per implausible case for the text verdict ('' when none)."""
    rows = [c for c in (block or {}).get("cases", []) if c["implausible"]]
    then = "fresh-data re-measurement forced" if block and block.get("fresh_forced", True) else \
        "reported only: " + (block or {}).get("consequence", "").split("; ", 1)[-1]
    return "".join(f"Plausibility (P10.plausibility): case {c['case']} delivered {c['delivered_speedup']:.2f}x, "
                   f"the accepted items explain {c['explained_speedup']:.2f}x (> {block['factor']:g}x apart): "
                   f"{then}\n" for c in rows)
