"""Running collections: formal rounds, quick screens, discovery and the selector preflight.

Order of a formal round (DESIGN §4.3): resolve the protocol from the frozen manifest (a CLI value
that contradicts it is refused), check the backend's environment, run the selector preflight,
hash the sources, reserve ``round_NNN`` and write ``collection.json`` (in_progress), measure each
case (a failed case is retried up to ``retry`` more times; failed attempts are kept), re-hash the
sources and the manifest, then mark the round complete or failed with the reason.

Paired rounds (``paired_with`` = a saved copy of the baseline sources) alternate which arm goes
first (repeat 1 baseline first, repeat 2 candidate first, ...): an ABBA-style interleave, so neither
slow drift nor "always second" effects bias the speed-up. The order of each repeat is recorded.
A backend that can hold both arms in one process (cpu: ``run_paired_case``) interleaves them there,
call by call; otherwise every repeat is two fresh processes, one per arm. A quick screen paired with
the current best (``run_quick(paired_with=...)``) uses the same machinery.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import evidence, fingerprint, preflight_cache, round_chain, scheduling, sim_reuse
from .. import fsio
from ..contract import frozen_inputs, protocol, schemas
from .backends import get_backend
from .backends.base import (Backend, RunSpec, choose_selector, preflight, repeat_dir_name,
                            write_evidence_status)
from .backends.case_adapter import find_runner
from ..errors import CheckFailed, ContractError
from ..contract.manifest import Manifest, Protocol, load_manifest, make_protocol


Progress = Callable[[str], None]


@dataclass(frozen=True)
class Overrides:
    """Optional CLI protocol values; each one may only confirm the frozen manifest."""

    backend: str | None = None
    device_id: int | None = None
    warmup: int | None = None
    repeats: int | None = None
    op_name: str | None = None


@dataclass(frozen=True)
class Context:
    op_dir: Path
    manifest_path: Path
    manifest: Manifest
    protocol: Protocol
    backend: Backend
    spec: RunSpec


def resolve_protocol(manifest: Manifest, given: Overrides, source: str) -> Protocol:
    """The frozen protocol; a v1 manifest takes every value from the CLI (all required)."""
    fields = {"backend": "backend", "device_id": "device", "warmup": "warmup", "repeats": "repeats",
              "op_name": "op-name"}
    if manifest.protocol is None:
        missing = [f"--{flag}" for name, flag in fields.items() if getattr(given, name) is None]
        if missing:
            raise ContractError(source, "protocol", f"schema_version 1 manifest needs {missing}",
                                "pass them, or freeze a v2 manifest with freeze_cases.py")
        return make_protocol(**{name: getattr(given, name) for name in fields})
    for name, flag in fields.items():
        value, frozen = getattr(given, name), getattr(manifest.protocol, name)
        if value is not None and value != frozen:
            raise ContractError(source, f"--{flag}", f"{value!r} contradicts the frozen protocol {frozen!r}",
                                "drop the flag; the manifest is the source of truth")
    return manifest.protocol


def check_manifest_unchanged(root: Path, manifest_path: Path) -> None:
    """Refuse a frozen manifest edited after the golden report or a complete round recorded its sha256."""
    current = fsio.sha256_file(manifest_path)
    recorded = []
    golden_path = root / protocol.GOLDEN_REPORT_NAME
    if golden_path.is_file():
        golden = fsio.read_json(golden_path, what="golden report")
        source = golden.get("case_manifest_source") if isinstance(golden, dict) else None
        recorded.append((golden_path, source.get("sha256") if isinstance(source, dict) else None))
    for row in evidence.list_rounds(root):
        if row["status"] == "complete":
            coll = fsio.read_json(row["path"] / evidence.COLLECTION_JSON, what="collection.json")
            recorded.append((row["path"] / evidence.COLLECTION_JSON, coll.get("performance_cases", {}).get("sha256")))
    for where, sha in recorded:
        if sha is not None and sha != current:
            shown = fsio.display_path(where, root)
            raise ContractError(manifest_path, "sha256", f"changed after freezing ({shown} recorded "
                                f"{sha[:12]}, the file is now {current[:12]})",
                                "restore the frozen manifest; a new contract needs a new operator directory")


def prepare(op_dir: str | Path, given: Overrides, *, check_env: bool = True) -> Context:
    root = Path(op_dir).resolve()
    if not root.is_dir():
        raise ContractError(op_dir, "--op-dir", "is not a directory", "pass the operator directory")
    manifest_path = root / protocol.MANIFEST_NAME
    manifest = load_manifest(manifest_path)
    check_manifest_unchanged(root, manifest_path)
    proto = resolve_protocol(manifest, given, str(manifest_path))
    backend = get_backend(proto.backend)
    if check_env:
        backend.check_environment()
    spec = RunSpec(op_dir=root, runner=find_runner(root), manifest=manifest, device_id=proto.device_id,
                   warmup=proto.warmup, repeats=proto.repeats, op_name=proto.op_name, seed=proto.seed,
                   selector=choose_selector(manifest, manifest_path), manifest_path=manifest_path,
                   processes=proto.processes)
    return Context(root, manifest_path, manifest, proto, backend, spec)


def _identity(ctx: Context) -> dict[str, Any]:
    files = evidence.source_files(ctx.op_dir, ctx.manifest)
    record = fsio.file_record(ctx.manifest_path, ctx.op_dir)
    return {"executable_sha256": evidence.executable_sha256(ctx.op_dir, files),
            "source_files": [fsio.file_record(p, ctx.op_dir) for p in files],
            "performance_cases": {**record, "schema_version": ctx.manifest.schema_version}}


def _drift(ctx: Context, start: dict[str, Any]) -> str | None:
    now = _identity(ctx)
    for key in ("executable_sha256", "performance_cases"):
        if now[key] != start[key]:
            return f"{key} changed during the round ({key} at start differs from at end); no stitched evidence"
    return None


def _collection_id(mode: str, folder: str) -> str:
    """``<mode>_<UTC yyyymmddThhmmssZ>_<folder name>``: unique per op dir because the folder is."""
    stamp = evidence.utc_now().replace("-", "").replace(":", "")
    return f"{mode}_{stamp}_{folder}"


def _baseline_drift(ctx: Context, paired: dict[str, Any] | None) -> str | None:
    if not paired:
        return None
    version = (ctx.op_dir / paired["baseline_version"]).resolve()
    files = evidence.source_files(version, ctx.manifest)
    if evidence.executable_sha256(version, files) != paired["baseline_executable_sha256"]:
        return "baseline_executable_sha256 changed during the round; no stitched evidence"
    return None


def run_preflight(ctx: Context) -> list[dict[str, Any]]:
    """The ``preflight`` command's probe rows; on a deterministic backend asked through the cache like a
    round's (the baseline round after it then asks nothing new)."""
    if ctx.backend.name not in protocol.DETERMINISTIC_BACKENDS:
        return preflight(ctx.backend, ctx.spec, list(ctx.manifest.case_ids))
    ident = _identity(ctx)
    asked = _preflight(ctx, "measured", ident["executable_sha256"], ident)
    return fsio.read_json(ctx.op_dir / asked["record"], what="preflight record")["rows"]


