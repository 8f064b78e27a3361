"""``docs/perf/terminal_evidence.json``: roofline, pipeline and scalar evidence per P0 case (P8).

Inputs, all recomputed or measured, never agent-written: the frozen manifest (cases, shapes,
dtypes, aggregation, and the operator's ``work_model`` from SPEC.md: the only source of necessary
work and bytes), one complete formal round loaded through :func:`evidence.load_round`
(samples recomputed from raw files), a platform file (``schemas/platform``), and for the cpu
backend a fresh fixed-overhead measurement of the *current* sources (refused when they differ from
the round's ``executable_sha256``, so overhead and time describe the same code).

Decisions (DESIGN §8 P8 left them open):
- cpu pipeline evidence is ``not_applicable_with_dag``: a numpy kernel is a single-threaded
  sequence of ufunc passes, each pass finishes before the next starts; there are no asynchronous
  pipes (no MTE/vector/cube queues) and therefore no legal overlap edge to realise.
- msprof: pipeline, scalar and the roofline's attained side come from the round's profiler tables
  and the per-case instruction timeline (:mod:`terminal.profiler`); the platform file must match the
  probed chip (:mod:`measure.devices`).
- scalar dominance on cpu = fixed per-call overhead share > 50 % of the case's aggregate time.
- A cpu platform file defaults to ``docs/perf/platform_cpu.json`` of the op dir (written by
  ``terminal_evidence.py probe``); msprof needs an explicit ``--platform`` (never apply one
  product's constants to another).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..measure import evidence
from .. import fsio
from ..contract import protocol, schemas
from . import profiler
from . import roofline
from ..contract import work_model
from . import sim_evidence
from ..measure.backends.base import runner_env
from ..measure.backends.case_adapter import find_runner
from ..errors import ContractError, EnvError
from ..contract.manifest import Manifest, load_manifest

OUTPUT_NAME = "terminal_evidence.json"
PLATFORM_CPU_NAME = "platform_cpu.json"
CPU_PIPELINE_GROUNDS = [
    "backend cpu: the kernel is a single-threaded sequence of numpy ufunc passes; each pass completes "
    "before the next one starts",
    "no asynchronous pipes (no MTE/vector/cube queues) exist, so the work DAG has no legal overlap edge",
]


def load_platform(path: Path, backend: str) -> tuple[roofline.Platform, dict[str, Any]]:
    obj = fsio.read_json(path, what="platform file")
    schemas.validate(obj, "platform", path)
    platform = roofline.parse_platform(obj, str(path))
    if platform.backend != backend:
        raise ContractError(path, "backend", f"platform is for {platform.backend}, the round is {backend}",
                            "pass the platform file of the measured backend")
    return platform, obj


def frozen_work_model(manifest: Manifest, source: Path) -> dict[str, Any]:
    """The operator's necessary-work model as frozen in the manifest (never looked up by name)."""
    model = manifest.raw.get("work_model")
    if not model:
        raise ContractError(source, "work_model", "is missing: SPEC.md had no 'Necessary work' section at freeze",
                            "declare it (docs/operator-format.md); re-freeze is possible only before the first round")
    return model


