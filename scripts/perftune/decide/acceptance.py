"""The frozen decisions an agent would otherwise make by eye: quick promotion and item acceptance.

Pure. Both rules are protocol fields of ``PERFORMANCE_CASES.json`` (``promotion``, ``acceptance``)
with documented defaults (docs/statistics.md, "Frozen decision rules"), fixed before any result:

- promotion quick → formal (``promotion.rule``) over the item's case scope (``promotion.scope``:
  the cases the item names, else every target case):
  ``suite_ci_low_above_threshold`` (default) — the lower bound of the scope's suite CI is above
  ``quick_min_speedup``; ``suite_point_above_band`` — the suite point is at least
  ``max(quick_min_speedup, 1+δ)`` and the CI (when there is one) is not entirely below 1.
  Unchanged code is promoted at most ~2.5 % of the time by the default rule.
- item acceptance after the formal compare against the current best (``acceptance.rule``):
  ``suite_ci_low_above_one_no_slower_target`` — ``accepted`` when the suite CI lies entirely above 1
  and no target case is ``slower`` (the final compare gate would pass); ``rejected/slower`` when a
  target case is slower or the suite CI lies entirely below 1; else ``rejected/no_stable_gain``.
  ``relative_band`` (no CI): the suite point outside the band [1/(1+δ), 1+δ] stands for the CI;
  an independent compare without calibration (suite ``independent_not_calibrated``) has no CI to use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .calibration import UNCALIBRATED
from .stats import SuiteResult, band


def promote(suite: SuiteResult, rule: Mapping[str, Any], delta: float) -> tuple[bool, str]:
    """(promote, the rule as text) for a quick screen's suite over the item's scope."""
    threshold = float(rule["quick_min_speedup"])
    point = suite.score
    if point is None:
        return False, "suite not computable"
    if rule["rule"] == "suite_point_above_band":
        limit = max(threshold, band(delta)[1])
        below = suite.ci_high is not None and suite.ci_high < 1.0
        return point >= limit and not below, f"suite {suite.metric} >= {limit:.4g} and CI not below 1"
    if suite.ci_low is None:
        return False, "suite CI lower bound > threshold (no CI: relative_band never promotes by this rule)"
    return suite.ci_low > threshold, f"suite {suite.metric} CI lower bound > {threshold:.4g}"


def accept(per_case: Sequence[Mapping[str, Any]], suite: Mapping[str, Any], rule: Mapping[str, Any],
           delta: float | None = None) -> dict[str, Any]:
    """The item decision of a formal compare against the current best, by the frozen rule. A suite without
    a CI (``relative_band``: point only) stands for its band: the point ≥ 1+δ reads as a CI above 1,
    ≤ 1/(1+δ) as a CI below 1 (the same band its per-case verdicts use); else no stable gain."""
    targets = [r for r in per_case if r.get("target", True)]
    slower = [r["case"] for r in targets if r["verdict"] == "slower"]
    ci = suite.get("ci") or [None, None]
    point = suite.get("score")
    if suite.get("verdict_reason") == UNCALIBRATED:   # independent, not calibrated: no size claimed
        ci, point = [None, None], None
    if ci[0] is None and point is not None and delta is not None and suite.get("method") == "relative_band":
        low, high = band(delta)
        ci = [point, point] if point >= high or point <= low else [None, None]
    if slower:
        status, reason = "rejected", "slower"
    elif ci[0] is not None and ci[0] > 1.0:
        status, reason = "accepted", None
    elif ci[1] is not None and ci[1] < 1.0:
        status, reason = "rejected", "slower"
    else:
        status, reason = "rejected", "no_stable_gain"
    verdicts = ", ".join(f"{r['case']} {r['verdict']}" for r in targets)
    shown = "-" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    note = f"suite {suite.get('metric', 'mean_case_speedup')} CI {shown}; slower target cases {slower or 'none'}; {verdicts}"
    return {"rule": rule["rule"], "status": status, "reason_code": reason, "slower_target_cases": slower, "note": note}
