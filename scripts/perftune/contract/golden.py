"""The golden reference contract ``GOLDEN_PERF_REPORT.json`` (DESIGN §4.2, schema_version 2).

Pure parts: :func:`build_report` (the JSON content), :func:`parse_report` (schema + semantic
checks + exact join with the manifest), :func:`check_settings` and :func:`render_markdown`. I/O
edge: :func:`load_golden`. The collection (timing, the torch_npu profiler region, writing once) is
``measure/golden_timing.py``; the torch_npu ``kernel_details.csv`` reader is
``profiler/kernel_details.py``.

Decisions: ``median_total_us`` must equal the median of ``raw_repeat_e2e_us`` (rel 1e-9) and
``per_iteration_e2e_us`` = median / iterations (iterations is always 1). The cpu path times each
repeat with ``perf_counter_ns`` around one golden call (GC disabled inside; timing scope
``golden_cpu_call``); the torch_npu path sums ``Duration(us)`` over every row of the single
``kernel_details.csv`` of the repeat (scope ``all_golden_npu_kernels``). Inputs are built once per
case by the factory, after seeding with 42, outside every timed region.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import fsio
from . import protocol, schemas
from ..errors import ContractError
from .manifest import Manifest, canonical_dtype, canonical_shape

# pypto-sim: the golden of a simulated operator runs on the host CPU, timed exactly like cpu
TIMING_SCOPES = {"cpu": "golden_cpu_call", "torch_npu": "all_golden_npu_kernels", "pypto-sim": "golden_cpu_call"}
GOLDEN_BACKENDS = tuple(TIMING_SCOPES)
REL_TOL = 1e-9


@dataclass(frozen=True)
class GoldenCase:
    id: str
    shape: str
    dtype: str
    raw_repeat_e2e_us: tuple[float, ...]
    median_total_us: float
    per_iteration_e2e_us: float


@dataclass(frozen=True)
class GoldenReport:
    device_id: int
    warmup: int
    repeats: int
    backend: str
    cases: dict[str, GoldenCase]
    raw: dict[str, Any]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def build_report(*, golden_source: dict[str, Any], manifest_source: dict[str, Any], device_id: int,
                 warmup: int, repeats: int, backend: str, samples: dict[str, list[float]],
                 manifest: Manifest, created_at: str) -> dict[str, Any]:
    """The report dict (pure); ``samples`` maps case id -> raw per-repeat totals (us)."""
    cases = []
    for case in manifest.cases:
        raw = [float(v) for v in samples[case.id]]
        mid = median(raw)
        cases.append({"id": case.id, "shape": case.shape, "dtype": case.dtype, "raw_repeat_e2e_us": raw,
                      "median_total_us": mid, "per_iteration_e2e_us": mid / protocol.GOLDEN_ITERATIONS})
    return {"schema_version": protocol.GOLDEN_SCHEMA_VERSION, "golden_source": golden_source,
            "case_manifest_source": manifest_source, "device_id": device_id,
            "iterations": protocol.GOLDEN_ITERATIONS, "warmup": warmup, "repeats": repeats,
            "seed": protocol.SEED, "timing_scope": TIMING_SCOPES[backend], "backend": backend,
            "aggregation": protocol.GOLDEN_AGGREGATION, "cases": cases, "created_at": created_at}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-6)


def parse_report(obj: Any, manifest: Manifest, source: str = protocol.GOLDEN_REPORT_NAME) -> GoldenReport:
    """Validate a report and join it with the manifest: exact id set, canonical shape/dtype."""
    schemas.validate(obj, "golden_perf_report", source)
    found: dict[str, GoldenCase] = {}
    for index, raw in enumerate(obj["cases"]):
        where = f"cases[{index}]"
        if raw["id"] in found:
            raise ContractError(source, f"{where}.id", f"duplicate id {raw['id']!r}", "recollect the golden report")
        samples = raw["raw_repeat_e2e_us"]
        if len(samples) != obj["repeats"]:
            raise ContractError(source, f"{where}.raw_repeat_e2e_us", f"{len(samples)} values for "
                                f"{obj['repeats']} repeats", "recollect the golden report")
        if not _close(raw["median_total_us"], median(samples)) or not _close(
                raw["per_iteration_e2e_us"], raw["median_total_us"] / obj["iterations"]):
            raise ContractError(source, f"{where}.median_total_us", "does not equal the median of the raw "
                                "repeats (or per-iteration != median / iterations)", "recollect the golden report")
        found[raw["id"]] = GoldenCase(raw["id"], raw["shape"], raw["dtype"], tuple(samples),
                                      raw["median_total_us"], raw["per_iteration_e2e_us"])
    missing, extra = sorted(set(manifest.case_ids) - set(found)), sorted(set(found) - set(manifest.case_ids))
    if missing or extra:
        raise ContractError(source, "cases[].id", f"id set differs from the manifest (missing {missing}, "
                            f"extra {extra})", "recollect the golden report for the frozen manifest")
    for case in manifest.cases:
        _same_case(case, found[case.id], source)
    return GoldenReport(obj["device_id"], obj["warmup"], obj["repeats"], obj["backend"], found, obj)


def _same_case(case, golden: GoldenCase, source: str) -> None:
    try:
        shape, dtype = canonical_shape(golden.shape), canonical_dtype(golden.dtype)
    except ValueError as exc:
        raise ContractError(source, f"{case.id}", str(exc), "recollect the golden report") from None
    if shape != case.shape or dtype != case.dtype:
        raise ContractError(source, f"{case.id}.shape/dtype", f"{shape} {dtype} != manifest {case.shape} "
                            f"{case.dtype}", "recollect the golden report for the frozen manifest")


def load_golden(op_dir: str | Path, manifest: Manifest) -> GoldenReport | None:
    """The joined golden report of ``op_dir``, or None when none was collected.

    The golden source and the manifest must still have the recorded identities.
    """
    root = Path(op_dir)
    path = root / protocol.GOLDEN_REPORT_NAME
    if not path.exists() and not path.is_symlink():
        return None
    obj = fsio.read_json(path, what="golden report")
    report = parse_report(obj, manifest, str(path))
    for key in ("golden_source", "case_manifest_source"):
        if not fsio.record_matches(obj[key], root):
            raise ContractError(path, key, f"{obj[key]['path']} changed since the golden collection",
                                "restore the frozen file; the golden contract is frozen")
    return report


def render_markdown(report: dict[str, Any]) -> str:
    """Human view of the report (the JSON stays the only machine truth)."""
    lines = [f"# Golden performance reference ({report['backend']})", "",
             f"- device: {report['device_id']}", f"- iterations: {report['iterations']}",
             f"- warmup: {report['warmup']}", f"- repeats: {report['repeats']}", f"- seed: {report['seed']}",
             f"- timing scope: {report['timing_scope']}", f"- aggregation: {report['aggregation']}", "",
             "| case | shape | dtype | median E2E (us) |", "|---|---|---|---|"]
    lines += [f"| {c['id']} | {c['shape']} | {c['dtype']} | {c['median_total_us']:.3f} |" for c in report["cases"]]
    lines += ["", "## Raw repeats (us)", ""]
    lines += [f"- {c['id']}: " + ", ".join(f"{v:.3f}" for v in c["raw_repeat_e2e_us"]) for c in report["cases"]]
    lines += ["", "Input preparation and warm-up are outside every timed region. This file is for "
              "humans; only GOLDEN_PERF_REPORT.json is machine truth.", ""]
    return "\n".join(lines)


def check_settings(*, device_id: int, warmup: int, repeats: int, seed: int, backend: str) -> None:
    if seed != protocol.SEED:
        raise ContractError("collect_golden_reference.py", "--seed", f"{seed} is not {protocol.SEED}",
                            "the frozen seed is 42")
    if device_id < 0 or warmup < 0 or repeats < 1:
        raise ContractError("collect_golden_reference.py", "--device/--warmup/--repeats",
                            "device and warmup must be >= 0 and repeats >= 1", "fix the value")
    if backend not in GOLDEN_BACKENDS:
        raise ContractError("collect_golden_reference.py", "--backend", f"unknown {backend!r}",
                            f"use one of {list(GOLDEN_BACKENDS)}")
