"""The cpu backend: real Python/numpy kernels measured with the same evidence contract as msprof.

A case's ``repeats`` are spread over ``processes`` fresh runner processes (``cpu_runner``, the
frozen ``protocol.processes``; each process does its own warm-ups, then ``repeats/processes``
timed calls; process p measures repeats ``p·k+1 … (p+1)·k``). This parent turns the runners'
samples into the raw evidence of each ``repeat_NNN/``: ``samples.csv`` (one row: ``repeat,case_id,
``repeat,case_id,op_name,duration_us,calls,process,format_version``; format version 0,
docs/architecture.md, has no ``format_version`` column and maybe no ``process`` column), ``collection.log`` (argv, return code, stdout, stderr of the process that
measured it) and ``evidence_status.json``. ``read_repeat`` re-derives the duration and the process
index from ``samples.csv`` alone. Durations are written with 3 decimals of microseconds, i.e. the
exact nanosecond count of ``perf_counter_ns``. There are no pipe counters on cpu, so the bound route
of every repeat is ``None`` (missing, never a made-up value). See docs/cpu-backend.md.
"""

from __future__ import annotations

import csv
import io
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from ... import fsio
from ...errors import CheckFailed, ContractError, EnvError
from ...contract import protocol
from ...contract.manifest import Case
from ..attestation import ATTESTATION_JSON
from .base import Backend, RepeatResult, RunSpec, fresh_args, marker_lines, repeat_dir_name, run_logged, runner_env, write_evidence_status

SAMPLES_CSV = "samples.csv"
COLUMNS = ("repeat", "case_id", "op_name", "duration_us", "calls", "process", "format_version")
HEADERS_V0 = (COLUMNS[:-1], COLUMNS[:-2])  # format version 0: with the process column, or from before it
_REPEAT_RE = re.compile(r"^repeat_(\d+)$")
MAX_SAMPLES_BYTES = 1 << 20


