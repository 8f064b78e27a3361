"""Supplemental instruction timeline per P0 case of a complete formal round (final acceptance).

Preflight: the round is complete and sealed (:func:`evidence.load_round`), a formal compare, and
the current sources are the code it measured (``executable_sha256``); the target folder
``docs/perf/timeline/<round>/<case folder>/`` does not exist yet (never overwritten).

Card route (upstream §4.8): ``spec.warmup`` plain runs, then ``msprof --ai-core=on
--aic-metrics=PipeUtilization --instr-profiling=on --task-time=on --ascendcl=on --output=<dir>
<runner>``, then ``msprof --export=on --type=text --reports=<reports.json> --output=<PROF dir>``
with ``{"json_process": {"ascend": true, "biu_perf": true}}``. Exactly one ``PROF_*`` with one
``device_<id>`` folder, exactly one new ``msprof_*.json`` export or the complete slices of one
(``msprof_slice_<N>_<timestamp>.json``, :func:`timeline.slice_order`: a missing slice is named);
``biu_perf.db`` is archived and
hashed when present. Simulator route (no card): ``msprof op simulator [--kernel-name=K]
[--soc-version=S] --output=<dir> <runner>``; exactly one ``OPPROF_*/simulator`` holding per-core
folders ``core*.veccore*`` / ``core*.cubecore*`` each with a ``trace.json``; none is the silent
empty capture of a ``--kernel-name`` that matched nothing. Simulator lanes are cores: a per-core
trace's processes are the pipes and its threads their channels, the core is the file
(:func:`timeline.lane_model` ``file_is_core``); the window is the whole capture of all cores (no
simulator event names the kernel). Card lanes are the export's ``(pid, tid)``.

``timeline.json`` holds the per-pipe model (:func:`timeline.summarise`), the expected pipes (busy in
the round's PipeUtilization table of the case), the hashes of every archived file, and
``collection_kind: supplemental_instruction_profile`` with ``canonical_timing_source:
separate_formal_compare``: its durations never replace formal numbers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from . import collect, evidence
from ..profiler import advisor_output, case_tables, timeline
from .. import fsio
from ..contract import protocol
from ..errors import CheckFailed, ContractError
from .backends.base import format_log, run_logged, runner_env

TIMELINE_DIR = "timeline"
TIMELINE_NAME = "timeline.json"
ADVISOR = "msprof-analyze"
REPORTS = {"json_process": {"ascend": True, "biu_perf": True}}
SOURCES = ("card", "simulator")


def timeline_path(op_dir: Path, round_name: str, case_id: str) -> Path:
    return op_dir / protocol.PERF_DIR / TIMELINE_DIR / round_name / evidence.case_dir_name(case_id) / TIMELINE_NAME


def collect_round(op_dir: str | Path, round_ref: str, *, source: str = "card", kernel_name: str | None = None,
                  soc_version: str | None = None, progress=lambda _l: None) -> list[dict[str, Any]]:
    """One timeline per case of the round; returns ``[{case, path, status, problem}]`` (never raises per case)."""
    if source not in SOURCES:
        raise ContractError("instruction_timeline.py", "--source", f"{source!r}", f"use one of {SOURCES}")
    ctx = collect.prepare(op_dir, collect.Overrides())
    if ctx.protocol.backend != "msprof":
        raise ContractError(ctx.manifest_path, "protocol.backend", f"{ctx.protocol.backend!r} has no instruction "
                            "timeline", "the timeline is an msprof (card or simulator) artefact")
    rnd = evidence.load_round(ctx.op_dir, round_ref)
    current = evidence.executable_sha256(ctx.op_dir, evidence.source_files(ctx.op_dir, ctx.manifest))
    if rnd.collection.get("mode") != "compare" or rnd.collection["executable_sha256"] != current:
        raise ContractError(rnd.path / evidence.COLLECTION_JSON, "executable_sha256", "the round is not a formal "
                            "compare of the current sources", "apply the measured version, or time a new round")
    rows = []
    for case in ctx.manifest.cases:
        target = timeline_path(ctx.op_dir, rnd.path.name, case.id)
        if target.parent.exists():
            raise ContractError(target.parent, "-", "a timeline folder already exists and is never overwritten",
                                "keep it; time a new round for a new timeline")
        try:
            doc = _collect_case(ctx, rnd, case, target, source, kernel_name, soc_version)
            rows.append({"case": case.id, "path": fsio.display_path(target, ctx.op_dir), "status": "complete",
                         "pipes": sorted(doc["model"]["pipes"])})
        except (CheckFailed, ContractError) as exc:
            rows.append({"case": case.id, "path": None, "status": "failed", "problem": exc.line()})
        progress(f"  {case.id}: timeline {rows[-1]['status']}" + (f": {rows[-1].get('problem')}"
                                                                  if rows[-1].get("problem") else ""))
    return rows


def _collect_case(ctx, rnd, case, target: Path, source, kernel_name, soc_version) -> dict[str, Any]:
    columns = case_tables.case_columns(rnd.cases[case.id].path, ctx.protocol.op_name, ctx.op_dir,
                                         (protocol.CANONICAL_METRIC,))
    expected = case_tables.expected_pipes(columns)
    staged = Path(tempfile.mkdtemp(prefix=".timeline_", dir=_mkparent(target.parent.parent)))
    scratch = Path(tempfile.mkdtemp(prefix="perftune_timeline_"))
    log: list[str] = []
    try:
        runner = ctx.backend.case_command(ctx.spec, case.id)
        env = runner_env(ctx.protocol.device_id)

        def run(argv: list[str], what: str) -> str:
            proc = run_logged(argv, env=env, cwd=ctx.op_dir, log_path=None, timeout_s=ctx.spec.timeout_s)
            log.append(format_log(argv, proc.returncode, proc.stdout, proc.stderr))
            if proc.returncode != 0:
                raise CheckFailed(target, what, f"exit {proc.returncode}", "see collection.log of the timeline")
            return proc.stdout
        for index in range(1, ctx.spec.warmup + 1):
            run(runner, f"warm-up {index}")
        if source == "card":
            files, model, extra = _card(run, scratch, runner, ctx, expected, staged)
        else:
            files, model, extra = _simulator(run, scratch, runner, ctx, expected, staged, kernel_name, soc_version)
        fsio.write_text(staged / "collection.log", "\n".join(log))
        doc = {"schema_version": 1, "collection_kind": "supplemental_instruction_profile",
               "canonical_timing_source": "separate_formal_compare", "source": source, **extra,
               "round": {"collection_id": rnd.collection_id, "path": fsio.display_path(rnd.path, ctx.op_dir)},
               "executable_sha256": rnd.collection["executable_sha256"], "case": case.id, "shape": case.shape,
               "dtype": case.dtype, "op_name": ctx.protocol.op_name, "device_id": ctx.protocol.device_id,
               "device_source": protocol.DEVICE_ENV, "seed": ctx.protocol.seed, "warmup": ctx.protocol.warmup,
               "expected_pipes_from": {f: {k: c[k] for k in ("metric", "column", "value", "files")}
                                       for f, c in case_tables.pipe_ratios(columns).items()},
               "files": [{"path": fsio.display_path(target.parent / p.relative_to(staged), ctx.op_dir),
                          "sha256": fsio.sha256_file(p), "size_bytes": p.stat().st_size} for p in files],
               "model": model, "created_at": evidence.utc_now()}
        if model["completeness"]["status"] != "complete":
            raise CheckFailed(target, "completeness", f"missing pipes {model['completeness']['missing_pipes']} "
                              "that the PipeUtilization table shows busy", "re-collect; the export is incomplete")
        fsio.write_json(staged / TIMELINE_NAME, doc)
        staged.rename(target.parent)
        return doc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(staged, ignore_errors=True)


def _mkparent(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _keep(path: Path, staged: Path, name: str) -> Path:
    target = staged / "raw" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)
    return target


def _card(run, scratch: Path, runner: list[str], ctx, expected, staged: Path):
    exe = ctx.backend.executable
    out = scratch / "instr"
    run([exe, "--ai-core=on", f"--aic-metrics={protocol.CANONICAL_METRIC}", "--instr-profiling=on", "--task-time=on",
         "--ascendcl=on", f"--output={out}", *runner], "instruction profiling run")
    profs = sorted(out.glob("PROF_*"))
    if len(profs) != 1:
        raise CheckFailed(out, "PROF_*", f"{len(profs)} profiler folders (need 1)", "one run, one PROF folder")
    devices = sorted(profs[0].glob("device_*"))
    if [d.name for d in devices] != [f"device_{ctx.protocol.device_id}"]:
        raise CheckFailed(profs[0], "device_*", f"{[d.name for d in devices]} (need exactly "
                          f"device_{ctx.protocol.device_id})", "check the device environment rule")
    before = set(profs[0].rglob("msprof_*.json"))
    reports = scratch / "reports.json"
    reports.write_text(json.dumps(REPORTS))
    run([exe, "--export=on", "--type=text", f"--reports={reports}", f"--output={profs[0]}"], "timeline export")
    new = {p.name: p for p in set(profs[0].rglob("msprof_*.json")) - before}
    if not new or len({p.parent for p in new.values()}) != 1:
        raise CheckFailed(profs[0], "msprof_*.json", f"{len(new)} new timeline exports (need exactly 1)",
                          "export once into a fresh PROF folder")
    try:
        paths = [new[n] for n in timeline.slice_order(new, str(profs[0]))]
    except ContractError as exc:
        raise CheckFailed(profs[0], "msprof_*.json", f"{len(new)} new timeline exports (need exactly 1): "
                          f"{exc.problem}", exc.fix) from None
    trace = timeline.read_trace([(p.read_text(encoding="utf-8"), str(p)) for p in paths], ctx.protocol.op_name,
                                require_target=True)
    model = timeline.summarise_trace(trace, expected=expected, unit="us")
    files = [_keep(p, staged, p.name) for p in paths]
    biu = sorted(devices[0].rglob("biu_perf.db"))
    files += [_keep(biu[0], staged, "biu_perf.db")] if len(biu) == 1 else []
    advice, kept = advisor(profs[0], scratch, staged)
    return files + kept, model, {"biu_database": "raw/biu_perf.db" if len(biu) == 1 else None, "advisor": advice}


def advisor(prof: Path, scratch: Path, staged: Path) -> tuple[dict[str, Any] | None, list[Path]]:
    """Optional (``ascend`` extra): ``msprof-analyze advisor all -d <PROF dir>`` when it is on PATH.

    Its output (stdout and the report files it writes into its working folder) is archived under
    ``raw/advisor/``; a failing advisor is recorded, never fatal. Absent, ``None``: nothing changes.
    """
    exe = shutil.which(ADVISOR)
    if exe is None:
        return None, []
    work = scratch / "advisor"
    work.mkdir()
    argv = [exe, "advisor", "all", "-d", str(prof)]
    try:
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600, errors="replace")
        code, out = proc.returncode, proc.stdout + proc.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        code, out = -1, f"advisor did not run: {exc}"
    (work / "advisor_stdout.log").write_text(out, encoding="utf-8")
    kept = [_keep(f, staged, f"advisor/{f.relative_to(work).as_posix()}") for f in sorted(work.rglob("*")) if f.is_file()]
    applicable, reason = advisor_output.applicability(out)   # "Unknown profiling type": not advice
    return {"argv": [ADVISOR, *argv[1:3], "-d", "<PROF dir>"], "returncode": code, "applicable": applicable,
            "not_applicable_reason": reason, "files": [f"raw/advisor/{f.relative_to(staged / 'raw' / 'advisor').as_posix()}" for f in kept]}, kept


def _simulator(run, scratch: Path, runner, ctx, expected, staged: Path, kernel_name, soc_version):
    out = scratch / "sim"
    argv = [ctx.backend.executable, "op", "simulator", f"--output={out}"]
    argv += [f"--kernel-name={kernel_name}"] if kernel_name else []
    argv += [f"--soc-version={soc_version}"] if soc_version else []
    run([*argv, *runner], "msprof op simulator")
    sims = sorted(p for p in out.glob("OPPROF_*/simulator") if p.is_dir())
    if len(sims) != 1:
        raise CheckFailed(out, "OPPROF_*/simulator", f"{len(sims)} simulator outputs (need 1)",
                          "a simulator build of the runner must be traced once (signal 6 = not a simulator build)")
    cores = sorted(p for p in sims[0].iterdir() if p.is_dir() and (".veccore" in p.name or ".cubecore" in p.name))
    if not cores:
        raise CheckFailed(sims[0], "core*.veccore*/trace.json", "empty capture: no per-core trace (a --kernel-name "
                          "that matches nothing captures nothing; it matches the mangled symbol)",
                          "run once without --kernel-name, copy the exact name from OpBasicInfo.csv")
    events, names, files = [], {}, []
    for core in cores:
        trace_path = core / "trace.json"
        if not trace_path.is_file():
            raise CheckFailed(core, "trace.json", "is missing for this core (expected lane)", "re-run the simulator")
        trace = timeline.read_trace([(trace_path.read_text(encoding="utf-8"), str(trace_path))], core=core.name)
        events += trace.events
        names.update(trace.lane_names)
        files.append(_keep(trace_path, staged, f"{core.name}/trace.json"))
    window = (min(e.start for e in events), max(e.end for e in events))
    model = timeline.summarise(window, events, expected=expected, lane_names=names, unit="simulator_trace_ts",
                               window_source="capture", lane_model=trace.lane_model,
                               note="no simulator event names the kernel: the window is the whole capture of "
                                    f"the {len(cores)} per-core traces")
    model["note"] = "simulator timestamps show structure, not hardware time"
    return files, model, {"simulator": {"kernel_name": kernel_name, "soc_version": soc_version,
                                        "cores": [c.name for c in cores]}}
