"""Timing the golden reference once per repeat and writing ``GOLDEN_PERF_REPORT.json`` once (DESIGN §4.2).

The report contract (content, parse, join with the manifest) is :mod:`contract.golden`; this module
is the collection: import the golden module and its case factory (:func:`load_callable`), seed 42,
time each repeat (cpu / pypto-sim: ``perf_counter_ns`` around one call, GC disabled; torch_npu: one
profiler region per repeat, its ``kernel_details.csv`` read by :mod:`profiler.kernel_details`),
check that the golden source and manifest did not change, write the report (never overwritten).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..contract.golden_source import load_callable, seed_all
from ..contract.golden import build_report, check_settings, parse_report, render_markdown
from ..contract.manifest import Manifest, load_manifest
from ..errors import ContractError, EnvError
from ..profiler import kernel_details



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
        text = found[0].read_text(encoding="utf-8-sig")
        out.append(kernel_details.read_kernel_details(text, device_id, str(found[0])).total_us)
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
