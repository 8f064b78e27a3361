"""Bound routing of one op_summary row: which pipe family the next experiment should look at.

Pure (DESIGN §6, STYLE habit 7). Routing is a *diagnostic*, never a verdict: every result says
``completion_eligible: false``, ``roofline_terminal_status: insufficient_evidence`` and
``pipeline_overlap_status: unverified``; only terminal evidence (roofline, timeline) can close a case.

Rule (thresholds from :mod:`perftune.contract.protocol`):

1. Primary core: :func:`perftune.profiler.core_types.primary_core` (the rule's one owner): the side
   with the larger positive time (ties go to aic); a missing time is not 0, and a ``0.0`` written
   next to positive ``*_total_cycles`` is missing (CANN 9.0.0 without frequency data); with no
   positive time, the only side that ran cycles. Else no primary core: ``insufficient_evidence``.
2. Families of the primary core (ratio columns, fractions in [0, 1]):
   aic: compute = mac, cube; data_movement = mte1, mte2, mte3, fixpipe; scalar = scalar.
   aiv: compute = vec; data_movement = mte2, mte3; scalar = scalar.
   Missing ratios are skipped; a ratio outside [0, 1], non-finite or non-numeric is a ContractError.
3. A family triggers when one of its ratios is > ``BOUND_ROUTE_HIGH`` (0.80), or its maximum is the
   overall maximum (ties included) and > ``BOUND_ROUTE_MAX`` (0.70). Both comparisons are strict
   (:func:`perftune.profiler.diagnosis.triggers`, the rule's one owner; the per-operator diagnosis
   over all launches applies it per pipe).
4. Label: no ratio present → ``insufficient_evidence``; nothing triggered → ``no_dominant_pipe``;
   more than one family → ``mixed``; else ``<family>_candidate``.

Times must be finite and >= 0 (a negative or text time is a ContractError).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..contract import protocol
from ..profiler import core_types, diagnosis
from ..errors import ContractError

AIC_TIME = "aicore_time(us)"
AIV_TIME = "aiv_time(us)"
CORE_COLUMNS = (*core_types.TIME.values(), *core_types.CYCLES.values())  # what primary_core reads
FAMILY_ORDER = ("compute", "data_movement", "scalar")
FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "aic": {
        "compute": ("aic_mac_ratio", "aic_cube_ratio"),
        "data_movement": ("aic_mte1_ratio", "aic_mte2_ratio", "aic_mte3_ratio", "aic_fixpipe_ratio"),
        "scalar": ("aic_scalar_ratio",),
    },
    "aiv": {
        "compute": ("aiv_vec_ratio",),
        "data_movement": ("aiv_mte2_ratio", "aiv_mte3_ratio"),
        "scalar": ("aiv_scalar_ratio",),
    },
}
ROUTE_KIND = "op_summary_ratio_route"


def _number(row: Mapping[str, Any], column: str, source: str) -> float | None:
    value = row.get(column)
    if value is None or (isinstance(value, str) and value.strip() in ("", "N/A")):
        return None
    if isinstance(value, bool):
        raise ContractError(source, column, f"{value!r} is not a number", "pass the CSV cell value")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ContractError(source, column, f"{value!r} is not a number", "re-export the profiler output") from None
    if math.isnan(number):
        return None
    if not math.isfinite(number):
        raise ContractError(source, column, f"{value!r} is not finite", "re-export the profiler output")
    return number


def primary_core(row: Mapping[str, Any], source: str = "-") -> str | None:
    """``aic``/``aiv`` by :func:`core_types.primary_core`; None without a positive time or a lone side's cycles."""
    return primary_core_basis(row, source)[0]


def primary_core_basis(row: Mapping[str, Any], source: str = "-") -> tuple[str | None, str]:
    values = {}
    for column in (*core_types.TIME.values(), *core_types.CYCLES.values()):
        value = _number(row, column, source)
        if value is not None and value < 0:
            raise ContractError(source, column, f"negative value {value}", "re-export the profiler output")
        values[column] = value
    times, cycles = core_types.values_of(values.get)
    return core_types.primary_core(times, cycles)


def family_ratios(row: Mapping[str, Any], core: str, source: str = "-") -> dict[str, dict[str, float]]:
    """The present ratios of ``core``'s families, each checked to lie in [0, 1]."""
    found: dict[str, dict[str, float]] = {}
    for family in FAMILY_ORDER:
        found[family] = {}
        for column in FAMILIES[core][family]:
            value = _number(row, column, source)
            if value is None:
                continue
            if not 0.0 <= value <= 1.0:
                raise ContractError(source, column, f"ratio {value} outside [0, 1]",
                                    "ratios are fractions; check the msprof version and units")
            found[family][column] = value
    return found


def _label(present: bool, triggered: list[str]) -> str:
    if not present:
        return "insufficient_evidence"
    if not triggered:
        return "no_dominant_pipe"
    if len(triggered) > 1:
        return "mixed"
    return f"{triggered[0]}_candidate"


def route(row: Mapping[str, Any], source: str = "-") -> dict[str, Any]:
    """The bound route of one op_summary row (a mapping column → number/None)."""
    core, basis = primary_core_basis(row, source)
    ratios = family_ratios(row, core, source) if core else {f: {} for f in FAMILY_ORDER}
    maxima = {f: (max(values.values()) if values else None) for f, values in ratios.items()}
    present = [m for m in maxima.values() if m is not None]
    triggered = diagnosis.triggers(maxima)
    label = _label(bool(present), triggered)
    return {
        "kind": ROUTE_KIND,
        "primary_core": core,
        "primary_core_basis": basis,
        "ratios": {column: value for values in ratios.values() for column, value in sorted(values.items())},
        "family_max": maxima,
        "triggered_families": triggered,
        "scalar_route_triggered": "scalar" in triggered,
        "label": label,
        "thresholds": {"high": protocol.BOUND_ROUTE_HIGH, "max": protocol.BOUND_ROUTE_MAX},
        "completion_eligible": False,
        "roofline_terminal_status": "insufficient_evidence",
        "pipeline_overlap_status": "unverified",
    }
