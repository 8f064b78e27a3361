"""The cpu backend: real Python/numpy kernels measured with the same evidence contract as msprof.

Each case runs in its own process (``cpu_runner``); this parent turns the runner's samples into
the raw evidence of each ``repeat_NNN/``: ``samples.csv`` (one row: ``repeat,case_id,op_name,
duration_us,calls``), ``collection.log`` (argv, return code, stdout, stderr of the process that
measured it) and ``evidence_status.json``. ``read_repeat`` re-derives the duration from
``samples.csv`` alone. Durations are written with 3 decimals of microseconds, i.e. the exact
nanosecond count of ``perf_counter_ns``. There are no pipe counters on cpu, so the bound route of
every repeat is ``None`` (missing, never a made-up value). See docs/cpu-backend.md.
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
from ...contract.manifest import Case
from ..attestation import ATTESTATION_JSON
from .base import Backend, RepeatResult, RunSpec, marker_lines, repeat_dir_name, run_logged, runner_env, write_evidence_status

SAMPLES_CSV = "samples.csv"
COLUMNS = ("repeat", "case_id", "op_name", "duration_us", "calls")
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
              paired_runner: Path | None = None) -> list[str]:
        argv = [sys.executable, "-m", "perftune.measure.backends.cpu_runner", "--op-dir", str(spec.op_dir),
                "--runner", str(spec.runner), "--manifest", str(spec.manifest_file), "--case-id", case.id,
                "--op-name", spec.op_name, "--warmup", str(warmup), "--repeats", str(repeats),
                "--mode", mode, "--output", str(output)]
        return argv + (["--paired-runner", str(paired_runner)] if paired_runner else [])

    def _launch(self, spec: RunSpec, case: Case, log_path: Path, *, mode: str, warmup: int,
                repeats: int, paired_runner: Path | None = None) -> tuple[dict[str, Any], str]:
        """Run the runner once; return its JSON result and the collection.log text."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".cpu_runner_", dir=log_path.parent) as scratch:
            output = Path(scratch) / "result.json"
            argv = self._argv(spec, case, output, mode=mode, warmup=warmup, repeats=repeats,
                              paired_runner=paired_runner)
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

    def _write_repeat(self, spec: RunSpec, case: Case, folder: Path, number: int, sample: dict, log: str) -> RepeatResult:
        folder.mkdir(parents=True, exist_ok=True)
        duration = f"{int(sample['duration_ns']) / 1000:.3f}"
        row = [str(number), case.id, spec.op_name, duration, str(int(sample["calls"]))]
        fsio.write_text(folder / SAMPLES_CSV, ",".join(COLUMNS) + "\n" + _csv_line(row))
        fsio.write_text(folder / "collection.log", log)
        if "attestation" in sample:  # what the timed call received (measure/attestation.py)
            fsio.write_json(folder / ATTESTATION_JSON, sample["attestation"])
        repeat = self.read_repeat(folder, spec.op_name)
        write_evidence_status(folder, {
            "backend": self.name, "case": case.id, "target_op_name": spec.op_name,
            "status": "complete", "timing_source_file": SAMPLES_CSV, "repeat": number,
            "duration_us": repeat.duration_us, "calls": repeat.calls, "bound_diagnosis": None})
        return repeat

    def _measure(self, spec: RunSpec, case: Case, repeat_dirs: list[Path], log_path: Path) -> list[RepeatResult]:
        result, log = self._launch(spec, case, log_path, mode="time", warmup=spec.warmup,
                                   repeats=len(repeat_dirs))
        samples = result.get("samples")
        if not isinstance(samples, list) or len(samples) != len(repeat_dirs):
            raise CheckFailed(log_path, case.id, "runner returned the wrong number of samples", "see collection.log")
        out = []
        for index, (folder, sample) in enumerate(zip(repeat_dirs, samples), 1):
            number = int(m.group(1)) if (m := _REPEAT_RE.match(folder.name)) else index
            out.append(self._write_repeat(spec, case, folder, number, sample, log))
        return out

    def run_paired_case(self, spec: RunSpec, base_spec: RunSpec, case: Case, attempt: Path):
        """Both arms in ONE process, interleaved per repeat (see cpu_runner.time_paired).

        Returns (candidate, baseline, order), or None when the saved baseline has more sources
        than its runner (two versions of a helper module cannot share one interpreter).
        """
        if sorted(p.name for p in base_spec.runner.parent.glob("*.py")) != [base_spec.runner.name]:
            return None
        result, log = self._launch(spec, case, attempt / "collection.log", mode="time", warmup=spec.warmup,
                                   repeats=spec.repeats, paired_runner=base_spec.runner)
        cand, base, order = result.get("samples"), result.get("baseline_samples"), result.get("order")
        if not all(isinstance(x, list) and len(x) == spec.repeats for x in (cand, base, order)):
            raise CheckFailed(attempt, case.id, "paired runner returned the wrong number of samples",
                              "see collection.log")
        candidate, baseline = [], []
        for number in range(1, spec.repeats + 1):
            folder = attempt / repeat_dir_name(number)
            candidate.append(self._write_repeat(spec, case, folder / "candidate", number, cand[number - 1], log))
            baseline.append(self._write_repeat(base_spec, case, folder / "baseline", number, base[number - 1], log))
        return candidate, baseline, order

    def run_case(self, spec: RunSpec, case: Case, case_dir: Path) -> list[RepeatResult]:
        dirs = [case_dir / repeat_dir_name(i) for i in range(1, spec.repeats + 1)]
        return self._measure(spec, case, dirs, case_dir / "collection.log")

    def run_repeat(self, spec: RunSpec, case: Case, repeat_dir: Path) -> RepeatResult:
        return self._measure(spec, case, [repeat_dir], repeat_dir / "collection.log")[0]

    def read_repeat(self, repeat_dir: Path, op_name: str) -> RepeatResult:
        return parse_samples(repeat_dir / SAMPLES_CSV, op_name)

    def quick_case(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[float]:
        return [r.duration_us for r in self.run_case(spec, case, scratch_dir)]

    def list_op_names(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[dict[str, Any]]:
        result, _ = self._launch(spec, case, scratch_dir / "collection.log", mode="profile", warmup=0, repeats=1)
        return result["rows"]


def _csv_line(row: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(row)
    return buffer.getvalue()


def parse_samples_text(text: str, op_name: str, source: str = SAMPLES_CSV) -> RepeatResult:
    """Parse one repeat's ``samples.csv`` text strictly (pure): one row of the frozen op, one call."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ContractError(source, "-", f"malformed CSV: {exc}", "re-collect the round") from None
    if not rows or tuple(c.strip() for c in rows[0]) != COLUMNS:
        raise ContractError(source, "header", f"expected columns {','.join(COLUMNS)}", "re-collect the round")
    body = [r for r in rows[1:] if any(c.strip() for c in r)]
    if len(body) != 1 or len(body[0]) != len(COLUMNS):
        raise ContractError(source, "rows", f"{len(body)} sample rows (need exactly one)", "re-collect the round")
    cell = dict(zip(COLUMNS, (c.strip() for c in body[0])))
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
    return RepeatResult(duration, calls, None, (SAMPLES_CSV,))


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
