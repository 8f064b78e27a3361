"""``P10.baseline_arm``: the baseline arm paired with the delivered code against the baseline code alone,
both measured at check time, side by side (issue 35 item 11).

A candidate that slows the arm it is paired with (the other module's numpy swapped, a polluted shared
cache, any side effect reaching the other arm) makes every paired speed-up, and P10's paired
re-measurement, look larger. The comparison that shows it is the same baseline code measured alone
at the same moments, with the frozen process layout (backend, processes, warm-up, repeats), so the
load of the moment reaches both sides:

- **moments** (:func:`moments`, called by ``remeasure.run`` per target case): a baseline-alone
  collection right after the last paired attempt of the reproduction (whose baseline arm it is
  beside), then ``ARM_MOMENTS - 1`` more moments of one paired collection and one alone collection,
  the order alternating (alone first, then paired first, ...), so a load that rises or falls during
  the check reaches both sides alike; raw files under ``rm_NNN/<case>/arm_MM/{paired,alone}/``;
- **rule** (:func:`judge`): ``cheating`` when the fastest paired baseline-arm sample over the moments
  exceeds ``ARM_LIMIT`` × the fastest alone sample over the same moments AND, in every moment, its
  fastest paired arm exceeds ``ARM_LIMIT`` × its fastest alone, on wall time or (cpu backend) on the
  calls' CPU time (``harness.call_cpu_us``, which load does not stretch). Fastest, because load only
  slows a sample down; every moment, because under heavy load one collection can be slowed throughout,
  so a false FAIL needs the load to favour the alone side three times in a row (docs/statistics.md,
  "The paired baseline arm": the figures behind ``ARM_LIMIT`` and ``ARM_MOMENTS``).

Without a check-time re-measurement (``--no-remeasure``, msprof without ``--remeasure``, over the
frozen budget) the recorded rounds are all there is: the final round's paired arm against the
baseline round (an earlier moment, alone), with the coarse ``RECORDED_LIMIT`` that load between two
moments cannot reach; ``complete_stage 5`` accepts only a check that re-measured.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .. import fsio
from ..measure import attestation, collect, evidence

ARM_LIMIT = 1.5
ARM_MOMENTS = 3
ARM_REPEATS = 5
RECORDED_LIMIT = 10.0

Problem = tuple  # (check, category, message, expected, actual)


def _durations(results) -> list[float]:
    return [r.duration_us for r in results]


def cpu_us(folder: Path, arm: str = "") -> list[float]:
    """The harness's ``call_cpu_us`` of every timed call of a collection (``repeat_NNN[/<arm>]``; cpu only)."""
    out = []
    for path in sorted(folder.glob(f"repeat_*/{arm + '/' if arm else ''}{attestation.ATTESTATION_JSON}")):
        obj = fsio.read_json(path, what="attestation")
        for call in obj.get("calls") if isinstance(obj.get("calls"), list) else [obj]:
            value = ((call or {}).get("harness") or {}).get("call_cpu_us")
            if isinstance(value, (int, float)) and value > 0:
                out.append(float(value))
    return out


def moments(ctx, base_spec, case, case_dir: Path, last_attempt: Path, last_arm_us: list[float]) -> dict[str, Any]:
    """The check-time moments of one target case: the baseline arm of the last paired attempt (``last_attempt``,
    ``last_arm_us``) with an alone collection beside it, then paired and alone collections in alternating order,
    each of at most ``ARM_REPEATS`` repeats (as P10's fresh-data collections: the fastest sample is what counts)."""
    repeats = min(ctx.spec.repeats, ARM_REPEATS)
    ctx = dataclasses.replace(ctx, spec=dataclasses.replace(ctx.spec, repeats=repeats))
    base_spec = dataclasses.replace(base_spec, repeats=repeats)
    def alone(folder: Path) -> dict[str, list[float]]:
        return {"alone_us": _durations(ctx.backend.run_case(base_spec, case, folder)), "alone_cpu_us": cpu_us(folder)}

    rows = [{"arm_us": list(last_arm_us), "arm_cpu_us": cpu_us(last_attempt, "baseline"),
             **alone(case_dir / "arm_01" / "alone"), "order": "paired, alone"}]
    for number in range(2, ARM_MOMENTS + 1):
        folder = case_dir / f"arm_{number:02d}"
        alone_first = number % 2 == 0
        first = alone(folder / "alone") if alone_first else None
        _cand, basel, _order = collect._paired_case(ctx, base_spec, case, folder / "paired")
        rows.append({"arm_us": _durations(basel), "arm_cpu_us": cpu_us(folder / "paired", "baseline"),
                     **(first if alone_first else alone(folder / "alone")),
                     "order": "alone, paired" if alone_first else "paired, alone"})
    return judge(rows)


