"""Evidence rounds on disk (DESIGN §4.3): reserve, record, list, find and load them.

Layout under ``<op>/docs/perf/``::

    round_NNN/collection.json                         status in_progress -> complete | failed
    round_NNN/case_<safe-id>_<sha8>/measurement.json  samples, aggregate, selected op names
    round_NNN/case_<...>/repeat_NNN/                  raw files of the backend, collection.log,
                                                      evidence_status.json (paired: baseline/, candidate/)
    quick/quick_NNN/quick_performance.json            quick mode; never ranks

Decisions DESIGN left open (recorded here):
- Round numbers are reserved at max(existing)+1 by renaming a staged folder that already holds
  the first record (``collection.json``, status ``in_progress``) onto ``round_NNN``: a round
  folder never exists without its label, even after a SIGKILL. A failed or killed round keeps
  its folder, so its number is never reused; a killed reservation leaves at most a hidden
  ``.round_NNN.<pid>.tmp`` folder that nothing reads. A failed attempt of a retried case stays under
  ``case_<...>/attempt_NN/``; only the successful attempt's repeats move up to ``case_<...>/repeat_NNN``.
- Aggregation: ``trimmed_mean`` drops the min and the max when n >= 3, else the median (upstream).
- ``source_files``: the runner ``test_<op>.py`` plus every other top-level ``*.py`` of the op dir
  except the frozen golden modules (``*_golden.py``, ``*_golden_cpu.py``) and ``conftest.py``.
- :func:`load_round` never trusts numbers in ``measurement.json``: samples are recomputed from
  the raw files with the backend's ``read_repeat``; symlinks anywhere in the round are refused.
- Process groups: ``CaseEvidence.processes``, the process index of every sample from the raw files
  (``None``: none recorded, msprof or format 0; one level); equal sizes, both arms of a repeat in one.
- ``format_version``: :mod:`.evidence_format` (an unknown version is refused; absent = version 0).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import fsio
from . import evidence_format
from ..contract import protocol, schemas
from ..contract import aggregation
from .backends import RepeatResult, get_backend, repeat_dir_name
from ..errors import ContractError
from ..contract.manifest import Manifest

COLLECTION_JSON = "collection.json"
MEASUREMENT_JSON = "measurement.json"
QUICK_DIR = "quick"
QUICK_PREFIX = "quick_"
ARMS = ("baseline", "candidate")
_ROUND_RE = re.compile(rf"^{protocol.ROUND_PREFIX}(\d{{{protocol.ROUND_DIGITS},}})$")


def perf_dir(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR


def utc_now() -> str:
    """ISO-8601 UTC timestamp with second resolution (``2025-01-31T12:00:00Z``)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def case_dir_name(case_id: str) -> str:
    """``case_<id with [^A-Za-z0-9_.-] -> _, stripped of ._ at both ends>_<sha256(id)[:8]>``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", case_id).strip("._") or "case"
    return f"case_{safe}_{hashlib.sha256(case_id.encode('utf-8')).hexdigest()[:8]}"


class CollectorLock:
    """An exclusive ``flock`` on ``docs/perf/.<round>.collecting``, held while a round is collected.

    The kernel drops it when the collector dies, however it dies: a later collection that can take
    it on an ``in_progress`` round knows nobody is collecting that round any more.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def try_take(cls, path: Path) -> "CollectorLock | None":
        fd = fsio.try_lock(path)
        return None if fd is None else cls(path, fd)

    def release(self, *, unlink: bool = False) -> None:
        if self.fd < 0:
            return
        if unlink:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self.fd)  # closing drops the flock
        self.fd = -1


def collector_lock_path(round_dir: Path) -> Path:
    return round_dir.parent / f".{round_dir.name}.collecting"


def _drop(lock: CollectorLock | None) -> None:
    """Release a lock taken on a number this reservation will not use; holding it proved that the
    number's owner, if any, is gone, so its lock file is stale."""
    if lock:
        lock.release(unlink=True)