def _preflight(ctx: Context, arm: str, code_sha256: str, ident: dict[str, Any],
               spec: RunSpec | None = None) -> dict[str, Any]:
    """The preflight of one arm, asked once per code hash on a deterministic backend (preflight_cache)."""
    return preflight_cache.run(ctx.backend, spec or ctx.spec, list(ctx.manifest.case_ids), arm=arm,
                               code_sha256=code_sha256, manifest_sha256=ident["performance_cases"]["sha256"])


def _header(ctx: Context, collection_id: str, ident: dict[str, Any]) -> dict[str, Any]:
    return {"format_version": protocol.EVIDENCE_FORMAT_VERSION, "collection_id": collection_id,
            "operator_dir": ctx.op_dir.as_posix(),
            "backend": ctx.protocol.backend, "target_op_name": ctx.protocol.op_name,
            "device_id": ctx.protocol.device_id, "seed": ctx.protocol.seed, "warmup": ctx.protocol.warmup,
            "repeats": ctx.protocol.repeats, "expected_cases": list(ctx.manifest.case_ids),
            "performance_cases": ident["performance_cases"], "executable_sha256": ident["executable_sha256"],
            "created_at": evidence.utc_now(), "environment": fingerprint.collect(ctx.protocol.backend, ctx.protocol),
            **frozen_inputs.round_record(ctx.op_dir)}


