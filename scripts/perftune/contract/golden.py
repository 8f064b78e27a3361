"""The golden reference contract ``GOLDEN_PERF_REPORT.json`` (DESIGN §4.2, schema_version 2).

Pure parts: :func:`build_report` (the JSON content), :func:`parse_report` (schema + semantic
checks + exact join with the manifest), :func:`parse_kernel_details` (one torch_npu
``kernel_details.csv`` -> the repeat's total) and :func:`render_markdown`. I/O edges:
:func:`load_golden`, :func:`collect` (snapshot identities, time, verify, write once).

Decisions: ``median_total_us`` must equal the median of ``raw_repeat_e2e_us`` (rel 1e-9) and
``per_iteration_e2e_us`` = median / iterations (iterations is always 1). The cpu path times each
repeat with ``perf_counter_ns`` around one golden call (GC disabled inside; timing scope
``golden_cpu_call``); the torch_npu path sums ``Duration(us)`` over every row of the single
``kernel_details.csv`` of the repeat (scope ``all_golden_npu_kernels``). Inputs are built once per
case by the factory, after seeding with 42, outside every timed region.
"""

from __future__ import annotations

import csv
import gc
import importlib.util
import io
import math
import os
import random
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import fsio
from . import protocol, schemas
from ..errors import ContractError, EnvError
from .manifest import Manifest, canonical_dtype, canonical_shape, load_manifest

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


_ALIASES = {"duration(us)": "duration(us)", "task duration(us)": "duration(us)",
            "device_id": "device_id", "device id": "device_id", "deviceid": "device_id"}


def _header(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).strip().lstrip("\ufeff").lower()
    return _ALIASES.get(text, text)


def parse_kernel_details(text: str, device_id: int, source: str = "kernel_details.csv") -> float:
    """Sum of ``Duration(us)`` over all rows of one repeat's ``kernel_details.csv`` (pure).

    Needs ``Device_id`` and ``Duration(us)`` (aliases tolerated); every row must belong to
    ``device_id`` and have a finite duration > 0; zero rows is an error. BOM/CRLF tolerated.
    """
    try:
        rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline="")))
    except csv.Error as exc:
        raise ContractError(source, "-", f"malformed CSV: {exc}", "use the torch_npu kernel_details.csv") from None
    if not rows:
        raise ContractError(source, "header", "empty CSV", "re-run the golden collection")
    header = [_header(h) for h in rows[0]]
    for column in ("device_id", "duration(us)"):
        if header.count(column) != 1:
            raise ContractError(source, column, f"column found {header.count(column)} times (need 1)",
                                "use the torch_npu kernel_details.csv")
    dev, dur = header.index("device_id"), header.index("duration(us)")
    total, count = 0.0, 0
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ContractError(source, f"line {number}", f"{len(row)} cells for {len(header)} columns", "re-run")
        try:
            device, value = int(row[dev].strip()), float(row[dur].strip())
        except ValueError:
            raise ContractError(source, f"line {number}", "device or duration is not a number",
                                "N/A is missing, never zero: re-run the collection") from None
        if device != device_id:
            raise ContractError(source, f"line {number}.Device_id", f"{device} is not device {device_id}",
                                "profile only the frozen physical device")
        if not fsio.is_finite_positive(value):
            raise ContractError(source, f"line {number}.Duration(us)", f"{row[dur]} is not finite and > 0", "re-run")
        total, count = total + value, count + 1
    if count == 0:
        raise ContractError(source, "rows", "no kernel rows", "the golden launched no NPU kernel")
    return total


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


