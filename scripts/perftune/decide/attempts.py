"""Every attempt counts (issue 35 item 6): the delivered figure follows one rule over every attempt.

An attempt is a complete formal round of the compared code paired with the baseline code, up to the
compared round in chain order (the ranking round, every final round, kept or re-collected: the chain
keeps them, ``P3.history_chain``). The rule, fixed before any round (docs/statistics.md, "Every final
attempt counts"), per target case and for the suite score: the figure delivered is the compared round's
own point and CI when it lies inside the CI of the median attempt (the lower median by point), else the
median attempt's point and CI. One attempt: the round's own figure, nothing to weigh.

Owner of the rule: ``compare_perf.py formal`` (:func:`perftune.decide.compare.build_performance`) applies
it to ``performance.json`` (``per_case[].speedup``/``speedup_ci``/``attempts``, ``suite`` figures and
``suite.attempts``), the reports render it, and stage5_check recomputes it (``P3.final_attempts``). The
verdict, the item acceptance and the samples stay the compared round's own (one round's decision rule).
Pure core (:func:`holds`, :func:`apply_case`, :func:`apply_suite`); :func:`rounds` reads the chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

Point = tuple[str, "float | None", "list | None"]   # (round, point, CI)
SUITE_FIGURES = ("score", "ci", "mean_case_speedup", "geomean_speedup", "mean_ci", "geomean_ci")


def holds(own: float | None, points: list[Point]) -> dict[str, Any]:
    """The rule on one figure (pure): ``own`` = the compared round's point, ``points`` = every attempt in
    chain order (the compared round last). ``figure``: ``final_round`` or ``median``."""
    known = sorted((p for p in points if p[1] is not None), key=lambda p: p[1])
    out: dict[str, Any] = {"figure": "final_round", "attempts": len(points), "rounds": [p[0] for p in points]}
    if own is None or len(known) < 2:
        return out
    name, point, ci = known[(len(known) - 1) // 2]
    inside = None not in (ci or [None]) and ci[0] <= own <= ci[1]
    return {**out, "figure": "final_round" if inside else "median", "median_round": name, "median": point,
            "median_ci": ci, "final_round_point": own}


def apply_case(row: dict[str, Any], earlier: list[Point], final_round: str) -> None:
    """Set one ``per_case[]`` row's delivered figure by the rule (in place); ``earlier``: the attempts
    before the compared round, whose own figure is the row's."""
    own = (final_round, row["speedup"], row["speedup_ci"])
    rule = holds(row["speedup"], [*earlier, own])
    row["attempts"] = {**rule, "points": [list(p) for p in (*earlier, own)]}
    if rule["figure"] == "median":
        row["speedup"], row["speedup_ci"] = rule["median"], rule["median_ci"]


def apply_suite(suite: dict[str, Any], earlier: list[tuple[str, dict[str, Any]]], final_round: str) -> None:
    """The same rule on the suite score (in place): ``earlier`` = (round, its suite block) per attempt;
    where the median attempt's holds, its figures (``SUITE_FIGURES``) are delivered."""
    blocks = {**dict(earlier), final_round: {k: suite.get(k) for k in SUITE_FIGURES}}
    rule = holds(suite.get("score"), [(name, b.get("score"), b.get("ci")) for name, b in blocks.items()])
    suite["attempts"] = rule
    if rule["figure"] == "median":
        suite.update({k: blocks[rule["median_round"]][k] for k in SUITE_FIGURES})


def describe(attempts: dict[str, Any] | None) -> str | None:
    """The report's sentence where the median attempt's figure is delivered (None where the round's own is)."""
    if not attempts or attempts.get("figure") != "median":
        return None
    return (f"median of {attempts['attempts']} final attempts ({', '.join(attempts['rounds'])}): "
            f"{attempts['median']:.4f} from {attempts['median_round']}, not the final round's own "
            f"{attempts['final_round_point']:.4f}")


def rounds(op_dir: Path, base: Any, final: Any) -> list[str]:
    """The attempts on disk (chain order, up to ``final``): complete formal rounds of ``final``'s code
    paired with ``base``'s code (``evidence.RoundEvidence``)."""
    from .. import fsio   # I/O, at the edge
    from ..measure import evidence
    if not final.paired:
        return [final.path.name]
    out = []
    for row in evidence.list_rounds(op_dir):
        if row["status"] != "complete" or row["mode"] != "compare" or row["name"] > final.path.name:
            continue
        col = fsio.read_json(row["path"] / evidence.COLLECTION_JSON, what="collection.json")
        if col.get("executable_sha256") == final.executable_sha256 and \
                (col.get("paired") or {}).get("baseline_executable_sha256") == base.executable_sha256:
            out.append(row["name"])
    return out
