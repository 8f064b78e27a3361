"""Roofline terminal evidence of one case: necessary work and bytes against platform peaks (pure).

A case's *necessary* work is what the semantics require, never what an implementation happens
to do. It comes only from the operator: SPEC.md's necessary-work section, frozen into the manifest
as ``work_model`` and evaluated per case by :func:`perftune.contract.work_model.case_work`
(arithmetic and transcendental operations by operation class, bytes of each tensor read or written
once). There is no table keyed by operator name. Units are SI (op/s, B/s, µs).

Floors: ``compute_floor = arithmetic / arithmetic_peak + transcendental / transcendental_peak
+ matmul / matmul_peak`` (a matrix product's multiply-adds run on the cube at its own peak; the
transcendental and matmul peaks fall back to the arithmetic peak when the platform has none, and the
result says so); ``memory_floor = bytes / memory_peak``; ``roof = max(compute, memory)``;
``attained_fraction = roof / measured`` (1.0 = at the roof).

Status rules (first match wins; thresholds are this module's constants):
1. ``scalar_bound`` (residual): fixed per-call overhead, measured as the time of the same kernel on
   a tiny input, is more than ``SCALAR_DOMINANT_SHARE`` (50 %) of the case time.
2. Ideal, when ``attained_fraction >= MEANINGFUL_FRACTION`` (25 %: the binding roof explains at
   least a quarter of the time, i.e. the case runs within 4x of its floor): ``compute_bound`` when compute_floor / memory_floor >= ``BINDING_RATIO`` (2.0, the
   upstream example's C/M criterion), ``data_movement_bound`` when it is <= 1 / BINDING_RATIO,
   else ``balanced_compute_movement``.
3. ``wait_bound`` (residual): neither a roof nor fixed overhead explains the time; the core spends
   it outside the necessary work (stalls, allocation and page faults, non-vector conversion paths).
   Only where the backend can show waits: on cpu (no asynchronous pipes) the residual is
   ``unattributed_residual`` with that reason, never ``wait_bound``.
An attained fraction above ``1 + ATTAINED_TOLERANCE`` (1.2) is impossible under a correct model and
a correct roof: ``stage5_check.py`` P8 reports it as ``performance_evidence_invalid`` with the
numbers (the tolerance covers the probe's own best-of-7 noise on a shared host).
A missing measured time or fixed-overhead share is never turned into zero: the status is then
``insufficient_evidence`` with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..contract import work_model
from ..errors import ContractError

SCALAR_DOMINANT_SHARE = 0.5
MEANINGFUL_FRACTION = 0.25
BINDING_RATIO = 2.0
PEAK_STATUSES = ("measured", "vendor_published", "unverified_external")
PEAK_KEYS = ("arithmetic_ops_per_s", "transcendental_ops_per_s", "matmul_ops_per_s", "memory_bytes_per_s")
ATTAINED_TOLERANCE = 0.2


@dataclass(frozen=True)
class Peak:
    value: float
    unit: str
    status: str
    source: str


@dataclass(frozen=True)
class Platform:
    platform_id: str
    backend: str
    peaks: dict[str, Peak]

    def peak(self, key: str) -> Peak | None:
        return self.peaks.get(key)


@dataclass(frozen=True)
class CaseWork:
    case_id: str
    arithmetic_ops: int
    transcendental_ops: int
    bytes: int
    matmul_ops: int = 0

    @property
    def compute_ops(self) -> int:
        return self.arithmetic_ops + self.transcendental_ops + self.matmul_ops


def parse_platform(obj: dict[str, Any], source: str = "-") -> Platform:
    """A :class:`Platform` from a schema-valid platform dict; refuses non-finite or non-positive peaks."""
    peaks = {}
    for key, raw in obj["peaks"].items():
        value = raw["value"]
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ContractError(source, f"peaks.{key}.value", f"{value!r} is not a finite positive number",
                                "record the measured or published peak in SI units")
        peaks[key] = Peak(float(value), raw["unit"], raw["status"], raw["source"])
    for key in ("arithmetic_ops_per_s", "memory_bytes_per_s"):
        if key not in peaks:
            raise ContractError(source, f"peaks.{key}", "is missing", "run terminal_evidence.py probe or add it")
    return Platform(obj["platform_id"], obj["backend"], peaks)


def case_work(case_id: str, shape: str, dtype: str, model: dict[str, Any], source: str = "work_model") -> CaseWork:
    """Necessary work of one case from the frozen model, its canonical shape (named groups allowed)
    and dtype."""
    work = work_model.case_work(model, case_id, shape, dtype, source)
    if work["arithmetic_ops"] + work["transcendental_ops"] + work["matmul_ops"] <= 0:
        raise ContractError(source, f"work_model.operations (case {case_id})", "declares no work",
                            "declare the operations the semantics require")
    return CaseWork(case_id, work["arithmetic_ops"], work["transcendental_ops"], work["bytes"], work["matmul_ops"])


def floors_us(work: CaseWork, platform: Platform) -> dict[str, Any]:
    """Compute and memory floors in µs, and which peaks they used."""
    arith = platform.peaks["arithmetic_ops_per_s"]
    trans, cube = platform.peak("transcendental_ops_per_s"), platform.peak("matmul_ops_per_s")
    compute_s = (work.arithmetic_ops / arith.value + work.transcendental_ops / (trans or arith).value
                 + work.matmul_ops / (cube or arith).value)
    memory_s = work.bytes / platform.peaks["memory_bytes_per_s"].value
    return {"compute_floor_us": compute_s * 1e6, "memory_floor_us": memory_s * 1e6,
            "transcendental_rate": "measured_peak" if trans else "arithmetic_peak_fallback",
            "matmul_rate": "matmul_peak" if cube else "arithmetic_peak_fallback"}


def _ideal_status(ratio: float) -> tuple[str, str]:
    if ratio >= BINDING_RATIO:
        return "compute_bound", f"compute floor is {ratio:.2f}x the memory floor (>= {BINDING_RATIO})"
    if ratio <= 1 / BINDING_RATIO:
        return "data_movement_bound", f"memory floor is {1 / ratio:.2f}x the compute floor (>= {BINDING_RATIO})"
    return "balanced_compute_movement", (f"compute/memory floor ratio {ratio:.2f} is within "
                                         f"[{1 / BINDING_RATIO}, {BINDING_RATIO}]")


def classify(attained: float | None, ratio: float, fixed_share: float | None,
             waits_observable: bool = True) -> tuple[str, str]:
    """The roofline status and its reason (rules 1-3 of the module docstring). ``waits_observable``
    False (cpu: no asynchronous pipes, no wait evidence): the residual is never ``wait_bound``."""
    if attained is None:
        return "insufficient_evidence", "no measured time for this case"
    if fixed_share is None:
        return "insufficient_evidence", "fixed per-call overhead was not measured"
    if fixed_share > SCALAR_DOMINANT_SHARE:
        return "scalar_bound", (f"fixed per-call overhead is {fixed_share:.1%} of the case time "
                                f"(> {SCALAR_DOMINANT_SHARE:.0%})")
    if attained >= MEANINGFUL_FRACTION:
        status, why = _ideal_status(ratio)
        return status, f"attained {attained:.1%} of the roof (>= {MEANINGFUL_FRACTION:.0%}); {why}"
    if not waits_observable:
        return "unattributed_residual", (f"attained only {attained:.2%} of the roof (< {MEANINGFUL_FRACTION:.0%}) "
                                         f"and fixed overhead is {fixed_share:.1%}; this backend has no pipe or wait "
                                         "evidence, so the residual time is not attributed (never wait_bound)")
    return "wait_bound", (f"attained only {attained:.2%} of the roof (< {MEANINGFUL_FRACTION:.0%}) and fixed "
                          f"overhead is {fixed_share:.1%}: the time goes outside the necessary work "
                          "(stalls, allocation, non-vector conversion paths)")


def roofline(work: CaseWork, measured_us: float | None, platform: Platform,
             fixed_share: float | None, waits_observable: bool = True) -> dict[str, Any]:
    """The ``roofline_terminal`` block of one case (numbers rounded for stable JSON)."""
    floors = floors_us(work, platform)
    compute_us, memory_us = floors["compute_floor_us"], floors["memory_floor_us"]
    roof_us = max(compute_us, memory_us)
    ok = measured_us is not None and math.isfinite(measured_us) and measured_us > 0
    attained = roof_us / measured_us if ok else None
    ratio = compute_us / memory_us
    status, reason = classify(attained, ratio, fixed_share, waits_observable)
    seconds = measured_us / 1e6 if ok else None
    return {
        "status": status, "reason": reason,
        "arithmetic_ops": work.arithmetic_ops, "transcendental_ops": work.transcendental_ops,
        "matmul_ops": work.matmul_ops, "necessary_bytes": work.bytes,
        "arithmetic_intensity_ops_per_byte": _r(work.compute_ops / work.bytes),
        "compute_floor_us": _r(compute_us), "memory_floor_us": _r(memory_us), "roof_us": _r(roof_us),
        "binding_roof": "compute" if compute_us >= memory_us else "memory",
        "compute_to_memory_ratio": _r(ratio), "measured_us": _r(measured_us) if ok else None,
        "attained_fraction": _r(attained) if ok else None,
        "attained_ops_per_s": _r(work.compute_ops / seconds) if ok else None,
        "attained_bytes_per_s": _r(work.bytes / seconds) if ok else None,
        "transcendental_rate": floors["transcendental_rate"], "matmul_rate": floors["matmul_rate"],
        "thresholds": {"scalar_dominant_share": SCALAR_DOMINANT_SHARE, "meaningful_fraction": MEANINGFUL_FRACTION,
                       "binding_ratio": BINDING_RATIO, "attained_tolerance": ATTAINED_TOLERANCE},
    }


def _r(value: float) -> float:
    """Six significant digits: stable JSON without hiding the magnitude."""
    return float(f"{value:.6g}")