def _ratio(arm: list[float], alone: list[float]) -> float | None:
    return min(arm) / min(alone) if arm and alone and min(alone) > 0 else None


def _measure(rows: list[dict[str, Any]], arm_key: str, alone_key: str) -> dict[str, Any]:
    arm = [s for row in rows for s in row.get(arm_key) or []]
    alone = [s for row in rows for s in row.get(alone_key) or []]
    ratio = _ratio(arm, alone)
    each = [_ratio(row.get(arm_key) or [], row.get(alone_key) or []) for row in rows]
    return {"fastest_arm_us": min(arm) if arm else None, "fastest_alone_us": min(alone) if alone else None,
            "ratio": None if ratio is None else round(ratio, 6),
            "moment_ratios": [None if r is None else round(r, 6) for r in each],
            "slowed": ratio is not None and ratio > ARM_LIMIT and all(r is not None and r > ARM_LIMIT for r in each)}


def judge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule on the moments (pure), on wall time and on the calls' CPU time (cpu backend): the pooled
    fastest arm and alone samples and their ratio, each moment's own ratio; slowed when, on either measure,
    the pooled ratio and every moment's exceed the limit."""
    wall, cpu = _measure(rows, "arm_us", "alone_us"), _measure(rows, "arm_cpu_us", "alone_cpu_us")
    return {"moments": rows, **wall, "wall_slowed": wall["slowed"], "cpu": cpu, "limit": ARM_LIMIT,
            "slowed": wall["slowed"] or cpu["slowed"]}


def _fastest(samples) -> float | None:
    values = [float(s) for s in samples or [] if s is not None]
    return min(values) if values else None


def _slowed(case_id: str, arm: float, alone: float, limit: float, where: str) -> Problem:
    return ("P10.baseline_arm", "cheating", f"case {case_id}: the baseline arm paired with the delivered code ran "
            f"{arm / alone:.2f}x slower than the baseline code alone (fastest {arm:.1f} vs {alone:.1f} us, {where}): "
            "the candidate reaches the arm it is compared with", f"<= {limit:g}x the baseline code alone",
            f"{arm / alone:.2f}x")


def problems(man, base: evidence.RoundEvidence, final: evidence.RoundEvidence,
             note: dict[str, Any] | None = None) -> list[Problem]:
    """``P10.baseline_arm`` over the check-time moments of ``note`` (the re-measurement's); without them, the
    final round's paired arm against the baseline round (``RECORDED_LIMIT``)."""
    if not final.paired or base.paired or base.executable_sha256 != (final.partner or {}).get(
            "baseline_executable_sha256"):
        return []   # the arm is not the code the baseline round measured alone
    measured = {row["case"]: row["arm"] for row in (note or {}).get("cases", []) if row.get("arm")}
    out = []
    for case_id in (c for c in man.case_ids if c in base.cases and c in final.cases):
        if case_id in measured:
            arm = measured[case_id]
            if arm["slowed"]:
                figure, what = (arm, "wall time") if arm["wall_slowed"] else (arm["cpu"], "CPU time of the calls")
                out.append(_slowed(case_id, figure["fastest_arm_us"], figure["fastest_alone_us"], arm["limit"],
                                   f"{what}, over {len(arm['moments'])} moments of the check, side by side"))
            continue
        alone = _fastest(base.cases[case_id].samples_us)
        arm_us = _fastest(final.cases[case_id].baseline_samples_us)
        if alone and arm_us and arm_us > RECORDED_LIMIT * alone:
            out.append(_slowed(case_id, arm_us, alone, RECORDED_LIMIT, "the final round against the baseline round: "
                               "no check-time re-measurement"))
    return out
