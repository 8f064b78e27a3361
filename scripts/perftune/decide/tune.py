"""Running a frozen search (issue 39): Optuna asks, the points are measured in parallel, every one archived.

The sampler is Optuna's (``GridSampler`` or ``TPESampler``, seeded from the frozen block) on a
study whose storage is SQLite in the search folder by default, or a database URL several hosts
share (``--storage``). Points are asked in batches of the frozen ``batch``, measured side by side
(:mod:`tune_point`) and told in trial order, so the sequence of points depends only on the seed, the
batch and the told objectives: :func:`replay` recomputes it (the verifier's P7.search). The engine
runs the batch: ``local`` (no server: every point of the batch at once, one process each, every
process a point starts holding one of ``workers`` shared slots, :mod:`measure.slots`: a core a
finished point frees goes to the next point's or a running point's remaining launches, none idles on
the batch barrier while a launch is left; ``slot_use`` records how full they were) or ``dask`` (Dask
distributed: a ``LocalCluster`` by default, or the scheduler at ``--scheduler``, whose workers may
sit on other hosts sharing the operator folder; each point :func:`point_jobs` processes). A point the
sampler repeats is recorded as a repeat of the earlier trial with its objective, never measured again. At the end the record names the
ranking and the finalists (:func:`search.finalists`) and the best point's code is put in place for
the normal promotion path (correctness, quick, paired formal round, acceptance, confirm).
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

from . import ledger as ledger_mod, search, tune_point
from .. import fsio
from ..contract import protocol
from ..errors import ContractError, EnvError
from ..measure import evidence, slots

ENGINES = ("local", "dask")
SCHEMA_VERSION = 1


def _optuna():
    try:
        import optuna
    except ImportError:
        raise EnvError("tune.py", "optuna", "is not installed", "pip install -e '.[autotune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def sampler(block: dict[str, Any]):
    optuna = _optuna()
    if block["sampler"] == "grid":
        return optuna.samplers.GridSampler({p["name"]: p["values"] for p in block["parameters"]}, seed=block["seed"])
    return optuna.samplers.TPESampler(seed=block["seed"])


def distributions(block: dict[str, Any]) -> dict[str, Any]:
    optuna = _optuna()
    return {p["name"]: optuna.distributions.CategoricalDistribution(p["values"]) for p in block["parameters"]}


def _key(values: dict[str, Any]) -> str:
    return fsio.dumps(values)


def replay(block: dict[str, Any], told: list[float | None]) -> list[dict[str, Any]]:
    """The points the frozen sampler asks, batch by batch, when trial ``i`` is told ``told[i]``
    (None: failed): an in-memory study, so the sequence is recomputable anywhere."""
    optuna = _optuna()
    study = optuna.create_study(direction="maximize", sampler=sampler(block))
    asked: list[dict[str, Any]] = []
    while len(asked) < len(told):
        batch = [study.ask(distributions(block)) for _ in range(min(block["batch"], len(told) - len(asked)))]
        for trial in batch:
            asked.append(dict(trial.params))
            _tell(study, trial, told[trial.number])
    return asked


def _tell(study, trial, value: float | None) -> None:
    """Tell one trial; the grid sampler's ``study.stop()`` once the grid is asked (meant for ``optimize``,
    refused outside it) comes after the trial is stored, so it only ends the grid here."""
    optuna = _optuna()
    try:
        if value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, float(value))
    except RuntimeError as exc:
        if "Study.stop" not in str(exc):
            raise


def _storage(op_dir: Path, item_id: str, url: str | None) -> str:
    return url or f"sqlite:///{(op_dir / search.SEARCH_DIR / item_id / 'study.db').resolve()}"


def _runner(engine: str, workers: int, scheduler: str | None, slot_dir: str | None) -> tuple[Callable, Callable]:
    """(map of a batch of argument tuples to points, close). ``local``: every point of the batch at once,
    one process each, their launches sharing the ``workers`` slots of ``slot_dir`` (:mod:`measure.slots`)."""
    if engine == "local":
        def run_all(jobs: list[tuple]) -> list[dict[str, Any]]:
            with ProcessPoolExecutor(max_workers=len(jobs)) as pool:   # one process per point
                return list(pool.map(_call, [(*job, slot_dir) for job in jobs]))
        return run_all, lambda: None
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise EnvError("tune.py", "--engine dask", "dask distributed is not installed",
                       "pip install -e '.[autotune]'") from None
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   dashboard_address=None)
    client = Client(scheduler or cluster)

    def close() -> None:
        client.close()
        if cluster is not None:
            cluster.close()
    return (lambda jobs: client.gather(client.map(_call, jobs, pure=False))), close


def point_jobs(workers: int, points: int, shared_slots: bool = False) -> int:
    """Processes side by side within one point (its ``PERFTUNE_JOBS``) when ``points`` points of a batch
    share ``workers`` cores: with shared slots (local engine) every core, the slots hand them out; else
    1 when the points fill the cores, else each point's share of the rest."""
    return max(1, workers if shared_slots else workers // max(1, points))


def _call(job: tuple) -> dict[str, Any]:
    return tune_point.evaluate(*job)


def run(op_dir: str | Path, item_id: str, *, engine: str = "local", workers: int | None = None,
        storage: str | None = None, scheduler: str | None = None,
        progress: Callable[[str], None] = lambda _line: None) -> dict[str, Any]:
    """Measure the frozen search of ``item_id`` once; returns the written record."""
    root = Path(op_dir).resolve()
    item = ledger_mod.find_item(ledger_mod.load_ledger(ledger_mod.ledger_path(root)), item_id)
    block = item.get("search")
    if not block:
        raise ContractError("ledger.json", f"{item_id}.search", "no search is declared on the item",
                            "declare one first: tune.py declare")
    if search.block_sha(block) != block["sha256"]:
        raise ContractError("ledger.json", f"{item_id}.search.sha256", "does not match the block",
                            "a frozen search is never edited")
    if engine not in ENGINES:
        raise ContractError("tune.py", "--engine", engine, f"use one of {list(ENGINES)}")
    path = root / search.record_rel(item_id)
    if path.exists() or tune_point.point_dir(root, item_id, 0).parent.exists():
        raise ContractError(path, "-", "the search was already measured (each point is measured once)",
                            "read the record; a new search is a new item")
    workers = max(1, workers or os.cpu_count() or 1)
    optuna = _optuna()
    url = _storage(root, item_id, storage)
    path.parent.mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(study_name=f"{item_id}-{block['sha256'][:12]}", storage=url, direction="maximize",
                                sampler=sampler(block))
    record = {"schema_version": SCHEMA_VERSION, "item_id": item_id, "search": block, "engine": engine,
              "workers": workers, "storage": url if storage else "sqlite:study.db", "study": study.study_name,
              "started_at": evidence.utc_now(), "status": "in_progress", "points": []}
    fsio.write_json(path, record, overwrite=False)
    _measure_all(root, item_id, block, study, record, engine, scheduler, progress)
    ranked = search.ranked(record["points"])
    record.update(status="complete", completed_at=evidence.utc_now(), ranking=[p["trial"] for p in ranked],
                  finalists=[p["trial"] for p in search.finalists(record["points"], _backend(root))])
    if ranked:
        best = ranked[0]
        (root / block["file"]).write_bytes((tune_point.point_dir(root, item_id, best["trial"]) / block["file"])
                                           .read_bytes())
        record["best"] = {"trial": best["trial"], "values": best["values"], "objective": best["objective"],
                          "code_sha256": best["code_sha256"]}
    fsio.write_json(path, record)
    return {**record, "path": path.as_posix()}


def _measure_all(root, item_id, block, study, record, engine, scheduler, progress) -> None:
    """Every point, batch by batch; the local engine's points share one slot per worker (``slots``,
    their use recorded as ``slot_use``)."""
    workers = record["workers"]
    with tempfile.TemporaryDirectory(prefix="perftune_slots_") as scratch:
        slot_dir = str(slots.make(scratch, workers)) if engine == "local" else None
        record["slots"] = workers if slot_dir else None
        mapper, close = _runner(engine, workers, scheduler, slot_dir)
        began = time.monotonic()
        try:
            _loop(root, item_id, block, study, mapper, record, progress)
        finally:
            close()
        if slot_dir:
            record["slot_use"] = slots.use(slot_dir, workers, time.monotonic() - began)


def _backend(root: Path) -> str:
    from ..contract import manifest
    return manifest.load_manifest(root / protocol.MANIFEST_NAME).protocol.backend


def _loop(root, item_id, block, study, mapper, record, progress) -> None:
    seen: dict[str, dict[str, Any]] = {}
    while len(record["points"]) < block["budget"]:
        count = min(block["batch"], block["budget"] - len(record["points"]))
        trials = [study.ask(distributions(block)) for _ in range(count)]
        keys, jobs = set(seen), []
        for t in trials:
            if _key(t.params) not in keys:
                keys.add(_key(t.params))
                jobs.append((str(root), item_id, block, t.number, dict(t.params)))
        jobs = [(*job, point_jobs(record["workers"], len(jobs), bool(record["slots"]))) for job in jobs]
        measured = {p["trial"]: p for p in mapper(jobs)} if jobs else {}
        for trial in trials:
            point = measured.get(trial.number)
            if point is None:   # the sampler asked a point again: its earlier result, not a new measurement
                first = seen.get(_key(trial.params))
                point = {"trial": trial.number, "values": dict(trial.params), "status": "repeat",
                         "repeat_of": first["trial"], "objective": first.get("objective")} if first else \
                    {"trial": trial.number, "values": dict(trial.params), "status": "failed", "objective": None}
            seen.setdefault(_key(trial.params), point)
            _tell(study, trial, point["objective"] if point["status"] in ("measured", "repeat") else None)
            record["points"].append(point)
            progress(f"  t_{trial.number:03d} {point['values']}: {point['status']}"
                     + (f" objective {point['objective']:.4f}" if point.get("objective") is not None else ""))
        fsio.write_json(root / search.record_rel(item_id), record)


def current_best(root: Path) -> dict[str, Any]:
    """The registered current best (the last candidate) with its formal round: the base of a search."""
    cands = (fsio.read_json(root / protocol.PERF_DIR / protocol.CANDIDATES_NAME, what="candidates.json")
             if (root / protocol.PERF_DIR / protocol.CANDIDATES_NAME).is_file() else {}).get("candidates") or []
    if not cands:
        raise ContractError(root / protocol.PERF_DIR / protocol.CANDIDATES_NAME, "candidates", "no version is recorded",
                            "record v000 first (select_best.py record)")
    best = cands[-1]
    row = next((r for r in evidence.list_rounds(root) if r["collection_id"] == best["formal_collection_id"]), None)
    if row is None:
        raise ContractError("candidates.json", best["version_id"], "its formal round is missing", "restore the round")
    return {"version": best["version_id"], "round": row["name"], "collection_id": best["formal_collection_id"],
            "executable_sha256": best["executable_sha256"]}


def declare_file(op_dir: str | Path, item_id: str, params: list[str], *, sampler_name: str, seed: int,
                 budget: int | None, batch: int, hypothesis: str, metric: str, at: str, actor: str) -> dict[str, Any]:
    """Freeze a search on ``item_id`` in the ledger (before any point is measured); returns the block."""
    from ..contract import manifest
    root = Path(op_dir).resolve()
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    base = current_best(root)
    code_sha = evidence.executable_sha256(root, evidence.source_files(root, man))
    if code_sha != base["executable_sha256"]:
        raise ContractError(root, "code in place", f"is not the current best {base['version']}",
                            f"restore it first (select_best.py restore --version-id {base['version']})")
    parameters = [search.parse_param(p) for p in params]
    runner = next(p for p in evidence.source_files(root, man) if p.name.startswith("test_"))
    text = runner.read_text(encoding="utf-8")
    search.apply(text, {p["name"]: p["values"][0] for p in parameters}, str(runner))   # each names one literal
    rule = man.protocol.rule("promotion")
    objective = {"statistic": "promotion.score of the quick screen paired with the base (higher is better)",
                 "rule": rule["rule"], "cases": list(man.target_case_ids or man.case_ids)}
    block = search.make_block(parameters, file=runner.name, sampler=sampler_name, seed=seed, budget=budget,
                              batch=batch, objective=objective, base=base)
    ledger_mod.modify_ledger(ledger_mod.ledger_path(root), lambda led: search.declare(
        led, item_id, block, hypothesis=hypothesis, metric=metric, at=at, actor=actor))
    return block