def _reserve(parent: Path, prefix: str, first: str, record: Callable[[str], dict[str, Any]],
             schema: str, *, locked: bool = False) -> tuple[Path, dict[str, Any], CollectorLock | None]:
    """Create the next ``<prefix>NNN`` folder already holding ``first`` = ``record(folder name)``.

    The folder is staged under a hidden name and renamed into place; ``rename`` onto a folder that
    another process has just filled fails, so two collectors never share a number. With ``locked``
    the number's :class:`CollectorLock` is taken before the rename and returned, held.
    """
    parent.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)$")
    numbers = [int(m.group(1)) for p in parent.iterdir() if (m := pattern.match(p.name))]
    number = max(numbers, default=0) + 1
    while True:
        name = f"{prefix}{number:0{protocol.ROUND_DIGITS}d}"
        target = parent / name
        lock = CollectorLock.try_take(collector_lock_path(target)) if locked else None
        taken = locked and lock is None
        if taken or target.is_symlink() or (target.exists() and (not target.is_dir() or any(target.iterdir()))):
            _drop(lock)
            number += 1
            continue
        staging = parent / f".{name}.{os.getpid()}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        obj = record(name)
        schemas.validate(obj, schema, target / first)
        fsio.write_json(staging / first, obj)
        try:
            os.rename(staging, target)  # replaces only a missing or empty folder
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            _drop(lock)
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise
            number += 1
            continue
        fsio.fsync_dir(parent)
        return target, obj, lock


def reserve_round(op_dir: str | Path, collection: Callable[[str], dict[str, Any]]
                  ) -> tuple[Path, dict[str, Any], CollectorLock]:
    """Create the next ``docs/perf/round_NNN`` holding ``collection(name)`` as collection.json.

    Returns the folder, the record and the round's :class:`CollectorLock`, held: release it (with
    ``unlink=True``) after the final ``collection.json`` is written.
    """
    target, obj, lock = _reserve(perf_dir(op_dir), protocol.ROUND_PREFIX, COLLECTION_JSON, collection,
                                 "collection", locked=True)
    assert lock is not None
    return target, obj, lock


ABANDONED = ("abandoned: its collector ended without finishing the round (killed or crashed); "
             "marked by a later collection")


def mark_abandoned(op_dir: str | Path) -> list[str]:
    """Mark every ``in_progress`` round whose :class:`CollectorLock` is free ``failed`` (ABANDONED).

    The status is re-read under the lock, so a round finished meanwhile is left alone; a round
    whose collector is alive (lock held) is never touched. Returns the names marked.
    """
    marked = []
    for row in list_rounds(op_dir):
        if row["status"] != "in_progress":
            continue
        lock = CollectorLock.try_take(collector_lock_path(row["path"]))
        if lock is None:
            continue
        try:
            obj = fsio.read_json(row["path"] / COLLECTION_JSON, what="collection.json")
            if isinstance(obj, dict) and obj.get("status") == "in_progress":
                obj.update(status="failed", failure=ABANDONED, completed_at=utc_now())
                write_collection(row["path"], obj)
                marked.append(row["name"])
        finally:
            lock.release(unlink=True)
    return marked