def load_callable(path: Path, name: str, flag: str) -> Callable[..., Any]:
    """Import ``path`` (its folder on sys.path) and return its function ``name``."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ContractError(path, "-", "cannot import the golden module", "pass a .py file")
    module = sys.modules.get(path.stem) or importlib.util.module_from_spec(spec)
    if path.stem not in sys.modules:
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    function = getattr(module, name, None)
    if not callable(function):
        raise ContractError(path, flag, f"{name!r} is not a function of the golden module", "name an existing function")
    return function


def seed_all(seed: int = protocol.SEED) -> None:
    random.seed(seed)
    import numpy
    numpy.random.seed(seed)


def time_cpu(function: Callable[..., Any], args: tuple, kwargs: dict, warmup: int, repeats: int) -> list[float]:
    """cpu path: ``warmup`` untimed calls, then one ``perf_counter_ns`` sample per repeat (us)."""
    for _ in range(warmup):
        function(*args, **kwargs)
    out = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            function(*args, **kwargs)
            stop = time.perf_counter_ns()
        finally:
            gc.enable()
        out.append((stop - start) / 1000)
    return out


def time_torch_npu(function: Callable[..., Any], args: tuple, kwargs: dict, warmup: int, repeats: int,
                   device_id: int, prof_dir: Path) -> list[float]:
    """torch_npu path: one profiler region per repeat; the repeat total comes from its CSV."""
    torch, torch_npu = import_torch_npu(device_id)
    for _ in range(warmup):
        function(*args, **kwargs)
        torch.npu.synchronize()
    out = []
    for index in range(1, repeats + 1):
        repeat_dir = prof_dir / f"repeat-{index:03d}"
        config = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)
        with torch_npu.profiler.profile(
                activities=[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU],
                schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
                on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(str(repeat_dir)),
                experimental_config=config) as prof:
            function(*args, **kwargs)
            torch.npu.synchronize()
            prof.step()
        found = sorted(repeat_dir.rglob("kernel_details.csv"))
        if len(found) != 1:
            raise ContractError(repeat_dir, "kernel_details.csv", f"{len(found)} files (need exactly 1)", "re-run")
        out.append(parse_kernel_details(found[0].read_text(encoding="utf-8-sig"), device_id, str(found[0])))
    return out


def import_torch_npu(device_id: int):
    """torch + torch_npu with the device rule applied; EnvError when unavailable."""
    os.environ.pop(protocol.VISIBLE_DEVICES_ENV, None)
    os.environ[protocol.DEVICE_ENV] = str(device_id)
    try:
        import torch
        import torch_npu
    except ImportError as exc:
        raise EnvError(exc.name or "torch_npu", "-", "torch/torch_npu is not importable",
                       "install torch and torch_npu, or use --backend cpu") from None
    if not torch.npu.is_available() or device_id >= torch.npu.device_count():
        raise EnvError(f"npu:{device_id}", "--device", "NPU device is not available", "check npu-smi info")
    torch.npu.set_device(f"npu:{device_id}")
    return torch, torch_npu


def _factory_cases(produced: Any, manifest: Manifest, source: str) -> dict[str, tuple[tuple, dict]]:
    """Check the factory result ``[(case_id, args, kwargs)]`` against the manifest id set."""
    if not isinstance(produced, (list, tuple)):
        raise ContractError(source, "--factory", "did not return a list of (case_id, args, kwargs)", "fix the factory")
    out: dict[str, tuple[tuple, dict]] = {}
    for item in produced:
        if not (isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], (list, tuple)) and isinstance(item[2], dict)):
            raise ContractError(source, "--factory", "an entry is not (case_id, args, kwargs)", "fix the factory")
        if item[0] in out:
            raise ContractError(source, "--factory", f"duplicate case id {item[0]!r}", "return each case once")
        out[item[0]] = (tuple(item[1]), dict(item[2]))
    missing, extra = sorted(set(manifest.case_ids) - set(out)), sorted(set(out) - set(manifest.case_ids))
    if missing or extra:
        raise ContractError(source, "--factory", f"case ids differ from the manifest (missing {missing}, "
                            f"extra {extra})", "build exactly the frozen manifest cases")
    return out


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


def collect(golden_path: Path, *, function: str, factory: str, manifest_path: Path, output_dir: Path,
            device_id: int, warmup: int, repeats: int, seed: int, backend: str,
            created_at: str) -> tuple[Path, dict[str, Any]]:
    """Time the golden for every manifest case and write the report once (JSON + .md)."""
    check_settings(device_id=device_id, warmup=warmup, repeats=repeats, seed=seed, backend=backend)
    out = Path(output_dir) / protocol.GOLDEN_REPORT_NAME
    if out.exists() or out.is_symlink():
        raise ContractError(out, "-", "a golden report already exists and is never overwritten",
                            "the golden contract is collected once; keep it")
    manifest = load_manifest(manifest_path)
    golden_before = fsio.file_record(golden_path, output_dir)
    manifest_before = {**fsio.file_record(manifest_path, output_dir), "schema_version": manifest.schema_version}
    if backend == "torch_npu":
        import_torch_npu(device_id)
    golden_fn = load_callable(Path(golden_path), function, "--function")
    seed_all()
    inputs = _factory_cases(load_callable(Path(golden_path), factory, "--factory")(
        [dict(c) for c in manifest.raw["cases"]]), manifest, str(golden_path))
    samples = {}
    for case in manifest.cases:
        args, kwargs = inputs[case.id]
        if backend in ("cpu", "pypto-sim"):
            samples[case.id] = time_cpu(golden_fn, args, kwargs, warmup, repeats)
        else:
            prof = Path(output_dir) / "prof" / "golden-reference" / fsio.sha256_bytes(case.id.encode())[:12]
            samples[case.id] = time_torch_npu(golden_fn, args, kwargs, warmup, repeats, device_id, prof)
    if fsio.file_record(golden_path, output_dir) != golden_before or \
            fsio.file_record(manifest_path, output_dir) != {k: manifest_before[k] for k in golden_before}:
        raise ContractError(golden_path, "-", "golden source or manifest changed during the collection",
                            "restore the frozen files and collect again")
    report = build_report(golden_source={**golden_before, "function": function, "factory": factory},
                          manifest_source=manifest_before, device_id=device_id, warmup=warmup,
                          repeats=repeats, backend=backend, samples=samples, manifest=manifest,
                          created_at=created_at)
    parse_report(report, manifest, str(out))
    fsio.write_text(out.with_name(protocol.GOLDEN_REPORT_MD), render_markdown(report))
    fsio.write_json(out, report, overwrite=False)
    return out, report