def _paired_case(ctx: Context, base_spec: RunSpec, case, attempt: Path):
    with fsio.batched_durability():   # the raw files of both arms; the caller's record commits them
        return _paired_case_files(ctx, base_spec, case, attempt)


def _paired_case_files(ctx: Context, base_spec: RunSpec, case, attempt: Path):
    together = ctx.backend.run_paired_case(ctx.spec, base_spec, case, attempt)
    if together is None:
        candidate, baseline, order = [], [], []
        for index in range(1, ctx.spec.repeats + 1):
            arms = ["baseline", "candidate"] if index % 2 else ["candidate", "baseline"]
            repeat = attempt / repeat_dir_name(index)
            results = {arm: ctx.backend.run_repeat(base_spec if arm == "baseline" else ctx.spec, case, repeat / arm)
                       for arm in arms}
            baseline.append(results["baseline"])
            candidate.append(results["candidate"])
            order.append(arms)
    else:
        candidate, baseline, order = together
    _paired_status(ctx, case, attempt, order)
    return candidate, baseline, order


def _paired_status(ctx: Context, case, attempt: Path, order: list[list[str]]) -> None:
    for index, arms in enumerate(order, 1):
        write_evidence_status(attempt / repeat_dir_name(index), {
            "backend": ctx.backend.name, "case": case.id, "target_op_name": ctx.spec.op_name,
            "status": "complete", "timing_source_file": f"candidate/{ctx.backend.timing_source_file}",
            "repeat": index, "paired_order": arms})


def _deterministic_case(ctx: Context, collection, case, attempt: Path, base_spec: RunSpec | None, rows: list,
                        cited_root: Path | None = None):
    """A deterministic backend: each arm's question simulated once (``measure/sim_reuse.py``): reused from
    the round or quick screen that answered it, the candidate arm from a byte-identical baseline arm."""
    numbers = range(1, ctx.spec.repeats + 1)
    code = collection["executable_sha256"]
    cited = attempt.parent if cited_root is None else cited_root   # a formal attempt is renamed into its case
    if base_spec is None:
        dests = [attempt / repeat_dir_name(i) for i in numbers]
        return sim_reuse.measure_arm(ctx.backend, ctx.spec, case, dests, collection, code, "", rows,
                                     cited=[cited / repeat_dir_name(i) for i in numbers]), None, None
    base_code = collection["paired"]["baseline_executable_sha256"]
    dests = {arm: [attempt / repeat_dir_name(i) / arm for i in numbers] for arm in ("baseline", "candidate")}
    final = {arm: [cited / repeat_dir_name(i) / arm for i in numbers] for arm in ("baseline", "candidate")}
    baseline = sim_reuse.measure_arm(ctx.backend, base_spec, case, dests["baseline"], collection, base_code,
                                     "baseline", rows, cited=final["baseline"])
    twin = (dests["baseline"], final["baseline"]) if base_code == code else None
    candidate = sim_reuse.measure_arm(ctx.backend, ctx.spec, case, dests["candidate"], collection, code,
                                      "candidate", rows, same_round=twin, cited=final["candidate"])
    order = [["baseline", "candidate"] if i % 2 else ["candidate", "baseline"] for i in numbers]
    _paired_status(ctx, case, attempt, order)
    return candidate, baseline, order


