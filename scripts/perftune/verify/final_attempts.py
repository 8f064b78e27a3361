"""P3: every final attempt counts (issue 35 item 6): the figure that holds follows a rule over all of them.

An attempt is a complete formal round of the delivered code paired with the baseline code (the
ranking round, a confirm paired with v000, every final round, kept or re-collected: the chain keeps
them, ``P3.history_chain``). The rule, fixed before any round (docs/statistics.md, "Every final
attempt counts"): per target case the figure that holds is the delivered speed-up when it lies inside
the CI of the median attempt (the lower median by point), else the median attempt's point and CI,
stated in the verdict (``provenance.final_attempts``, the text verdict). Not a FAIL: re-collecting
until a lucky round only moves the median by one rank, and load moves honest rounds either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod
from ..errors import PerftuneError
from ..measure import evidence
from . import remeasure


def rounds(op_dir: Path, base: evidence.RoundEvidence, final: evidence.RoundEvidence) -> list[Path]:
    """The attempts: complete formal rounds of the final round's code paired with the baseline round's."""
    out = []
    for row in evidence.list_rounds(op_dir):
        if row["status"] != "complete" or row["mode"] != "compare":
            continue
        col = fsio.read_json(row["path"] / evidence.COLLECTION_JSON, what="collection.json")
        if col.get("executable_sha256") == final.executable_sha256 and \
                (col.get("paired") or {}).get("baseline_executable_sha256") == base.executable_sha256:
            out.append(row["path"])
    return out


def holds(delivered: float | None, points: list[tuple[str, float | None, list]]) -> dict[str, Any]:
    """The rule on one case (pure): ``points`` = (round, speed-up, CI) of every attempt, in order."""
    known = sorted((p for p in points if p[1] is not None), key=lambda p: p[1])
    if delivered is None or len(known) < 2:
        return {"holds": "delivered", "attempts": len(points)}
    name, point, ci = known[(len(known) - 1) // 2]
    inside = None not in (ci or [None]) and ci[0] <= delivered <= ci[1]
    return {"holds": "delivered" if inside else "median", "attempts": len(points), "delivered": delivered,
            "median_round": name, "median": point, "median_ci": ci}


def note(op_dir: Path, man: manifest_mod.Manifest, perf: dict[str, Any], base: evidence.RoundEvidence,
         final: evidence.RoundEvidence) -> dict[str, Any]:
    """``{case: {holds, attempts, ...}, "rounds": [...]}`` for the verdict's provenance."""
    try:
        found = rounds(op_dir, base, final)
    except PerftuneError as exc:
        return {"status": "unreadable", "reason": exc.line()}
    delivered = {c["case"]: c.get("speedup") for c in perf.get("per_case", [])}
    cases = {}
    for case_id in man.target_case_ids:
        points = []
        for folder in found:
            case_dir = folder / evidence.case_dir_name(case_id)
            if case_dir.is_dir():
                result = remeasure.archived(man, case_dir)[0]
                points.append((folder.name, result.point, [result.ci_low, result.ci_high]))
        cases[case_id] = {**holds(delivered.get(case_id), points), "points": [list(p) for p in points]}
    return {"rounds": [p.name for p in found], "cases": cases}


def lines(provenance: dict[str, Any] | None) -> str:
    """The text verdict's statement where the median attempt's figure holds."""
    cases = ((provenance or {}).get("final_attempts") or {}).get("cases") or {}
    return "".join(f"Figure that holds (P3, {c['attempts']} final attempts): case {case}: median {c['median']:.3f} CI "
                   f"{c['median_ci']} ({c['median_round']}), not the delivered {c['delivered']:.3f}\n"
                   for case, c in sorted(cases.items()) if c.get("holds") == "median")
