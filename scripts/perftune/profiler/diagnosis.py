"""Diagnosis of one operator over all its launches: one bound label, the figures that decided it, the side read.

Pure; the one owner of the bound rule (``measure.routing`` reads :func:`triggers` for its per-row route).
Input: the compute launches of one ``Op Name`` (:mod:`profiler.launches`), each a mapping column ->
number (``N/A`` is missing, never 0; :func:`numbers_of`), their task types and durations, and the
occupancy context (:mod:`profiler.occupancy`). Figures are medians over the launches with min, max and
the count. ``OP State`` is never read: ``N/A`` there says nothing about a dynamic shape, and no check is
skipped for it.

Side (which core ran the kernel): per launch :func:`core_types.primary_core`; the op's side is the one most
launches name (ties: the larger median core time). The other side's ratios are reported under
``other_side`` and never decide: the idle cube side of a vector kernel (SCALAR 0.87 over 1.9 of 223 µs of a
real TileLang sigmoid) is not the kernel's bottleneck.

Rules, first match (thresholds in :mod:`perftune.contract.protocol`):

- D1 ``aicpu_bound``: no compute launch and every row an ``AI_CPU`` task (the op runs on the AI CPU).
- D2 ``insufficient_evidence``: no compute task, no side, or no pipe ratio on it (collect
  ``--aic-metrics=PipeUtilization``).
- D3 ``occupancy_bound``: fewer blocks than the side's cores, a last wave below ``DIAGNOSIS_WAVE_EFFICIENCY``,
  or a per-block spread above ``DIAGNOSIS_BLOCK_SPREAD`` (:func:`occupancy.assess` / :func:`occupancy.spread`).
- D4 one pipe dominates (:func:`triggers`: a ratio above ``BOUND_ROUTE_HIGH``, or the overall maximum above
  ``BOUND_ROUTE_MAX``): CUBE -> ``cube_bound``, VECTOR -> ``vector_bound``, MTE2 -> ``mte2_bound``,
  MTE3 -> ``mte3_bound``, MTE1 / FIXPIPE -> ``data_movement_bound``, SCALAR -> ``scalar_bound``; the highest wins.
- D5 ``data_movement_bound`` by the sum rule: on the vector side vec + mte2 + mte3 >= ``DIAGNOSIS_SERIAL_SUM``
  with no pipe dominant: compute and movement fill the time one after another, not overlapped.
- D6 ``launch_bound``: nothing dominates and the median task is shorter than ``DIAGNOSIS_LAUNCH_US``: the
  fixed launch and scheduling cost is a large share (too little work per launch).
- D7 ``latency_bound``: nothing dominates on a longer task: the pipes wait on each other (latency,
  synchronisation, dependency stalls).

Every diagnosis carries ``next``: the knowledge families its label routes to
(``protocol.DIAGNOSIS_FAMILIES``) and the ``cases.py`` call that lists the cards, methods, templates and
cases of them, so no label ends without a next step.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract import protocol
from . import core_types, occupancy

PIPE_LABEL = {"CUBE": "cube_bound", "VECTOR": "vector_bound", "MTE2": "mte2_bound", "MTE3": "mte3_bound",
              "MTE1": "data_movement_bound", "FIXPIPE": "data_movement_bound", "SCALAR": "scalar_bound"}
AICPU_TYPES = frozenset({"AI_CPU", "KERNEL_AICPU"})
SUM_PIPES = ("VECTOR", "MTE2", "MTE3")
COLLECT = "collect the op with msprof --aic-metrics=PipeUtilization (the pipe ratios decide the bound)"


def triggers(values: Mapping[str, float | None]) -> list[str]:
    """The keys whose value is above ``BOUND_ROUTE_HIGH``, or is the overall maximum and above
    ``BOUND_ROUTE_MAX`` (strict comparisons), in the order given."""
    present = [v for v in values.values() if v is not None]
    top = max(present) if present else None
    return [k for k, v in values.items() if v is not None and (
        v > protocol.BOUND_ROUTE_HIGH or (v == top and v > protocol.BOUND_ROUTE_MAX))]


def numbers_of(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite numeric cells of one row (a missing ``N/A`` cell is absent, never 0)."""
    return {c: float(v) for c, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def next_step(label: str) -> dict[str, Any]:
    """Where ``label`` leads: its knowledge families and the ``cases.py`` call that lists them."""
    out = {"families": list(protocol.DIAGNOSIS_FAMILIES[label]),
           "command": f"cases.py --op-type OP_TYPE --bound {label} --json"}
    return {**out, "collect": COLLECT} if label == "insufficient_evidence" else out


def _stats(values: Sequence[float]) -> dict[str, Any]:
    return {"median": float(f"{statistics.median(values):.6g}"), "min": min(values), "max": max(values),
            "launches": len(values)}


def _column_stats(rows: Sequence[Mapping[str, float]]) -> dict[str, dict[str, Any]]:
    columns = sorted({c for r in rows for c in r})
    return {c: _stats([r[c] for r in rows if c in r]) for c in columns}


def side_of(rows: Sequence[Mapping[str, float]]) -> tuple[str | None, str]:
    """The op's side and why (module docstring)."""
    votes: Counter[str] = Counter()
    bases: Counter[str] = Counter()
    for row in rows:
        core, basis = core_types.primary_core(*core_types.values_of(row.get))
        if core:
            votes[core] += 1
            bases[basis] += 1
    if not votes:
        return None, "no launch has a positive core time or cycles on one side"
    ranked = votes.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        times = {c: statistics.median([r[core_types.TIME[c]] for r in rows if core_types.TIME[c] in r] or [0.0])
                 for c in votes}
        side = max(sorted(times), key=lambda c: times[c])
        return side, f"launches split {dict(sorted(votes.items()))}: the larger median core time"
    side = ranked[0][0]
    return side, f"{votes[side]} of {len(rows)} launches ({bases.most_common(1)[0][0]})"


def block_side(rows: Sequence[Mapping[str, float]]) -> tuple[str | None, str]:
    """The side of msOpProf's per-block rows: the larger summed core time (a MIX block writes one cube row
    and two vector rows, so counting rows would always say aiv)."""
    totals = {c: sum(r.get(core_types.TIME[c], 0.0) for r in rows) for c in core_types.CORES}
    if not any(totals.values()):
        return None, "no block has a positive core time"
    side = max(core_types.CORES, key=lambda c: (totals[c], c == "aic"))
    return side, f"summed per-block core time aic {totals['aic']:.6g} us, aiv {totals['aiv']:.6g} us"


def pipe_values(stats: Mapping[str, Mapping[str, Any]], side: str) -> dict[str, tuple[float, str]]:
    """``{PIPE: (median ratio, column)}`` of ``side`` (the larger column where a pipe has two)."""
    out = {}
    for pipe, columns in core_types.PIPE_COLUMNS[side].items():
        found = [(stats[c]["median"], c) for c in columns if c in stats]
        if found:
            out[pipe] = max(found)
    return out


def _other_side(rows: Sequence[Mapping[str, float]], side: str, stats: Mapping[str, Any]) -> dict[str, Any] | None:
    other = "aiv" if side == "aic" else "aic"
    columns = [c for cols in core_types.PIPE_COLUMNS[other].values() for c in cols if c in stats]
    times = [r[core_types.TIME[other]] for r in rows if r.get(core_types.TIME[other], 0) > 0]
    if not columns or not times:
        return None
    return {"side": other, "core_time_us": _stats(times), "ratios": {c: stats[c] for c in columns},
            "note": "reported, never decides: the side that did not run the kernel"}


def _pipe_rule(pipes: dict[str, tuple[float, str]], side: str) -> tuple[str, str, str] | None:
    hit = triggers({p: v for p, (v, _c) in pipes.items()})
    if hit:
        best = max(hit, key=lambda p: (pipes[p][0], p))
        value, column = pipes[best]
        why = (f"{column} median {value:g} > {protocol.BOUND_ROUTE_HIGH}" if value > protocol.BOUND_ROUTE_HIGH else
               f"{column} median {value:g} is the highest and > {protocol.BOUND_ROUTE_MAX}")
        return PIPE_LABEL[best], "D4", why
    if side == "aiv" and all(p in pipes for p in SUM_PIPES):
        total = sum(pipes[p][0] for p in SUM_PIPES)
        if total >= protocol.DIAGNOSIS_SERIAL_SUM:
            return "data_movement_bound", "D5", (f"vec + mte2 + mte3 = {total:.3f} >= {protocol.DIAGNOSIS_SERIAL_SUM} "
                                                 "with no pipe dominant: the pipes run one after another")
    return None


def _occupancy_rule(occ: Mapping[str, Any], spread: Mapping[str, Any] | None) -> str | None:
    if occ.get("decided") and occ.get("limited"):
        return occ["reason"]
    if spread and spread["severe"]:
        return (f"per-block spread {spread['spread']:.1%} ({spread['what']}, {spread['blocks']} blocks) > "
                f"{protocol.DIAGNOSIS_BLOCK_SPREAD:.0%}: the slowest block sets the time")
    return None


def _done(out: dict[str, Any], label: str, rule_id: str, rule: str) -> dict[str, Any]:
    return {**out, "label": label, "rule_id": rule_id, "rule": rule, "next": next_step(label)}


def _no_compute(base: dict[str, Any], row_types: Sequence[str]) -> dict[str, Any]:
    if row_types and all(t in AICPU_TYPES for t in row_types):
        return _done(base, "aicpu_bound", "D1", f"every row is an AI_CPU task ({len(row_types)} rows): the op "
                     "runs on the AI CPU")
    return _done(base, "insufficient_evidence", "D2", f"no AI-core compute task (task types "
                 f"{sorted(set(row_types))}): no pipe ratio to read")


def diagnose(rows: Sequence[Mapping[str, float]], durations: Sequence[float | None], *,
             row_types: Sequence[str] = (), launch_types: Sequence[str | None] = (), compute: bool = True,
             cores: Mapping[str, Any] | None = None, block_spread: Mapping[str, Any] | None = None,
             side: tuple[str, str] | None = None) -> dict[str, Any]:
    """``{label, rule_id, rule, side, side_basis, figures, other_side, next}`` of one op (module docstring).

    ``rows``: :func:`numbers_of` of each compute launch; ``durations`` their task durations;
    ``row_types``: every row's task type as the profiler names it; ``launch_types`` each launch's;
    ``compute`` False when the op has no compute task; ``side`` ``(side, basis)`` when the caller knows it
    (msOpProf's per-block rows: :func:`block_side`)."""
    durs = [d for d in durations if d is not None]
    figures: dict[str, Any] = {"launches": len(rows), "duration_us": _stats(durs) if durs else None}
    base = {"side": None, "side_basis": None, "figures": figures, "other_side": None}
    if not compute:
        return _no_compute(base, row_types)
    side, basis = side or side_of(rows)
    stats = _column_stats(rows)
    pipes = pipe_values(stats, side) if side else {}
    out = {**base, "side": side, "side_basis": basis}
    if not pipes:
        return _done(out, "insufficient_evidence", "D2", f"no pipe ratio on the side that ran ({COLLECT})")
    types = list(launch_types) or [None] * len(rows)
    written = [b for b in (occupancy.blocks_of(r, side, t)[0] for r, t in zip(rows, types)) if b is not None]
    occ = occupancy.assess(int(statistics.median(written)) if written else None, side, cores)
    figures.update(side_time_us=stats.get(core_types.TIME[side]), ratios={c: stats[c] for _p, (_v, c) in
                   sorted(pipes.items())}, occupancy=occ, block_spread=block_spread)
    if side == "aiv" and all(p in pipes for p in SUM_PIPES):
        figures["vec_mte2_mte3_sum"] = round(sum(pipes[p][0] for p in SUM_PIPES), 6)
    out["other_side"] = _other_side(rows, side, stats)
    why = _occupancy_rule(occ, block_spread)
    if why:
        return _done(out, "occupancy_bound", "D3", why)
    found = _pipe_rule(pipes, side)
    if found:
        return _done(out, *found)
    top = max(pipes, key=lambda p: (pipes[p][0], p))
    low = f"no pipe dominates (highest {pipes[top][1]} {pipes[top][0]:g})"
    median = figures["duration_us"]["median"] if durs else None
    if median is not None and median < protocol.DIAGNOSIS_LAUNCH_US:
        return _done(out, "launch_bound", "D6", f"{low}; median task {median:g} us < {protocol.DIAGNOSIS_LAUNCH_US:g} "
                     "us: the fixed launch and scheduling cost is a large share")
    return _done(out, "latency_bound", "D7", f"{low} on a median task of {median} us: the pipes wait on each "
                 "other (latency, synchronisation)")