def _collect_case(ctx: Context, case, case_dir: Path, retry: int, base_spec: RunSpec | None, progress: Progress,
                  collection=None, rows: list | None = None):
    """Run one case with retries; keep failed attempts; return (candidate, baseline, order, attempts)."""
    errors = []
    for number in range(1, retry + 2):
        attempt = case_dir / f"attempt_{number:02d}"
        with fsio.batched_durability():   # the raw files; measurement.json and collection.json commit them
            try:
                if sim_reuse.applies(ctx.backend.name):
                    del rows[:]   # only the reuse of the attempt that is kept
                    result = _deterministic_case(ctx, collection, case, attempt, base_spec, rows)
                elif base_spec is None:
                    result = (ctx.backend.run_case(ctx.spec, case, attempt), None, None)
                else:
                    result = _paired_case(ctx, base_spec, case, attempt)
            except CheckFailed as exc:
                errors.append(exc.line())
                progress(f"  {case.id}: attempt {number} failed: {exc.problem}")
                continue
            for index in range(1, ctx.spec.repeats + 1):
                (attempt / repeat_dir_name(index)).rename(case_dir / repeat_dir_name(index))
            for leftover in attempt.iterdir():
                leftover.rename(case_dir / leftover.name)
            attempt.rmdir()
        return (*result, number)
    raise CheckFailed(case_dir, case.id, f"failed after {retry + 1} attempt(s): {errors[-1]}",
                      "see the attempt_NN folders; fix the runner and collect a new round")


def pairing(ctx: Context, paired_with: Path | None) -> tuple[RunSpec | None, dict[str, Any] | None]:
    """(the partner's run spec, the ``paired`` record) of ``--paired-with`` (formal and quick); (None, None)."""
    if paired_with is None:
        return None, None
    # a saved version folder as printed (absolute, or relative to the operator folder) or its version id (#27)
    version = next((p.resolve() for p in (Path(paired_with), ctx.op_dir / paired_with,
                                          evidence.perf_dir(ctx.op_dir) / protocol.VERSIONS_DIR / paired_with)
                    if p.is_dir()), Path(paired_with))
    if not version.is_dir():
        raise ContractError(paired_with, "--paired-with", "is not a directory", "pass a saved version folder")
    base_files = evidence.source_files(version, ctx.manifest)
    return dataclasses.replace(ctx.spec, runner=find_runner(version)), {
        "baseline_version": fsio.display_path(version, ctx.op_dir), "order": "alternating_first_arm",
        "baseline_executable_sha256": evidence.executable_sha256(version, base_files),
        "baseline_source_files": [fsio.file_record(p, version) for p in base_files]}


def _asked(ctx: Context, ident: dict[str, Any], base_spec: RunSpec | None, paired: dict | None) -> list[dict]:
    """The selector preflight of every arm."""
    return ([_preflight(ctx, "baseline", paired["baseline_executable_sha256"], ident, base_spec)] if paired else []) \
        + [_preflight(ctx, "candidate" if paired else "measured", ident["executable_sha256"], ident)]


def run_formal(ctx: Context, *, retry: int = 0, paired_with: Path | None = None,
               progress: Progress = lambda _line: None, devices: list[int] | None = None,
               jobs: int | None = None) -> dict[str, Any]:
    """One formal round; returns the final ``collection.json`` content (+ ``round`` path).

    ``devices``: run the cases on these cards at the same time (:mod:`measure.scheduling`); ``jobs``:
    case processes side by side on a deterministic backend (:func:`case_jobs`)."""
    if retry < 0:
        raise ContractError("collect_perf.py", "--retry", f"{retry} < 0", "use 0 or more")
    base_spec, paired = pairing(ctx, paired_with)
    ident = _identity(ctx)
    asked = _asked(ctx, ident, base_spec, paired)
    revision = evidence.source_revision(ctx.op_dir)

    def first_record(name: str) -> dict[str, Any]:
        record = {**_header(ctx, _collection_id("compare", name), ident),
                  "mode": "compare", "status": "in_progress", "source_files": ident["source_files"],
                  "source_revision": revision, "protocol": ctx.protocol.as_dict(),
                  "selector": ctx.spec.selector.as_dict(), "case_attempts": {}, "preflight": asked}
        if devices:
            record["case_devices"] = scheduling.assignment(ctx.manifest.case_ids, devices)
        return {**record, "paired": paired} if paired else record

    for name in evidence.mark_abandoned(ctx.op_dir):
        progress(f"{name}: its collector is gone (killed or crashed); marked failed (abandoned)")
    round_dir, collection, lock = evidence.reserve_round(ctx.op_dir, first_record)
    try:
        return _collect_round(ctx, round_dir, collection, retry, base_spec, paired, ident, progress, devices,
                              case_jobs(ctx, jobs))
    finally:
        lock.release(unlink=True)


