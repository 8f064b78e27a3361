"""The two AI-core types of one op_summary row: which side ran the kernel, and its core time.

An Ascend kernel runs on the cube core (``aic_*`` columns), the vector core (``aiv_*``) or both
(MIX: one row with both column families). Rules (one owner, used by :mod:`perftune.measure.routing`
and :func:`perftune.profiler.case_tables.pipe_ratios`):

- :func:`core_time`: ``aicore_time(us)`` / ``aiv_time(us)`` as the profiler wrote it, except that a
  ``0.0`` next to a positive ``*_total_cycles`` count is *not written* (CANN 9.0.0 without
  frequency data writes 0.0 beside real cycles and ratios): the time is missing, never 0 (it is never
  derived from the cycles: the block count and frequency a derivation needs are not in the row).
  A 0.0 with 0 cycles is a side that did not run.
- :func:`primary_core`: when both cycle counts are written and only one side ran cycles, that side
  (an older CANN writes ``aicore_time(us)`` 982.72 beside ``aic_total_cycles`` 0 for a vector-only
  ZerosLike, Ascend/msinsight's op_summary_1.csv); else the side with the larger positive time
  (ties go to aic); with no positive time, the only side with positive cycles; else None.
"""

from __future__ import annotations

from typing import Any

CORES = ("aic", "aiv")
TIME = {"aic": "aicore_time(us)", "aiv": "aiv_time(us)"}
CYCLES = {"aic": "aic_total_cycles", "aiv": "aiv_total_cycles"}
PIPE_COLUMNS = {
    "aic": {"CUBE": ("aic_mac_ratio", "aic_cube_ratio"), "MTE1": ("aic_mte1_ratio",), "MTE2": ("aic_mte2_ratio",),
            "MTE3": ("aic_mte3_ratio",), "SCALAR": ("aic_scalar_ratio",), "FIXPIPE": ("aic_fixpipe_ratio",)},
    "aiv": {"VECTOR": ("aiv_vec_ratio",), "MTE1": ("aiv_mte1_ratio",), "MTE2": ("aiv_mte2_ratio",),
            "MTE3": ("aiv_mte3_ratio",), "SCALAR": ("aiv_scalar_ratio",)},
}


def core_time(time: float | None, cycles: float | None) -> tuple[float | None, str]:
    """``(time in µs or None, how it was read)`` of one side (module docstring)."""
    if time is not None and time > 0:
        return time, "written"
    if time is not None and time == 0 and cycles is not None and cycles > 0:
        return None, f"missing: 0.0 written next to {cycles:g} cycles (no frequency data), not 0"
    if time is not None and time == 0:
        return 0.0, "idle: 0.0 with 0 cycles" if cycles == 0 else "written"
    return None, "absent"


def primary_core(times: dict[str, float | None], cycles: dict[str, float | None]) -> tuple[str | None, str]:
    """``(aic | aiv | None, basis)`` from the sides' times and cycles (module docstring)."""
    ran = [c for c in CORES if (cycles.get(c) or 0) > 0]
    if len(ran) == 1 and all(cycles.get(c) is not None for c in CORES):
        return ran[0], f"cycles: only {ran[0]} ran cycles"
    positive = {c: t for c, t in times.items() if t is not None and t > 0}
    if positive:
        core = "aic" if positive.get("aic", -1.0) >= positive.get("aiv", -1.0) else "aiv"
        return core, "time"
    if len(ran) == 1:
        return ran[0], f"cycles: only {ran[0]} ran cycles (its time is not written)"
    return None, "no positive core time" + (" (both sides ran cycles)" if ran else "")


def values_of(get: Any) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``(times, cycles)`` per side through ``get(column) -> float | None``, 0.0-with-cycles as missing."""
    cycles = {c: get(CYCLES[c]) for c in CORES}
    times = {c: core_time(get(TIME[c]), cycles[c])[0] for c in CORES}
    return times, cycles
