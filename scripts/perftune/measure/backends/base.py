"""The measurement backend interface (DESIGN §4.3, §6): one contract, identical evidence layout.

A backend runs exactly one case per profiled process and writes the raw evidence of every
repeat into ``repeat_NNN/`` (its timing file, ``collection.log``, ``evidence_status.json``).
``read_repeat`` re-derives the duration from those raw files only; compare/verify rely on it and
never on numbers written by the collector.

Shared helpers live here so both backends behave alike: :func:`device_env` (every subprocess,
preflight included, gets ``TILE_FWK_DEVICE_ID`` and loses ``ASCEND_RT_VISIBLE_DEVICES``),
:func:`run_logged` (argument-list subprocess + ``collection.log``), :func:`preflight` (the
selector check). The registry (:func:`perftune.measure.backends.get_backend`) lives in the package.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import fsio
from ...contract import protocol, schemas
from ...errors import CheckFailed, ContractError, EnvError
from .. import slots
from ...contract.manifest import Case, Manifest

SCRIPTS_DIR = Path(__file__).resolve().parents[3]
SELECTOR_KINDS = ("function_adapter", "cli", "env", "single_case")
COLLECTION_LOG = "collection.log"
EVIDENCE_STATUS = "evidence_status.json"
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Selector:
    """How one process is told which case to run (upstream ``case_selector``)."""

    kind: str
    name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to run cases of one operator version.

    ``runner`` is the test file (``test_<op>.py``) of the arm being measured; for a paired
    round's baseline arm it lives in a saved version folder while ``op_dir`` stays the operator
    directory (the runner's folder comes first on ``sys.path``, then ``op_dir``).
    """

    op_dir: Path
    runner: Path
    manifest: Manifest
    device_id: int
    warmup: int
    repeats: int
    op_name: str
    seed: int
    selector: Selector
    manifest_path: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    processes: int = 1  # fresh processes a case's repeats are spread over (frozen protocol.processes)
    fresh_seed: int | None = None  # cpu, pypto-sim: time the op on new data from this seed (stage5_check P10)

    @property
    def manifest_file(self) -> Path:
        return self.manifest_path or self.op_dir / protocol.MANIFEST_NAME


@dataclass(frozen=True)
class RepeatResult:
    """One repeat: the canonical duration, how many target calls/rows, optional bound route, and the
    index of the process that measured it (None: not recorded, i.e. a round from before processes)."""

    duration_us: float
    calls: int
    bound_route: dict[str, Any] | None
    raw_files: tuple[str, ...]
    process: int | None = None


def repeat_dir_name(index: int) -> str:
    """``repeat_001`` for index 1 (repeats are numbered from 1)."""
    return f"repeat_{index:03d}"


