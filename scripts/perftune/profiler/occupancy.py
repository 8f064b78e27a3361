"""Occupancy and imbalance: the blocks a launch used against the chip's cores, and the spread between blocks.

Pure. Rules (thresholds in :mod:`perftune.contract.protocol`):

- Cores come from a platform file's ``cores`` list (``platforms/*.json``: cube ``aic`` and vector
  ``aiv`` core counts of the chips its ``chip_patterns`` name, each with its source, from the CANN
  ``platform_config/<SoC>.ini`` ``cube_core_cnt`` / ``vector_core_cnt``; :func:`cores_of`); without an
  entry for the chip the cores are unknown and occupancy is not decided (never a guessed count).
- Blocks of the side that ran the kernel (:func:`blocks_of`): op_summary ``Block Num`` (``Block Dim`` in
  older layouts); on a ``MIX_AIC`` task the vector side's blocks are ``Mix Block Num``. A ``0`` is not
  written (CANN 9.0.0 writes 0 for a PyPTO launch and for an Ascend C kernel alike), never 0 blocks.
- :func:`assess`: ``waves = ceil(blocks / cores)``, ``wave_efficiency = blocks / (waves x cores)``;
  fewer blocks than cores leave cores idle for the whole launch; an efficiency below
  ``DIAGNOSIS_WAVE_EFFICIENCY`` leaves them idle in the last wave (a tail).
- :func:`spread`: per-block core time ``(max - min) / max`` (msprof-guide MS-4: < 10 % fine, 10-30 % worth a
  look, > 30 % severe = ``DIAGNOSIS_BLOCK_SPREAD``), from msOpProf's per-block ``PipeUtilization.csv``
  (``aiv_time(us)`` / ``aic_time(us)`` of each ``block_id``/``sub_block_id`` row) or from the simulator's
  per-core work (:func:`sim_spread`: ``bubble_analysis.log`` ``Core Total Work Time`` of the ``AIC_<n>`` or
  ``AIV_<n>`` cores that ran tasks, the kind with the more summed work; the scheduler cores ``HUB_<n>`` and
  ``Fake Core_<n>`` are not compute cores).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract import protocol

BLOCK_COLUMNS = ("Block Num", "Block Dim")
MIX_BLOCK_COLUMNS = ("Mix Block Num", "Mix Block Dim")
SIM_CORE_KINDS = {"aic": "AIC_", "aiv": "AIV_"}
PER_BLOCK_TIME = {"aic": "aic_time(us)", "aiv": "aiv_time(us)"}


def cores_of(platform: Mapping[str, Any] | None, chip: str | None = None) -> dict[str, Any] | None:
    """``{aic, aiv, chip, source, status}`` of the platform file's ``cores`` entry for ``chip`` (shell
    patterns, case-insensitive, as :func:`measure.devices.check_platform` matches the probed chip), or its
    only entry when ``chip`` is None; None when unknown or ambiguous."""
    entries = list((platform or {}).get("cores") or [])
    if chip is not None:
        entries = [e for e in entries if any(fnmatch.fnmatchcase(chip.upper(), p.upper()) for p in e["chip_patterns"])]
    if len(entries) != 1:
        return None
    entry = entries[0]
    return {"aic": entry["aic"], "aiv": entry["aiv"], "chip": chip or entry["chip_patterns"][0],
            "source": entry["source"], "status": entry["status"]}


def _first(row: Mapping[str, Any], names: Sequence[str]) -> float | None:
    for name in names:
        value = row.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def blocks_of(row: Mapping[str, Any], side: str, task_type: str | None) -> tuple[int | None, str]:
    """``(blocks, column)`` of ``side`` in one op_summary row; ``None`` when the profiler wrote none (or 0),
    or when a MIX row (both block columns written) comes without its task type (which count is whose is
    then unknown)."""
    kind = (task_type or "").removeprefix("KERNEL_")     # task_time writes KERNEL_MIX_AIC
    if not kind and _first(row, BLOCK_COLUMNS) and _first(row, MIX_BLOCK_COLUMNS):
        return None, "Block Num/Mix Block Num (MIX task of unknown type)"
    names = MIX_BLOCK_COLUMNS if (side == "aiv" and kind == "MIX_AIC") or \
        (side == "aic" and kind == "MIX_AIV") else BLOCK_COLUMNS
    value = _first(row, names)
    column = next((n for n in names if n in row), names[0])
    return (int(value) if value is not None else None), column


def assess(blocks: int | None, side: str | None, cores: Mapping[str, Any] | None) -> dict[str, Any]:
    """Blocks against the side's cores (module docstring); ``decided`` False when either is unknown."""
    count = (cores or {}).get(side) if side else None
    out: dict[str, Any] = {"blocks": blocks, "side": side, "cores": count,
                           "cores_source": (cores or {}).get("source"), "chip": (cores or {}).get("chip")}
    if blocks is None or not count:
        why = "blocks not written (0 or N/A)" if blocks is None else "core count unknown (pass a platform file)"
        return {**out, "decided": False, "reason": why}
    waves = math.ceil(blocks / count)
    efficiency = round(blocks / (waves * count), 6)
    idle = blocks < count
    limited = idle or efficiency < protocol.DIAGNOSIS_WAVE_EFFICIENCY
    reason = (f"{blocks} blocks on {count} {side} cores: {count - blocks} cores idle for the whole launch" if idle
              else f"{blocks} blocks on {count} {side} cores = {waves} waves, wave efficiency {efficiency:.2f} "
                   f"{'<' if limited else '>='} {protocol.DIAGNOSIS_WAVE_EFFICIENCY}")
    return {**out, "decided": True, "waves": waves, "wave_efficiency": efficiency, "idle_cores": idle,
            "limited": limited, "reason": reason}


def spread(values: Sequence[float], source: str, what: str) -> dict[str, Any] | None:
    """``(max - min) / max`` of per-block times (module docstring); None for fewer than two blocks."""
    present = [v for v in values if v is not None]
    if len(present) < 2 or max(present) <= 0:
        return None
    value = (max(present) - min(present)) / max(present)
    return {"spread": round(value, 6), "blocks": len(present), "min": min(present), "max": max(present),
            "severe": value > protocol.DIAGNOSIS_BLOCK_SPREAD, "what": what, "source": source}


def msopprof_spread(pipe_utilization: Mapping[str, Mapping[str, Any]], side: str, source: str) -> dict[str, Any] | None:
    """The per-block spread of ``side``'s core time from :func:`msopprof_csv.pipe_utilization`'s content."""
    column = PER_BLOCK_TIME[side]
    values = (pipe_utilization.get(column) or {}).get("values") or []
    return spread(values, source, f"{column} per block")


def sim_spread(bubbles: Mapping[str, Mapping[str, float]], source: str) -> dict[str, Any] | None:
    """The per-core spread of simulated work (module docstring) from
    :func:`pypto_sim_files.parse_bubble_log`'s cores; None when fewer than two compute cores ran."""
    work = {side: [v["work_us"] for core, v in sorted(bubbles.items()) if core.startswith(prefix)]
            for side, prefix in SIM_CORE_KINDS.items()}
    side = max(sorted(work), key=lambda s: sum(work[s]))
    found = spread(work[side], source, f"Core Total Work Time of the {len(work[side])} {side} cores that ran")
    return {**found, "side": side} if found else None