def reserve_quick(op_dir: str | Path,
                  quick: Callable[[str], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """Create the next ``docs/perf/quick/quick_NNN`` holding ``quick(name)`` as quick_performance.json."""
    folder, obj, _ = _reserve(perf_dir(op_dir) / QUICK_DIR, QUICK_PREFIX, protocol.QUICK_NAME, quick,
                              "quick_performance")
    return folder, obj


def source_revision(op_dir: str | Path) -> str | None:
    """``git rev-parse HEAD`` of the repository holding ``op_dir``; None when there is none."""
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=op_dir, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    text = proc.stdout.strip()
    return text if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", text) else None


def source_files(op_dir: str | Path, manifest: Manifest | None = None) -> list[Path]:
    """The runner and the op's updatable source files (module docstring), sorted."""
    root = Path(op_dir)
    files = [p for p in sorted(root.glob("*.py")) if p.is_file()
             and not p.name.endswith(("_golden.py", "_golden_cpu.py")) and p.name != "conftest.py"]
    if not any(p.name.startswith("test_") for p in files):
        raise ContractError(root, "test_<op>.py", "no runner test file found", "deliver the Stage 4 test file")
    return files


def executable_sha256(op_dir: str | Path, files: list[Path]) -> str:
    """sha256 over sorted ``"<relative path>\\0<sha256>\\n"`` lines (docs/architecture.md)."""
    lines = sorted(f"{fsio.display_path(p, op_dir)}\0{fsio.sha256_file(p)}\n" for p in files)
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def aggregate(samples: list[float], method: str) -> tuple[float, str]:
    """Per-case point estimate (:func:`perftune.contract.aggregation.aggregate`) and the method actually used."""
    if not samples or not all(fsio.is_finite_positive(s) for s in samples):
        raise ContractError("-", "duration_samples_us", "empty, non-finite or non-positive samples",
                            "re-collect the round")
    if method not in protocol.AGGREGATIONS:
        raise ContractError("-", "protocol.aggregation", f"unknown method {method!r}",
                            f"use one of {list(protocol.AGGREGATIONS)}")
    used = "trimmed_mean" if method == "trimmed_mean" and len(samples) >= 3 else "median"
    return aggregation.aggregate(samples, used), used


def write_collection(round_dir: Path, collection: dict[str, Any]) -> Path:
    """Validate and atomically (re)write ``collection.json``."""
    path = round_dir / COLLECTION_JSON
    schemas.validate(collection, "collection", path)
    return fsio.write_json(path, collection)


def write_measurement(case_dir: Path, measurement: dict[str, Any]) -> Path:
    path = case_dir / MEASUREMENT_JSON
    schemas.validate(measurement, "measurement", path)
    return fsio.write_json(path, measurement)


def measurement_record(*, collection_id: str, case_id: str, op_name: str, backend: str,
                       method: str, repeat_dirs: list[str], timing_file: str,
                       results: list[RepeatResult], baseline: list[RepeatResult] | None = None,
                       order: list[list[str]] | None = None) -> dict[str, Any]:
    """The ``measurement.json`` content of one case (pure); repeat dirs relative to the op dir."""
    samples = [r.duration_us for r in results]
    value, used = aggregate(samples, method)
    arm = "candidate/" if baseline is not None else ""
    record: dict[str, Any] = {
        "format_version": protocol.EVIDENCE_FORMAT_VERSION, "collection_id": collection_id, "case": case_id, "target_op_name": op_name,
        "backend": backend, "duration_samples_us": samples, "aggregate_us": value,
        "aggregation_method": used, "selected_op_names": [op_name] * len(results),
        "timing_source_file": timing_file,
        "timing_source_files": [f"{d}/{arm}{timing_file}" for d in repeat_dirs],
        "repeat_evidence_dirs": repeat_dirs,
        "repeat_bound_diagnoses": [r.bound_route for r in results],
    }
    if baseline is not None:
        base = [r.duration_us for r in baseline]
        record.update(baseline_samples_us=base, baseline_aggregate_us=aggregate(base, method)[0],
                      sample_order=order or [])
    return record


@dataclass(frozen=True)
class CaseEvidence:
    case_id: str
    path: Path
    measurement: dict[str, Any]
    samples_us: list[float]
    baseline_samples_us: list[float] | None = None
    repeats: list[RepeatResult] = field(default_factory=list)
    processes: list[int] | None = None

    @property
    def arms(self) -> tuple:
        """``(baseline samples, candidate samples, baseline groups, candidate groups)`` of a paired
        case, the argument shape of ``decide.stats.suite_score``."""
        return (self.baseline_samples_us, self.samples_us, self.processes, self.processes)


@dataclass(frozen=True)
class RoundEvidence:
    path: Path
    collection: dict[str, Any]
    cases: dict[str, CaseEvidence]

    @property
    def collection_id(self) -> str:
        return self.collection["collection_id"]

    @property
    def paired(self) -> bool:
        return "paired" in self.collection

    @property
    def partner(self) -> dict[str, Any] | None:   # paired: {baseline_version, baseline_executable_sha256, order}
        return self.collection.get("paired")

    @property
    def protocol(self) -> dict[str, Any]:           # as recorded; empty when the round recorded none
        return self.collection.get("protocol") or {}

    @property
    def executable_sha256(self) -> str:
        return self.collection["executable_sha256"]

    @property
    def environment(self) -> dict[str, Any] | None:  # measure.fingerprint; None when absent
        return self.collection.get("environment")


def list_rounds(op_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``round_NNN`` with its id/status/mode (``None`` when collection.json is unreadable)."""
    rows = []
    root = perf_dir(op_dir)
    for path in sorted(root.iterdir() if root.is_dir() else [], key=lambda p: p.name):
        if not (_ROUND_RE.match(path.name) and path.is_dir() and not path.is_symlink()):
            continue
        try:
            obj = fsio.read_json(path / COLLECTION_JSON, what="collection.json")
        except ContractError:
            obj = {}
        obj = obj if isinstance(obj, dict) else {}
        rows.append({"name": path.name, "path": path, "collection_id": obj.get("collection_id"),
                     "status": obj.get("status"), "mode": obj.get("mode")})
    return rows


def find_round(op_dir: str | Path, ref: str | Path) -> Path:
    """Resolve ``round_NNN``, a round folder's path (also ``docs/perf/round_NNN``), or a collection id."""
    root = perf_dir(op_dir)
    text = str(ref)
    if _ROUND_RE.match(text):
        return fsio.safe_join(root, text, field="round", source=root)
    for row in list_rounds(op_dir):
        if row["collection_id"] == text:
            return row["path"]
    candidate = Path(text) if Path(text).is_dir() or Path(text).is_absolute() else Path(op_dir) / text
    if candidate.is_dir() and _ROUND_RE.match(candidate.name):
        resolved = candidate.resolve()
        if resolved.parent == root.resolve() and not candidate.is_symlink():
            return resolved
        raise ContractError(text, "round", "is not a round of this operator", f"use a round under {root}")
    raise ContractError(root, "round", f"no round or collection id {text!r}",
                        "list rounds with collect_perf.py or give round_NNN")


def _refuse_symlinks(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_symlink():
            raise ContractError(path, "-", "symlink inside evidence", "evidence must be regular files")


def _read_case(backend, round_dir: Path, case_id: str, collection: dict[str, Any]) -> CaseEvidence:
    case_dir = fsio.safe_join(round_dir, case_dir_name(case_id), field=case_id, source=round_dir)
    measurement = evidence_format.read_measurement(case_dir / MEASUREMENT_JSON, case_id, collection)
    op_name, paired = collection["target_op_name"], "paired" in collection
    candidate, baseline = [], []
    for index in range(1, collection["repeats"] + 1):
        repeat = fsio.safe_join(case_dir, repeat_dir_name(index), field="repeat", source=case_dir)
        if not repeat.is_dir():
            raise ContractError(repeat, "-", "repeat folder is missing", "re-collect the round")
        if paired:
            baseline.append(backend.read_repeat(repeat / "baseline", op_name))
            candidate.append(backend.read_repeat(repeat / "candidate", op_name))
        else:
            candidate.append(backend.read_repeat(repeat, op_name))
    for result in candidate + baseline:
        if not fsio.is_finite_positive(result.duration_us):
            raise ContractError(case_dir, "duration_us", "non-finite or non-positive", "re-collect")
    return CaseEvidence(case_id, case_dir, measurement, [r.duration_us for r in candidate],
                        [r.duration_us for r in baseline] if paired else None, candidate,
                        _process_groups(case_dir, candidate, baseline if paired else None, collection))


def _process_groups(case_dir: Path, candidate: list[RepeatResult], baseline: list[RepeatResult] | None,
                    collection: dict[str, Any]) -> list[int] | None:
    """The process index of every sample (None when the raw files record none); checked for equal
    process sizes, the frozen process count (or one process per repeat: a backend that starts a
    process per repeat and arm), and both arms of a paired repeat in one process group."""
    groups = [r.process for r in candidate]
    if baseline is not None and [r.process for r in baseline] != groups:
        raise ContractError(case_dir, "process", "the arms of a paired repeat come from different processes",
                            "re-collect the round")
    if any(g is None for g in groups):
        if any(g is not None for g in groups):
            raise ContractError(case_dir, "process", "some repeats record a process index and some do not",
                                "re-collect the round")
        return None
    sizes = {groups.count(g) for g in set(groups)}
    frozen = (collection.get("protocol") or {}).get("processes")
    if len(sizes) != 1 or (frozen is not None and len(set(groups)) not in (frozen, len(groups))):
        raise ContractError(case_dir, "process", f"{len(set(groups))} processes of sizes {sorted(sizes)} "
                            f"(frozen: {frozen} equal processes, or one per repeat)", "re-collect the round")
    return groups


SEAL_ALGORITHM = "sha256 over sorted '<relative path>\\0<file sha256>\\n' lines of every file but collection.json"


def evidence_seal(round_dir: Path, skip: tuple[str, ...] = (COLLECTION_JSON,)) -> dict[str, Any]:
    """Digest of every raw file of a round, taken when it completes; later edits or splices break it.
    ``skip``: the file names that carry the seal (not sealed themselves)."""
    lines = []
    for path in sorted(p for p in round_dir.rglob("*") if p.is_file() and p.name not in skip):
        lines.append(f"{path.relative_to(round_dir).as_posix()}\0{fsio.sha256_file(path)}\n")
    return {"algorithm": SEAL_ALGORITHM, "n_files": len(lines),
            "sha256": hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()}


def _check_seal(round_dir: Path, collection: dict[str, Any]) -> None:
    recorded = collection.get("evidence_seal")
    if recorded is None:
        raise ContractError(round_dir / COLLECTION_JSON, "evidence_seal", "complete round has no evidence seal",
                            "re-collect the round with collect_perf.py")
    actual = evidence_seal(round_dir)
    if (recorded["n_files"], recorded["sha256"]) != (actual["n_files"], actual["sha256"]):
        raise ContractError(round_dir, "evidence_seal", f"raw evidence changed after the round completed "
                            f"({actual['n_files']} files now, {recorded['n_files']} sealed)",
                            "never edit, add or splice evidence; re-collect the round")


def load_round(op_dir: str | Path, ref: str | Path) -> RoundEvidence:
    """Load a complete round; every sample is recomputed from its raw files."""
    round_dir = find_round(op_dir, ref)
    if round_dir.is_symlink() or not round_dir.is_dir():
        raise ContractError(round_dir, "-", "round is not a regular folder", "re-collect")
    _refuse_symlinks(round_dir)
    path = round_dir / COLLECTION_JSON
    collection = fsio.read_json(path, what="collection.json")
    evidence_format.format_version(path, collection, COLLECTION_JSON)
    schemas.validate(collection, "collection", path)
    if collection["status"] != "complete":
        raise ContractError(path, "status", f"round is {collection['status']}, not complete",
                            "use a complete round or collect a new one")
    _check_seal(round_dir, collection)
    backend = get_backend(collection["backend"])
    cases = {cid: _read_case(backend, round_dir, cid, collection) for cid in collection["expected_cases"]}
    return RoundEvidence(round_dir, collection, cases)