def device_env(device_id: int, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The subprocess environment: physical device id set, the renumbering variable removed."""
    env = dict(os.environ if base_env is None else base_env)
    env.pop(protocol.VISIBLE_DEVICES_ENV, None)
    env.pop(protocol.SLOTS_ENV, None)   # the started process holds no slot of its own (measure/slots.py)
    env[protocol.DEVICE_ENV] = str(int(device_id))
    return env


CHANNEL = "harness_input.json"   # a launch's settings beside the runner's --output, read and unlinked by it
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def runner_env(device_id: int, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`device_env` plus ``scripts/`` on ``PYTHONPATH`` so ``-m perftune...`` resolves, and BLAS
    thread pools of 1 unless the environment sets them (a shared host makes BLAS threads spin)."""
    env = device_env(device_id, base_env)
    parts = [str(SCRIPTS_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env.setdefault("PYTHONHASHSEED", str(protocol.SEED))
    for name in BLAS_THREAD_VARS:  # single-threaded kernels, as the platform probe measures them
        env.setdefault(name, "1")
    return env


def adapter_command(spec: RunSpec, case_id: str) -> list[str]:
    """argv of the function adapter running exactly one case (``case_adapter`` module)."""
    return [sys.executable, "-m", "perftune.measure.backends.case_adapter", "--op-dir", str(spec.op_dir),
            "--runner", str(spec.runner), "--manifest", str(spec.manifest_file), "--case-id", case_id]


def format_log(argv: Sequence[str], returncode: int | None, stdout: str, stderr: str) -> str:
    """The ``collection.log`` text: argv, return code, stdout, stderr (never the environment)."""
    return (f"argv: {list(argv)!r}\nreturncode: {returncode}\n"
            f"--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n")


def run_logged(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log_path: Path | None,
               timeout_s: float = DEFAULT_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run an argument list (never a shell string); write ``collection.log`` when asked.

    A missing executable is an :class:`EnvError`; a timeout is recorded in the log and returned
    with return code ``None`` replaced by -9.
    """
    try:
        proc = slots.run(list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True,
                         timeout=timeout_s, errors="replace")
    except FileNotFoundError:
        raise EnvError(argv[0], "-", "executable not found", "install it or put it on PATH") from None
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        proc = subprocess.CompletedProcess(list(argv), -9, out, err + f"\ntimeout after {timeout_s} s")
    if log_path is not None:
        fsio.write_text(log_path, format_log(argv, proc.returncode, proc.stdout, proc.stderr))
    return proc


def write_evidence_status(repeat_dir: Path, status: dict[str, Any]) -> Path:
    """Validate and atomically write ``repeat_dir/evidence_status.json``."""
    path = repeat_dir / EVIDENCE_STATUS
    status = {"format_version": protocol.EVIDENCE_FORMAT_VERSION, **status}
    schemas.validate(status, "evidence_status", path)
    return fsio.write_json(path, status)


def marker_lines(stdout: str) -> list[str]:
    """Every ``PYPTO_PERF_SELECTED_CASE=<id>`` value printed by a runner, in order."""
    return [line[len(protocol.SELECTED_CASE_MARKER):] for line in stdout.splitlines()
            if line.startswith(protocol.SELECTED_CASE_MARKER)]


class Backend(ABC):
    """A measurement backend. Subclasses set ``name`` and ``timing_source_file``; ``default_warmup`` and
    ``default_repeats`` are the backend's own protocol defaults (what ``freeze_cases.py freeze`` takes
    without ``--warmup``/``--repeats`` and ``perf_next.py`` prints before the freeze)."""

    name: str = ""
    timing_source_file: str = ""
    default_warmup: int = protocol.DEFAULT_WARMUP
    default_repeats: int = protocol.DEFAULT_REPEATS

    @abstractmethod
    def check_environment(self) -> None:
        """Raise :class:`EnvError` naming the missing tool/device; return None when usable."""

    def case_command(self, spec: RunSpec, case_id: str) -> list[str]:
        """argv that runs exactly one case and prints one marker line (used by preflight)."""
        return adapter_command(spec, case_id)

    @abstractmethod
    def run_repeat(self, spec: RunSpec, case: Case, repeat_dir: Path) -> RepeatResult:
        """One fresh process: ``spec.warmup`` untimed runs then ONE measured run into ``repeat_dir``.

        Used by paired rounds (one arm per call) and by the default :meth:`run_case`. Raises
        :class:`CheckFailed` when the run or its raw evidence is invalid (the log stays on disk).
        """

    def run_paired_case(self, spec: RunSpec, base_spec: RunSpec, case: Case, attempt: Path):
        """Optional: run both arms of a paired case in one go; ``None`` = one process per arm and repeat."""
        return None

    def run_case(self, spec: RunSpec, case: Case, case_dir: Path) -> list[RepeatResult]:
        """Warm-ups + ``spec.repeats`` repeats into ``case_dir/repeat_NNN/`` (default: one
        :meth:`run_repeat` per repeat, each with its own warm-ups, as upstream msprof does)."""
        return [self.run_repeat(spec, case, case_dir / repeat_dir_name(i))
                for i in range(1, spec.repeats + 1)]

    @abstractmethod
    def read_repeat(self, repeat_dir: Path, op_name: str) -> RepeatResult:
        """Recompute the repeat from its raw files only; :class:`ContractError` if invalid."""

    def read_quick_repeat(self, repeat_dir: Path, op_name: str) -> float:
        """A quick repeat's duration (us) recomputed from its raw files (default: as a formal repeat)."""
        return self.read_repeat(repeat_dir, op_name).duration_us

    @abstractmethod
    def quick_case(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[float]:
        """Quick mode: ``spec.repeats`` durations (us) with the cheapest timing; raw files in
        ``scratch_dir``. Never ranks, never touches formal evidence."""

    @abstractmethod
    def list_op_names(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[dict[str, Any]]:
        """Discovery: rows ``{count, task_type, total_duration_us, exact_op_name}`` sorted by
        total duration descending, then name."""


def unknown_case_id(known: Sequence[str]) -> str:
    """A collision-resistant id that is not in ``known`` (for the preflight's negative probe)."""
    digest = hashlib.sha256("\0".join(sorted(known)).encode()).hexdigest()[:12]
    candidate = f"__pypto_perf_unknown_{digest}__"
    while candidate in known:
        candidate += "_"
    return candidate


def preflight(backend: Backend, spec: RunSpec, case_ids: Sequence[str], *, known: bool = True) -> list[dict[str, Any]]:
    """The selector preflight: unknown id must fail; each known id must exit 0 with one marker
    (``known=False``: the unknown id only, where every timed launch checks its own marker).

    Returns one row per probe ``{case_id, expect, returncode, markers, ok}``; raises
    :class:`CheckFailed` naming the first violation (after every probe ran).
    """
    env, rows = runner_env(spec.device_id), []
    probes = [(unknown_case_id(list(spec.manifest.case_ids)), "nonzero")] + [(c, "marker") for c in case_ids if known]
    for case_id, expect in probes:
        proc = run_logged(backend.case_command(spec, case_id), env=env, cwd=spec.op_dir,
                          log_path=None, timeout_s=spec.timeout_s)
        markers = marker_lines(proc.stdout)
        ok = proc.returncode != 0 if expect == "nonzero" else (proc.returncode == 0 and markers == [case_id])
        rows.append({"case_id": case_id, "expect": expect, "returncode": proc.returncode,
                     "markers": markers, "ok": ok, "stderr_tail": proc.stderr.strip().splitlines()[-1:]})
    bad = [r for r in rows if not r["ok"]]
    if bad:
        first = bad[0]
        what = ("an unknown case id exited 0" if first["expect"] == "nonzero" else
                f"exit {first['returncode']} with markers {first['markers']} (need exit 0 and exactly "
                f"one '{protocol.SELECTED_CASE_MARKER}{first['case_id']}')")
        raise CheckFailed(spec.runner, f"preflight {first['case_id']}", what,
                          "make the runner select exactly one case per process")
    return rows


def choose_selector(manifest: Manifest, source: str | Path) -> Selector:
    """Per-case selection: every case has a ``test_function`` (function adapter) or there is a
    single case; a multi-case manifest without selection is refused (no shared aggregate)."""
    if all(c.test_function for c in manifest.cases):
        return Selector("function_adapter", "perftune.measure.backends.case_adapter")
    if len(manifest.cases) == 1:
        return Selector("single_case", None)
    missing = [c.id for c in manifest.cases if not c.test_function]
    raise ContractError(source, "cases[].test_function", f"multi-case manifest without per-case "
                        f"selection for {missing}", "name a test_function for every case")