def measure_fixed_overhead(op_dir: Path, manifest: Manifest, device_id: int) -> dict[str, dict]:
    """Run ``perftune.terminal.probe`` once in a subprocess for every case; rows by case id."""
    runner = find_runner(op_dir)
    with tempfile.TemporaryDirectory(prefix="terminal_probe_") as scratch:
        output = Path(scratch) / "overhead.json"
        argv = [sys.executable, "-m", "perftune.terminal.probe", "--op-dir", str(op_dir), "--runner",
                str(runner), "--manifest", str(op_dir / protocol.MANIFEST_NAME), "--op-name",
                manifest.protocol.op_name, "--output", str(output)]
        for case in manifest.cases:
            argv += ["--case-id", case.id]
        try:
            proc = subprocess.run(argv, cwd=op_dir, env=runner_env(device_id), capture_output=True,
                                  text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvError(runner, "-", f"overhead probe could not run: {exc}", "check the interpreter") from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            raise ContractError(runner, "overhead probe", f"exit {proc.returncode}: {tail}",
                                "make the delivered tests pass first")
        rows = fsio.read_json(output, what="overhead probe output")["cases"]
    return {row["case_id"]: row for row in rows}


def cpu_overhead(root: Path, manifest: Manifest, rnd: evidence.RoundEvidence) -> dict[str, dict]:
    """Fixed-overhead rows of the current sources, refused unless they are the round's code."""
    current = evidence.executable_sha256(root, evidence.source_files(root, manifest))
    if current != rnd.collection["executable_sha256"]:
        raise ContractError(rnd.path / "collection.json", "executable_sha256",
                            "the current sources are not the code this round measured",
                            "apply the measured version or build for a round of the current code")
    return measure_fixed_overhead(root, manifest, manifest.protocol.device_id)


def scalar_block(row: dict[str, Any] | None, case_us: float) -> dict[str, Any]:
    """``scalar_evidence`` of one cpu case from its fixed-overhead row."""
    overhead = row.get("fixed_overhead_us") if row else None
    if overhead is None:
        problem = row.get("problem", "not measured") if row else "not measured"
        return {"dominant": "unknown", "fixed_overhead_us": None, "case_time_us": case_us, "share": None,
                "grounds": [f"fixed per-call overhead unavailable: {problem}"]}
    share = overhead / case_us
    dominant = share > roofline.SCALAR_DOMINANT_SHARE
    return {"dominant": dominant, "fixed_overhead_us": round(overhead, 3), "case_time_us": case_us,
            "share": float(f"{share:.6g}"), "grounds": [
                f"same kernel on a cut of its arguments that keeps the leading (row) size {row['tiny_shapes']} "
                f"takes {overhead:.3f} us (median of {row['calls']} calls) = fixed per-call and per-row overhead",
                f"the case takes {case_us:.3f} us (round aggregate): overhead share {share:.2%} "
                f"{'>' if dominant else '<='} {roofline.SCALAR_DOMINANT_SHARE:.0%}"]}


def _case_block(case, samples: list[float], manifest: Manifest, model: dict[str, Any], platform, platform_ref,
                overhead_row, case_dir: Path | None = None) -> dict[str, Any]:
    case_us, method = evidence.aggregate(samples, manifest.protocol.aggregation)
    case_us = round(case_us, 3)
    work = roofline.case_work(case.id, case.shape, case.dtype, model, protocol.MANIFEST_NAME)
    extra: dict[str, Any] = {}
    if manifest.protocol.backend == "cpu":
        scalar = scalar_block(overhead_row, case_us)
        pipeline = {"status": "not_applicable_with_dag", "grounds": CPU_PIPELINE_GROUNDS}
    elif manifest.protocol.backend == "pypto-sim":
        pipeline, scalar = sim_evidence.case_blocks(case_dir)
        extra = {"hotspots": sim_evidence.case_profile(case_dir)}
    else:
        scalar = {"dominant": "unknown", "grounds": ["msprof: needs hot-region/trace evidence and a single-"
                                                      "variable A/B; not derivable from timings"]}
        pipeline = {"status": "unverified", "grounds": ["requires_tile_dag_correlation"]}
    share = scalar.get("share") if scalar["dominant"] != "unknown" else None
    roof = roofline.roofline(work, case_us, platform, share, waits_observable=manifest.protocol.backend != "cpu")
    roof["platform"] = platform_ref
    roof["aggregation"] = method
    return {"case": case.id, "shape": case.shape, "dtype": case.dtype, "roofline_terminal": roof,
            "pipeline_evidence": pipeline, "scalar_evidence": scalar, **extra}


def _archived_platform(root: Path, path: Path) -> tuple[Path, dict[str, Any], Path | None]:
    """(source, file record, copy to write) of the platform file as evidence inside the op dir: a file
    outside it (``platforms/<product>.json`` of the plugin) is archived once under
    ``docs/perf/platforms/`` (written with the document); a different file under that name is refused."""
    path = Path(path).resolve()
    if path.is_relative_to(root):
        return path, fsio.file_record(path, root), None
    copy = root / protocol.PERF_DIR / "platforms" / path.name
    record = {**fsio.file_record(path, path.parent), "path": copy.relative_to(root).as_posix()}
    if copy.exists():
        if fsio.sha256_file(copy) != record["sha256"]:
            raise ContractError(copy, "--platform", f"an archived platform file of that name differs from {path}",
                                "pass the archived copy, or a platform file under another name")
        return path, record, None
    return path, record, copy


def build(op_dir: str | Path, round_ref: str, *, platform_file: str | Path | None = None,
          output: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Build, validate and write ``docs/perf/terminal_evidence.json`` (or ``output``, a path inside
    the op dir, e.g. a bottleneck snapshot of an intermediate round); returns (path, document)."""
    root = Path(op_dir).resolve()
    manifest_path = root / protocol.MANIFEST_NAME
    manifest = load_manifest(manifest_path)
    rnd = evidence.load_round(root, round_ref)
    if rnd.collection.get("mode") != "compare":
        raise ContractError(rnd.path, "mode", f"round mode is {rnd.collection.get('mode')!r}",
                            "terminal evidence needs a formal round")
    backend = manifest.protocol.backend
    default = (root / protocol.PERF_DIR / PLATFORM_CPU_NAME if backend == "cpu"
               else sim_evidence.default_platform(manifest.protocol.simulator) if backend == "pypto-sim" else None)
    path = Path(platform_file) if platform_file else default
    if path is None:
        raise ContractError(manifest_path, "--platform", f"{backend} needs an explicit platform file",
                            "pass --platform platforms/<product>.json")
    platform, platform_obj = load_platform(path, backend)
    path, platform_record, platform_copy = _archived_platform(root, path)
    platform_ref = {"platform_id": platform.platform_id, "file": platform_record,
                    "peak_status": {k: p.status for k, p in sorted(platform.peaks.items())},
                    "peak_source": {k: p.source for k, p in sorted(platform.peaks.items())}}
    model = frozen_work_model(manifest, manifest_path)
    overhead = cpu_overhead(root, manifest, rnd) if backend == "cpu" else {}
    cases = []
    for case in manifest.cases:
        if case.id not in rnd.cases:
            raise ContractError(rnd.path, "expected_cases", f"case {case.id!r} is not in the round",
                                "use a round that measured every manifest case")
        cases.append(_case_block(case, rnd.cases[case.id].samples_us, manifest, model, platform,
                                 platform_ref, overhead.get(case.id), rnd.cases[case.id].path))
    extra = profiler.apply(root, rnd, manifest, path, platform_obj, platform, cases) if backend == "msprof" else {}
    doc = {"schema_version": 1, "backend": backend, "manifest": fsio.file_record(manifest_path, root),
           "round": {"collection_id": rnd.collection_id, "path": fsio.display_path(rnd.path, root),
                     "aggregation": manifest.protocol.aggregation, "paired": rnd.paired},
           "platform": {"platform_id": platform.platform_id, "file": platform_ref["file"],
                        "name": platform_obj["name"]},
           "work_model": {"source": f"{protocol.MANIFEST_NAME}#work_model ({model['source']})",
                          "sha256": work_model.model_sha256(model), "model": model},
           "cases": cases, **extra}
    out = fsio.safe_join(root, output, field="--output") if output else root / protocol.PERF_DIR / OUTPUT_NAME
    schemas.validate(doc, "terminal_evidence", out)
    if platform_copy is not None:
        platform_copy.parent.mkdir(parents=True, exist_ok=True)
        fsio.write_bytes(platform_copy, path.read_bytes(), overwrite=False)
    fsio.write_json(out, doc)
    return out, doc


def probe(output: str | Path) -> tuple[Path, dict[str, Any]]:
    """Measure the cpu platform peaks (in a process with the runner's environment) and write the file."""
    with tempfile.TemporaryDirectory(prefix="platform_probe_") as scratch:
        raw = Path(scratch) / "platform.json"
        argv = [sys.executable, "-m", "perftune.terminal.platform_probe", "--output", str(raw),
                "--measured-at", evidence.utc_now()]
        try:
            proc = subprocess.run(argv, env=runner_env(0), capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvError(output, "-", f"platform probe could not run: {exc}", "check the interpreter") from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            raise EnvError(output, "platform probe", f"exit {proc.returncode}: {tail}", "check numpy")
        obj = fsio.read_json(raw, what="platform probe output")
    schemas.validate(obj, "platform", output)
    return fsio.write_json(output, obj), obj