def _collect_round(ctx, round_dir, collection, retry, base_spec, paired, ident, progress, devices=None, lanes=1):
    progress(f"{round_dir.name}: {collection['collection_id']} ({len(ctx.manifest.cases)} cases, "
             f"{ctx.spec.repeats} repeats, backend {ctx.backend.name})")
    try:
        if devices:
            def on_card(case, device: int) -> None:
                card = dataclasses.replace(ctx, spec=dataclasses.replace(ctx.spec, device_id=device))
                base = dataclasses.replace(base_spec, device_id=device) if base_spec else None
                _formal_case(card, collection, round_dir, case, retry, base, progress)
            failed = scheduling.run_on_devices(ctx.manifest.cases, devices, on_card)
            if failed:
                raise failed[0]
        elif lanes > 1:   # a deterministic simulator: cases side by side, one process each
            failed = scheduling.run_on_devices(ctx.manifest.cases, list(range(lanes)), lambda case, _lane:
                                               _formal_case(ctx, collection, round_dir, case, retry, base_spec,
                                                            progress), lock=False)
            if failed:
                raise failed[0]
        else:
            for case in ctx.manifest.cases:
                _formal_case(ctx, collection, round_dir, case, retry, base_spec, progress)
        failure = _drift(ctx, ident) or _baseline_drift(ctx, paired)
    except CheckFailed as exc:
        failure = exc.line()
    except BaseException as exc:
        _finish(round_dir, collection, f"interrupted: {type(exc).__name__}: {exc}")
        raise
    return _finish(round_dir, collection, failure)


def case_jobs(ctx: Context, requested: int | None = None) -> int:
    """Case processes side by side in a round: ``requested`` (``collect_perf.py --jobs``), else
    ``PERFTUNE_JOBS``, else the core count, on a deterministic backend (no timing noise shares a
    core there); 1 on every other backend. Never more than the cases."""
    if ctx.protocol.backend not in protocol.DETERMINISTIC_BACKENDS:
        return 1
    return min(scheduling.requested_jobs(requested), len(ctx.manifest.cases))


def _formal_case(ctx, collection, round_dir, case, retry, base_spec, progress) -> None:
    case_dir = round_dir / evidence.case_dir_name(case.id)
    case_dir.mkdir()
    rows: list = []
    candidate, baseline, order, attempts = _collect_case(ctx, case, case_dir, retry, base_spec, progress,
                                                         collection, rows)
    rel = [fsio.display_path(case_dir / repeat_dir_name(i), ctx.op_dir) for i in range(1, ctx.spec.repeats + 1)]
    record = evidence.measurement_record(
        collection_id=collection["collection_id"], case_id=case.id, op_name=ctx.spec.op_name,
        backend=ctx.backend.name, method=ctx.protocol.aggregation, repeat_dirs=rel,
        timing_file=ctx.backend.timing_source_file, results=candidate, baseline=baseline, order=order)
    evidence.write_measurement(case_dir, record)
    with scheduling.COLLECTION_LOCK:
        collection["case_attempts"][case.id] = attempts
        if rows:
            collection["reused"] = sorted(collection.get("reused", []) + rows,
                                          key=lambda r: (r["case"], r["arm"], r["repeat"]))
        evidence.write_collection(round_dir, collection)
    progress(f"  {case.id}: {record['aggregation_method']} {record['aggregate_us']:.3f} us "
             f"over {len(candidate)} repeats" + (f" (baseline {record['baseline_aggregate_us']:.3f} us)"
                                                 if baseline else ""))


def _finish(round_dir: Path, collection: dict[str, Any], failure: str | None) -> dict[str, Any]:
    collection["completed_at"] = evidence.utc_now()
    if failure:
        collection.update(status="failed", failure=failure)
    else:
        collection.update(status="complete", completed_cases=len(collection["expected_cases"]),
                          evidence_seal=evidence.evidence_seal(round_dir), previous_seal=round_chain.link(round_dir))
    evidence.write_collection(round_dir, collection)
    return {**collection, "round": round_dir.as_posix()}


