"""Op-name discovery before freezing (EV-3): one known case, one launch, no name filter, a record.

Discovery must run before ``PERFORMANCE_CASES.json`` exists, because freezing needs the exact
``Op Name`` it finds. Without a manifest the case comes from the SPEC.md P0 table and the
``test_*`` functions of ``test_<op>.py`` (the same parse :func:`manifest.build_manifest` uses);
a provisional manifest is written to a scratch folder only so the case adapter can select the
case. With a frozen manifest, its case and protocol device are used.

The run: no warm-up, one profiled launch of the case (msprof: the canonical metric group, no
``--kernel-name`` filter), the device environment rule of every subprocess
(:func:`backends.base.runner_env`). The record ``docs/perf/discovery/discovery_NNN.json`` holds
the table rows, the case, backend, device, the sha256 of the runner file and of the sources, and
copies of the raw files (``discovery_NNN/``) with their hashes; it is never overwritten.

:func:`op_name_from_record` is the freeze-side check: the record must be this op's, for the
backend and device being frozen, taken on the current runner file, and the chosen name must be
launched exactly once (``count`` is launches, :mod:`profiler.launches`: a PyPTO launch is three
rows). :func:`launch_from_record` gives what one launch is (rows per launch, task types), frozen
with the name as ``protocol.launch``; formal repeats refuse a table whose launch differs.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import evidence
from .. import fsio
from ..contract import protocol
from ..contract.manifest import (Manifest, build_manifest, find_test_functions, load_manifest, make_protocol,
                                 parse_manifest, parse_spec)
from ..errors import ContractError
from .backends import get_backend
from .backends.base import RunSpec, choose_selector
from .backends.case_adapter import find_runner

DISCOVERY_DIR = "discovery"
KIND = "op_name_discovery"
PLACEHOLDER_OP = "__discovery_no_filter__"
_NAME = re.compile(r"^discovery_(\d{3,})$")


def discovery_dir(op_dir: Path) -> Path:
    return op_dir / protocol.PERF_DIR / DISCOVERY_DIR


def _provisional(root: Path, case_id: str, backend: str, device: int, scratch: Path) -> tuple[Manifest, Path]:
    """A manifest holding every P0 case (from SPEC.md + the test file), written to ``scratch``."""
    spec_path, test_path = root / "SPEC.md", find_runner(root)
    for path, what in ((spec_path, "SPEC.md"),):
        if not path.is_file():
            raise ContractError(path, "-", f"{what} is missing", "complete Stages 1-4 first")
    spec = parse_spec(spec_path.read_text(encoding="utf-8"), str(spec_path))
    tests = find_test_functions(test_path.read_text(encoding="utf-8"), str(test_path))
    ids = [c.id for c in spec.cases if c.p0]
    if case_id not in ids:
        raise ContractError(spec_path, "--case-id", f"unknown P0 case id {case_id!r}", f"use one of {ids}")
    proto = make_protocol(backend=backend, device_id=device, warmup=0, repeats=1, op_name=PLACEHOLDER_OP)
    obj = build_manifest(spec, tests, target_case_ids=ids, selection_mode="all_p0_no_questions", proto=proto,
                         spec_source=str(spec_path), test_source=str(test_path))
    path = scratch / protocol.MANIFEST_NAME
    fsio.write_json(path, obj)
    return parse_manifest(obj, path), path


def _next_name(folder: Path) -> str:
    numbers = [int(m.group(1)) for p in folder.iterdir() if (m := _NAME.match(p.stem))] if folder.is_dir() else []
    return f"discovery_{max(numbers, default=0) + 1:03d}"


def discover(op_dir: str | Path, case_id: str, *, backend: str | None = None,
             device: int | None = None) -> tuple[Path, dict[str, Any]]:
    """Run discovery on one case and write the record; returns (record path, record)."""
    root = Path(op_dir).resolve()
    if not root.is_dir():
        raise ContractError(op_dir, "--op-dir", "is not a directory", "pass the operator directory")
    frozen_path = root / protocol.MANIFEST_NAME
    frozen = load_manifest(frozen_path) if frozen_path.exists() else None
    if frozen is not None and frozen.protocol is not None:
        backend = backend or frozen.protocol.backend
        device = frozen.protocol.device_id if device is None else device
    if backend is None:
        raise ContractError("collect_perf.py", "--backend", "is missing and no manifest is frozen yet",
                            f"pass --backend (one of {list(protocol.BACKENDS)}) and --device for discovery")
    if backend not in protocol.BACKENDS:
        raise ContractError("collect_perf.py", "--backend", f"{backend!r} is not one of {protocol.BACKENDS}",
                            "name the backend to discover with")
    device = 0 if device is None else device
    engine = get_backend(backend)
    engine.check_environment()
    scratch = Path(tempfile.mkdtemp(prefix="perftune_discovery_"))
    try:
        if frozen is not None:
            if case_id not in frozen.case_ids:
                raise ContractError(frozen_path, "--case-id", f"unknown case id {case_id!r}",
                                    f"use one of {list(frozen.case_ids)}")
            man, man_path = frozen, frozen_path
        else:
            man, man_path = _provisional(root, case_id, backend, device, scratch)
        spec = RunSpec(op_dir=root, runner=find_runner(root), manifest=man, device_id=device, warmup=0,
                       repeats=1, op_name=PLACEHOLDER_OP, seed=protocol.SEED,
                       selector=choose_selector(man, man_path), manifest_path=man_path)
        raw = scratch / "raw"
        rows = engine.list_op_names(spec, man.case(case_id), raw)
        return _write_record(root, man, case_id, backend, device, spec, rows, raw)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_record(root: Path, man: Manifest, case_id: str, backend: str, device: int, spec: RunSpec,
                  rows: list[dict[str, Any]], raw: Path) -> tuple[Path, dict[str, Any]]:
    folder = discovery_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    case = man.case(case_id)
    files = evidence.source_files(root, man)
    while True:
        name = _next_name(folder)
        kept = folder / name
        try:
            kept.mkdir()
            break
        except FileExistsError:
            continue
    raw_files = []
    for path in sorted(p for p in raw.rglob("*") if p.is_file()) if raw.is_dir() else []:
        target = kept / path.relative_to(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        raw_files.append(fsio.file_record(target, root))
    record = {"schema_version": 1, "kind": KIND, "created_at": evidence.utc_now(), "backend": backend,
              "device_id": device, "device_env": {protocol.DEVICE_ENV: str(device),
                                                  protocol.VISIBLE_DEVICES_ENV: "unset"},
              "case": {"id": case.id, "shape": case.shape, "dtype": case.dtype,
                       "test_function": case.test_function},
              "launches": 1, "warmup": 0, "name_filter": "none",
              "runner": fsio.file_record(spec.runner, root),
              "executable_sha256": evidence.executable_sha256(root, files),
              "manifest_frozen": (root / protocol.MANIFEST_NAME).is_file(),
              "rows": rows, "raw_files": raw_files}
    path = folder / f"{name}.json"
    fsio.write_json(path, record, overwrite=False)
    return path, record


def op_name_from_record(record_path: str | Path, op_dir: str | Path, *, backend: str, device: int,
                        op_name: str | None) -> str:
    """The op name to freeze, checked against a discovery record (see the module docstring)."""
    root, path = Path(op_dir).resolve(), Path(record_path)
    obj = fsio.read_json(path, what="discovery record")
    if not isinstance(obj, dict) or obj.get("kind") != KIND or not isinstance(obj.get("rows"), list):
        raise ContractError(path, "kind", "is not an op-name discovery record",
                            "pass a docs/perf/discovery/discovery_NNN.json written by collect_perf.py list-op-names")
    for key, want in (("backend", backend), ("device_id", device)):
        if obj.get(key) != want:
            raise ContractError(path, key, f"discovered with {obj.get(key)!r}, freezing {want!r}",
                                "run discovery with the backend and device you freeze")
    runner = obj.get("runner") or {}
    if runner.get("path") and not fsio.record_matches(runner, root):
        raise ContractError(path, "runner", f"{runner.get('path')} changed since discovery",
                            "run collect_perf.py list-op-names again on the current test file")
    names = {row.get("exact_op_name"): row for row in obj["rows"] if isinstance(row, dict)}
    if op_name is None:
        if len(names) != 1:
            raise ContractError(path, "rows", f"{len(names)} op names were discovered {sorted(names)}",
                                "pick one with --op-name (it is checked against this record)")
        op_name = next(iter(names))
    if op_name not in names:
        raise ContractError(path, "rows", f"{op_name!r} is not a discovered op name (have {sorted(names)})",
                            "copy the exact_op_name from the discovery table")
    if names[op_name].get("count") != 1:
        raise ContractError(path, op_name, f"launched {names[op_name].get('count')} times in one case (need 1)",
                            "freeze a name the case launches exactly once")
    return op_name


def launch_from_record(record_path: str | Path | None, op_name: str) -> dict[str, Any] | None:
    """What one launch of ``op_name`` is in a discovery record (rows per launch, task types, basis),
    frozen with the name; None without a record, or for one without it (cpu, or older records)."""
    if record_path is None:
        return None
    rows = fsio.read_json(Path(record_path), what="discovery record").get("rows") or []
    row = next((r for r in rows if isinstance(r, dict) and r.get("exact_op_name") == op_name), None)
    if row is None or not isinstance(row.get("rows_per_launch"), int):
        return None
    return {"rows_per_launch": row["rows_per_launch"], "task_types": list(row.get("task_types") or []),
            "basis": str(row.get("basis") or "none")}