class CpuBackend(Backend):
    name = "cpu"
    timing_source_file = SAMPLES_CSV

    def check_environment(self) -> None:
        try:
            import numpy  # noqa: F401 - probe only
        except ImportError:
            raise EnvError("numpy", "-", "numpy is not importable", "pip install numpy") from None

    def _argv(self, spec: RunSpec, case: Case, output: Path, *, mode: str, warmup: int, repeats: int,
              paired_runner: Path | None = None, first_repeat: int = 0) -> list[str]:
        argv = [sys.executable, "-m", "perftune.measure.backends.cpu_runner", "--op-dir", str(spec.op_dir),
                "--runner", str(spec.runner), "--manifest", str(spec.manifest_file), "--case-id", case.id,
                "--op-name", spec.op_name, "--warmup", str(warmup), "--repeats", str(repeats),
                "--mode", mode, "--output", str(output)]
        if paired_runner:
            argv += ["--paired-runner", str(paired_runner), "--first-repeat", str(first_repeat)]
        return argv + fresh_args(spec)

    def _launch(self, spec: RunSpec, case: Case, log_path: Path, *, mode: str, warmup: int,
                repeats: int, paired_runner: Path | None = None, first_repeat: int = 0) -> tuple[dict[str, Any], str]:
        """Run the runner once; return its JSON result and the collection.log text."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".cpu_runner_", dir=log_path.parent) as scratch:
            output = Path(scratch) / "result.json"
            argv = self._argv(spec, case, output, mode=mode, warmup=warmup, repeats=repeats,
                              paired_runner=paired_runner, first_repeat=first_repeat)
            proc = run_logged(argv, env=runner_env(spec.device_id), cwd=spec.op_dir, log_path=log_path,
                              timeout_s=spec.timeout_s)
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            if proc.returncode != 0:
                raise CheckFailed(log_path, case.id, f"cpu runner exited {proc.returncode}: {tail}",
                                  "see collection.log; fix the runner or the test")
            if marker_lines(proc.stdout) != [case.id]:
                raise CheckFailed(log_path, case.id, f"selected-case markers {marker_lines(proc.stdout)}",
                                  "the runner must print exactly one marker line")
            result = fsio.read_json(output, what="cpu runner result")
        return result, log_path.read_text(encoding="utf-8")

    def _write_repeat(self, spec: RunSpec, case: Case, folder: Path, number: int, sample: dict, log: str,
                      process: int = 0) -> RepeatResult:
        folder.mkdir(parents=True, exist_ok=True)
        duration = f"{int(sample['duration_ns']) / 1000:.3f}"
        row = [str(number), case.id, spec.op_name, duration, str(int(sample["calls"])), str(process),
               str(protocol.EVIDENCE_FORMAT_VERSION)]
        fsio.write_text(folder / SAMPLES_CSV, ",".join(COLUMNS) + "\n" + _csv_line(row))
        fsio.write_text(folder / "collection.log", log)
        if "attestation" in sample:  # what the timed call received (measure/attestation.py)
            fsio.write_json(folder / ATTESTATION_JSON, sample["attestation"])
        repeat = self.read_repeat(folder, spec.op_name)
        write_evidence_status(folder, {
            "backend": self.name, "case": case.id, "target_op_name": spec.op_name,
            "status": "complete", "timing_source_file": SAMPLES_CSV, "repeat": number,
            "duration_us": repeat.duration_us, "calls": repeat.calls, "bound_diagnosis": None,
            "process": process})
        return repeat

    def _measure(self, spec: RunSpec, case: Case, repeat_dirs: list[Path], log_path: Path,
                 process: int = 0) -> list[RepeatResult]:
        result, log = self._launch(spec, case, log_path, mode="time", warmup=spec.warmup,
                                   repeats=len(repeat_dirs))
        samples = result.get("samples")
        if not isinstance(samples, list) or len(samples) != len(repeat_dirs):
            raise CheckFailed(log_path, case.id, "runner returned the wrong number of samples", "see collection.log")
        out = []
        for index, (folder, sample) in enumerate(zip(repeat_dirs, samples), 1):
            number = _repeat_number(folder) or index
            out.append(self._write_repeat(spec, case, folder, number, sample, log, process))
        return out

    def run_paired_case(self, spec: RunSpec, base_spec: RunSpec, case: Case, attempt: Path):
        """Both arms in each of the ``processes`` processes, interleaved per repeat (cpu_runner.time_paired;
        which arm goes first alternates with the round-wide repeat number, across processes too).

        Returns (candidate, baseline, order), or None when the saved baseline has more sources
        than its runner (two versions of a helper module cannot share one interpreter).
        """
        if sorted(p.name for p in base_spec.runner.parent.glob("*.py")) != [base_spec.runner.name]:
            return None
        candidate, baseline, order = [], [], []
        for process, numbers in enumerate(process_blocks(spec.repeats, spec.processes)):
            result, log = self._launch(spec, case, attempt / process_log_name(process, spec.processes), mode="time",
                                       warmup=spec.warmup, repeats=len(numbers), paired_runner=base_spec.runner,
                                       first_repeat=numbers[0] - 1)
            cand, base, ran = result.get("samples"), result.get("baseline_samples"), result.get("order")
            if not all(isinstance(x, list) and len(x) == len(numbers) for x in (cand, base, ran)):
                raise CheckFailed(attempt, case.id, "paired runner returned the wrong number of samples",
                                  "see collection.log")
            for k, number in enumerate(numbers):
                folder = attempt / repeat_dir_name(number)
                candidate.append(self._write_repeat(spec, case, folder / "candidate", number, cand[k], log, process))
                baseline.append(self._write_repeat(base_spec, case, folder / "baseline", number, base[k], log, process))
            order += ran
        return candidate, baseline, order

    def run_case(self, spec: RunSpec, case: Case, case_dir: Path) -> list[RepeatResult]:
        out = []
        for process, numbers in enumerate(process_blocks(spec.repeats, spec.processes)):
            dirs = [case_dir / repeat_dir_name(i) for i in numbers]
            out += self._measure(spec, case, dirs, case_dir / process_log_name(process, spec.processes), process)
        return out

    def run_repeat(self, spec: RunSpec, case: Case, repeat_dir: Path) -> RepeatResult:
        """One repeat in its own fresh process: process index = repeat number − 1 (``repeat_NNN``, or
        its arm folder ``repeat_NNN/<arm>`` when a paired round runs one process per arm and repeat)."""
        number = _repeat_number(repeat_dir) or 1
        return self._measure(spec, case, [repeat_dir], repeat_dir / "collection.log", number - 1)[0]

    def read_repeat(self, repeat_dir: Path, op_name: str) -> RepeatResult:
        return parse_samples(repeat_dir / SAMPLES_CSV, op_name)

    def quick_case(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[float]:
        return [r.duration_us for r in self.run_case(spec, case, scratch_dir)]

    def list_op_names(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[dict[str, Any]]:
        result, _ = self._launch(spec, case, scratch_dir / "collection.log", mode="profile", warmup=0, repeats=1)
        return result["rows"]


def _repeat_number(folder: Path) -> int | None:
    """N of ``repeat_NNN`` or of ``repeat_NNN/<arm>``; None for any other folder."""
    for name in (folder.name, folder.parent.name):
        if m := _REPEAT_RE.match(name):
            return int(m.group(1))
    return None


def process_blocks(repeats: int, processes: int) -> list[list[int]]:
    """Repeat numbers (from 1) measured by each process: consecutive equal blocks, in process order."""
    if processes < 1 or repeats % processes:
        raise ContractError("protocol", "processes", f"{processes} does not divide repeats {repeats}",
                            "freeze processes as a divisor of repeats")
    k = repeats // processes
    return [list(range(p * k + 1, (p + 1) * k + 1)) for p in range(processes)]


def process_log_name(process: int, processes: int) -> str:
    """The case-level log of one process: ``collection.log`` for one process, else ``collection_pNN.log``."""
    return "collection.log" if processes == 1 else f"collection_p{process:02d}.log"


def _csv_line(row: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(row)
    return buffer.getvalue()


def parse_samples_text(text: str, op_name: str, source: str = SAMPLES_CSV) -> RepeatResult:
    """Parse one repeat's ``samples.csv`` text strictly (pure): one row of the frozen op, one call, a
    known ``format_version`` and its process index (format version 0 without the column: ``None``)."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ContractError(source, "-", f"malformed CSV: {exc}", "re-collect the round") from None
    header = tuple(c.strip() for c in rows[0]) if rows else ()
    if header != COLUMNS and header not in HEADERS_V0:
        raise ContractError(source, "header", f"expected columns {','.join(COLUMNS)}", "re-collect the round")
    body = [r for r in rows[1:] if any(c.strip() for c in r)]
    if len(body) != 1 or len(body[0]) != len(header):
        raise ContractError(source, "rows", f"{len(body)} sample rows (need exactly one)", "re-collect the round")
    cell = dict(zip(header, (c.strip() for c in body[0])))
    version = cell.get("format_version", "0")
    if not (version.isdigit() and int(version) in protocol.EVIDENCE_FORMAT_VERSIONS):
        raise ContractError(source, "format_version", f"unknown evidence format version {version!r}",
                            "read the round with the perftune version that wrote it, or re-collect it")
    if cell["op_name"] != op_name:
        raise ContractError(source, "op_name", f"{cell['op_name']!r} is not the frozen op {op_name!r}",
                            "re-collect with the frozen op name")
    try:
        duration, calls = float(cell["duration_us"]), int(cell["calls"])
    except ValueError:
        raise ContractError(source, "duration_us", "not a number", "re-collect the round") from None
    if not fsio.is_finite_positive(duration):
        raise ContractError(source, "duration_us", f"{cell['duration_us']} is not finite and > 0",
                            "re-collect the round")
    if calls != 1:
        raise ContractError(source, "calls", f"the op was called {calls} times (need exactly 1)",
                            "each test must launch the target exactly once")
    process = cell.get("process")
    if process is not None and not re.fullmatch(r"\d{1,6}", process):
        raise ContractError(source, "process", f"{process!r} is not a process index", "re-collect the round")
    return RepeatResult(duration, calls, None, (SAMPLES_CSV,), None if process is None else int(process))


def parse_samples(path: Path, op_name: str) -> RepeatResult:
    """Read ``samples.csv`` (no symlinks, size-bounded) and parse it."""
    if path.is_symlink():
        raise ContractError(path, "-", "samples.csv is a symlink", "evidence must be regular files")
    try:
        if path.stat().st_size > MAX_SAMPLES_BYTES:
            raise ContractError(path, "-", "samples.csv is too large", "re-collect the round")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError(path, "-", "samples.csv is missing", "re-collect the round") from None
    except UnicodeDecodeError:
        raise ContractError(path, "-", "samples.csv is not UTF-8", "re-collect the round") from None
    return parse_samples_text(text, op_name, str(path))