def run_quick(ctx: Context, *, paired_with: Path | None = None,
              progress: Progress = lambda _line: None) -> dict[str, Any]:
    """A quick screen under ``docs/perf/quick/quick_NNN``; never ranks, never touches rounds.
    ``paired_with`` (the current best's saved version): both arms interleaved per repeat, by the
    formal paired machinery (:func:`_paired_case`; raw files in ``repeat_NNN/<arm>``)."""
    base_spec, paired = pairing(ctx, paired_with)
    ident = _identity(ctx)
    asked = _asked(ctx, ident, base_spec, paired)
    quick_dir, obj = evidence.reserve_quick(ctx.op_dir, lambda name: {
        **_header(ctx, _collection_id("quick", name), ident), "mode": "quick", "never_ranks": True,
        "preflight": asked, **({"paired": paired} if paired else {}),
        "status": "in_progress", "timing_source_file": ctx.backend.timing_source_file, "cases": []})
    path = quick_dir / protocol.QUICK_NAME
    try:
        done: dict[str, tuple[dict[str, Any], list]] = {}
        lanes = case_jobs(ctx)
        if lanes > 1:   # a deterministic simulator: cases side by side, one process each (as in a formal round)
            failed = scheduling.run_on_devices(ctx.manifest.cases, list(range(lanes)), lambda case, _lane:
                                               done.__setitem__(case.id, _quick_case(ctx, obj, quick_dir, case,
                                                                                     progress, base_spec)), lock=False)
            if failed:
                raise failed[0]
        for case in ctx.manifest.cases:
            entry, rows = done.get(case.id) or _quick_case(ctx, obj, quick_dir, case, progress, base_spec)
            obj["cases"].append(entry)
            if rows:
                obj.setdefault("reused", []).extend(rows)
        failure = _drift(ctx, ident) or _baseline_drift(ctx, paired)
    except CheckFailed as exc:
        failure = exc.line()
    obj["completed_at"] = evidence.utc_now()
    obj.update({"status": "failed", "failure": failure} if failure else {"status": "complete"})
    _write_quick(path, obj)
    return {**obj, "path": path.as_posix()}


def _quick_case(ctx: Context, obj: dict[str, Any], quick_dir: Path, case, progress: Progress,
                base_spec: RunSpec | None = None):
    """One case of a quick screen: (its entry, the reuse rows); paired with ``base_spec`` (the current
    best) like a formal round; on a deterministic backend each question once."""
    raw, rows, arm = quick_dir / evidence.case_dir_name(case.id), [], None
    with fsio.batched_durability():   # the raw files; quick_performance.json commits them
        if sim_reuse.applies(ctx.backend.name):
            cand, base, _ = _deterministic_case(ctx, obj, case, raw, base_spec, rows, cited_root=raw)
            samples, arm = [r.duration_us for r in cand], ([r.duration_us for r in base] if base else None)
        elif base_spec is None:
            samples = ctx.backend.quick_case(ctx.spec, case, raw)
        else:
            cand, base, _ = _paired_case(ctx, base_spec, case, raw)
            samples, arm = [r.duration_us for r in cand], [r.duration_us for r in base]
    value, used = evidence.aggregate(samples, ctx.protocol.aggregation)
    progress(f"  {case.id}: quick {used} {value:.3f} us over {len(samples)} repeats"
             + (f" (paired best {evidence.aggregate(arm, ctx.protocol.aggregation)[0]:.3f} us)" if arm else ""))
    return {"case": case.id, "duration_samples_us": samples, "aggregate_us": value, "aggregation_method": used,
            "raw_dir": fsio.display_path(raw, ctx.op_dir), **({"baseline_samples_us": arm} if arm else {})}, rows


def _write_quick(path: Path, obj: dict[str, Any]) -> None:
    schemas.validate(obj, "quick_performance", path)
    fsio.write_json(path, obj)
