"""The msprof backend (Ascend): command lines, runs, the archive of the 7 op_summary CSVs.

One repeat = one fresh set of processes for one case (DESIGN §4.3, §6):

1. ``spec.warmup`` plain runs of the runner (un-profiled). A failing warm-up fails the repeat
   (upstream ignored it; a runner that fails un-profiled cannot give a valid profiled sample).
2. The 7 metric groups in ``protocol.METRIC_GROUPS`` order, each
   ``msprof --ai-core=on --aic-metrics=<M> --task-time=on --ascendcl=on --output=<dir> <runner>``.
   Each run must exit 0, print exactly one ``PYPTO_PERF_SELECTED_CASE=<id>`` marker (unless the
   selector is ``single_case``) and leave exactly one op_summary table (``PROF_*/mindstudio_profiler_output``
   or CANN <= 6.3 ``PROF_*/device_<n>/summary``; slices merged: :mod:`profiler.prof_layout`). It is archived as ``repeat_NNN/op_summary_<M>.csv``: the
   profiler's bytes unchanged, or for a sharded table the merged text (slice headers dropped).
3. One sample-based run (``--aic-mode=sample-based --aic-freq=100``, PipeUtilization) for per-core
   cycles. Its failure is only a warning in ``evidence_status.json``. The cycles of
   ``device_*/sqlite/aicore.db`` (``AICoreOriginalData.task_cyc`` summed per ``coreid``) are
   process-scope, never attributed to the target: ``per_core_status`` is
   ``process_scope_unattributed`` (file ``process_scope_core_cycles.csv``) or ``unavailable:<reason>``
   and ``per_core_claim_allowed`` is always false.

The canonical duration is ``Task Duration(us)`` of the one launch of the exact ``Op Name`` in
``op_summary_PipeUtilization.csv`` (its compute task; a PyPTO launch's AI-CPU control rows are not
the kernel's time: :mod:`profiler.launches`); every one of the 7 archived tables must hold exactly
one launch. Quick mode archives the run's task_time and op_summary and joins them on the stream /
task ids (task_time names the binary, never the Op Name). :meth:`MsprofBackend.read_repeat` recomputes duration and bound route from the archive alone;
``run_repeat`` returns exactly what ``read_repeat`` computes. ``collection.log`` lists every
subprocess (argv, return code, stdout, stderr; never the environment). Profiler scratch trees are
deleted after each repeat.

Environment probe: ``msprof --help`` must start and exit 0 (``--version`` is not offered by
every CANN release). Missing or broken msprof is an :class:`EnvError` naming ``msprof`` (exit 3).
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ... import fsio
from .. import routing
from ...profiler import launches, msprof_csv, prof_layout
from ...contract import protocol
from ...errors import CheckFailed, ContractError, EnvError
from ...contract.manifest import Case
from ..attestation import ATTESTATION_JSON
from .base import COLLECTION_LOG, Backend, RepeatResult, RunSpec, format_log, marker_lines, run_logged, runner_env, write_evidence_status

MSPROF = "msprof"
TIMING_FILE = f"op_summary_{protocol.CANONICAL_METRIC}.csv"
CORE_CYCLES_FILE = "process_scope_core_cycles.csv"
TASK_TIME_FILE = "task_time.csv"
QUICK_SUMMARY_FILE = "op_summary.csv"   # quick runs: the op_summary whose ids map the op to task_time
MAX_CSV_BYTES = 2 << 30
# read_repeat materialises only Op Name, Task Duration(us) and, for the timing table, what the bound
# route reads (other columns stay unparsed: a 1,000,000-row op_summary is not held as strings).
ROUTE_COLUMNS = (msprof_csv.TASK_TYPE, *routing.CORE_COLUMNS,
                 *(c for core in routing.FAMILIES.values() for cols in core.values() for c in cols))
_REPEAT_RE = re.compile(r"^repeat_(\d+)$")
_ERROR_LINE = re.compile(r"(?i)(^|[^\w])(error|failed)\b")


def metric_file(metric: str) -> str:
    return f"op_summary_{metric}.csv"


def metric_argv(metric: str, output: Path, runner: list[str], executable: str = MSPROF) -> list[str]:
    """One aic-metrics collection (upstream flags, ``--k=v`` form)."""
    return [executable, "--ai-core=on", f"--aic-metrics={metric}", "--task-time=on", "--ascendcl=on",
            f"--output={output}", *runner]


def sample_argv(output: Path, runner: list[str], executable: str = MSPROF) -> list[str]:
    """The extra sample-based PipeUtilization run (per-core cycles)."""
    return [executable, "--ai-core=on", "--aic-mode=sample-based", "--aic-freq=100",
            f"--aic-metrics={protocol.CANONICAL_METRIC}", "--task-time=on", "--ascendcl=on",
            f"--output={output}", *runner]


def quick_argv(output: Path, runner: list[str], executable: str = MSPROF) -> list[str]:
    """Quick mode: task_time only."""
    return [executable, "--task-time=on", "--ascendcl=on", f"--output={output}", *runner]


def read_csv_file(path: Path) -> str:
    """The text of an evidence CSV: regular file, bounded size, strict UTF-8 (BOM dropped)."""
    if path.is_symlink():
        raise ContractError(path, "-", "evidence CSV is a symlink", "evidence must be regular files")
    try:
        size = path.stat().st_size
        if size > MAX_CSV_BYTES:
            raise ContractError(path, "-", f"{size} bytes is above the {MAX_CSV_BYTES} limit", "re-collect")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ContractError(path, "-", "CSV is missing", "re-collect the repeat; never recreate it by hand") from None
    return msprof_csv.decode(data, str(path))


def profiler_tables(output: Path, prefix: str) -> list[Path]:
    """The files of the one ``<prefix>`` table under ``output/PROF_*`` (see :mod:`profiler.prof_layout`)."""
    return prof_layout.table_files(output, prefix)


def archive_table(files: list[Path], target: Path) -> None:
    """Copy one table into the repeat folder: raw bytes, or the merged text of its slices."""
    if len(files) == 1:
        fsio.write_bytes(target, files[0].read_bytes())
        return
    texts = [read_csv_file(f) for f in files]
    fsio.write_text(target, msprof_csv.merge_slices(texts, [str(f) for f in files]))


def core_cycles(prof_output: Path) -> tuple[str, dict[int, int]]:
    """``(per_core_status, {coreid: cycles})`` from the sample-based run's ``aicore.db``."""
    dbs = sorted(prof_output.glob("PROF_*/device_*/sqlite/aicore.db"))
    if len(dbs) != 1:
        return ("unavailable:no_aicore_db" if not dbs else f"unavailable:ambiguous_aicore_db:{len(dbs)}"), {}
    try:
        with sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT coreid, SUM(task_cyc) FROM AICoreOriginalData GROUP BY coreid "
                              "ORDER BY coreid").fetchall()
    except sqlite3.Error as exc:
        return f"unavailable:sqlite_error:{exc}", {}
    cycles = {int(core): int(total) for core, total in rows if total is not None and total > 0}
    return ("process_scope_unattributed", cycles) if cycles else ("unavailable:no_positive_core_cycles", {})


class LogBook:
    """``collection.log`` of one repeat: every subprocess appended, the file rewritten atomically."""

    def __init__(self, path: Path) -> None:
        self.path, self.parts = path, []

    def add(self, argv: list[str], proc: subprocess.CompletedProcess) -> None:
        self.parts.append(format_log(argv, proc.returncode, proc.stdout, proc.stderr))
        fsio.write_text(self.path, "\n".join(self.parts))


def _tail(proc: subprocess.CompletedProcess) -> str:
    """The most telling output line of a failed run: the last error line, else the last line."""
    for stream in (proc.stderr or "", proc.stdout or ""):
        lines = [l.strip() for l in stream.splitlines() if l.strip()]
        errors = [l for l in lines if _ERROR_LINE.search(l)]
        if errors:
            return errors[-1][:300]
    lines = [l.strip() for l in (proc.stderr or proc.stdout or "").splitlines() if l.strip()]
    return (lines or ["no output"])[-1][:300]


class MsprofBackend(Backend):
    """msprof on an Ascend NPU (tests drive it through a fake ``msprof`` on PATH)."""

    name = "msprof"
    timing_source_file = TIMING_FILE

    def __init__(self, executable: str = MSPROF) -> None:
        self.executable = executable

    def check_environment(self) -> None:
        found = shutil.which(self.executable)
        fix = "source the CANN set_env.sh so msprof is on PATH, or freeze the manifest with --backend cpu"
        if found is None:
            raise EnvError(MSPROF, "PATH", "msprof is not on PATH", fix)
        try:
            proc = subprocess.run([found, "--help"], capture_output=True, text=True, timeout=120,
                                  errors="replace")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvError(MSPROF, "start", f"msprof failed to start: {exc}", fix) from None
        if proc.returncode != 0:
            raise EnvError(MSPROF, "start", f"'msprof --help' exited {proc.returncode}: {_tail(proc)}", fix)

    # --- running ------------------------------------------------------------------------------

    def _run(self, spec: RunSpec, case: Case, argv: list[str], log: LogBook, what: str) -> None:
        proc = run_logged(argv, env=runner_env(spec.device_id), cwd=spec.op_dir, log_path=None,
                          timeout_s=spec.timeout_s)
        log.add(argv, proc)
        if proc.returncode != 0:
            raise CheckFailed(log.path, what, f"exit {proc.returncode}: {_tail(proc)}",
                              "see collection.log; fix the runner or the profiler set-up")
        markers = marker_lines(proc.stdout)
        if spec.selector.kind != "single_case" and markers != [case.id]:
            raise CheckFailed(log.path, what, f"selected-case markers {markers} (need [{case.id!r}])",
                              "each profiled process must run exactly one case")

    def _warmups(self, spec: RunSpec, case: Case, runner: list[str], log: LogBook) -> None:
        for index in range(1, spec.warmup + 1):
            self._run(spec, case, runner, log, f"warm-up {index}")

    def run_repeat(self, spec: RunSpec, case: Case, repeat_dir: Path) -> RepeatResult:
        repeat_dir.mkdir(parents=True, exist_ok=True)
        log, runner = LogBook(repeat_dir / COLLECTION_LOG), self.case_command(spec, case.id)
        if spec.selector.kind == "function_adapter":  # the adapter records what the launch received
            runner = [*runner, "--op-name", spec.op_name, "--attest", str(repeat_dir / ATTESTATION_JSON)]
        status: dict[str, Any] = {"backend": self.name, "case": case.id, "target_op_name": spec.op_name,
                                  "timing_source_file": TIMING_FILE, "timing_source_metric":
                                  protocol.CANONICAL_METRIC, "per_core_claim_allowed": False, "warnings": []}
        if match := _REPEAT_RE.match(repeat_dir.name):
            status["repeat"] = int(match.group(1))
        scratch = Path(tempfile.mkdtemp(prefix=".msprof_", dir=repeat_dir))
        try:
            self._warmups(spec, case, runner, log)
            for metric in protocol.METRIC_GROUPS:
                output = scratch / metric
                self._run(spec, case, metric_argv(metric, output, runner, self.executable), log, metric)
                archive_table(profiler_tables(output, "op_summary"), repeat_dir / metric_file(metric))
            result = self.read_repeat(repeat_dir, spec.op_name)
            status["launch"] = check_launch(repeat_dir / TIMING_FILE, spec.op_name,
                                            spec.manifest.protocol.launch if spec.manifest.protocol else None)
            status.update(self._sample_run(spec, case, runner, scratch / "Sample", log, repeat_dir))
        except (CheckFailed, ContractError) as exc:
            status.update(status="failed", seven_metric_status="incomplete", failure=exc.line())
            write_evidence_status(repeat_dir, status)
            raise CheckFailed(exc.file, exc.field, exc.problem, exc.fix) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        status.update(status="complete", seven_metric_status="complete", duration_us=result.duration_us,
                      calls=result.calls, bound_diagnosis=result.bound_route,
                      metric_files={f: fsio.sha256_file(repeat_dir / f) for f in result.raw_files})
        write_evidence_status(repeat_dir, status)
        return result

    def _sample_run(self, spec: RunSpec, case: Case, runner: list[str], output: Path, log: LogBook,
                    repeat_dir: Path) -> dict[str, Any]:
        """The sample-based run; any failure becomes a warning, never a failed repeat."""
        try:
            self._run(spec, case, sample_argv(output, runner, self.executable), log, "sample-based run")
        except CheckFailed as exc:
            return {"per_core_status": "unavailable:sample_run_failed",
                    "warnings": [f"sample-based run failed (per-core cycles unavailable): {exc.problem}"]}
        state, cycles = core_cycles(output)
        if cycles:
            lines = ["coreid,task_cycles"] + [f"{core},{total}" for core, total in sorted(cycles.items())]
            fsio.write_text(repeat_dir / CORE_CYCLES_FILE, "\n".join(lines) + "\n")
        return {"per_core_status": state, "warnings": []}

    # --- reading ------------------------------------------------------------------------------

    def read_repeat(self, repeat_dir: Path, op_name: str) -> RepeatResult:
        rows = {}
        for metric in protocol.METRIC_GROUPS:
            path = repeat_dir / metric_file(metric)
            text = read_csv_file(path)
            present = msprof_csv.header(text, str(path))
            wanted = (*ROUTE_COLUMNS, *launches.id_columns(present)) if metric == protocol.CANONICAL_METRIC \
                else launches.id_columns(present)
            frame = msprof_csv.read_op_summary(text, str(path), list(dict.fromkeys(c for c in wanted if c in present)))
            rows[metric] = launches.select_target(frame, op_name, str(path))
        pipe = rows[protocol.CANONICAL_METRIC]
        route = {**routing.route(pipe.values, str(repeat_dir / TIMING_FILE)),
                 "source_file": TIMING_FILE, "source_row": pipe.row}
        return RepeatResult(pipe.duration_us, 1, route, tuple(metric_file(m) for m in protocol.METRIC_GROUPS))

    # --- quick and discovery --------------------------------------------------------------------

    def quick_case(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[float]:
        scratch_dir.mkdir(parents=True, exist_ok=True)
        log, runner = LogBook(scratch_dir / COLLECTION_LOG), self.case_command(spec, case.id)
        durations = []
        try:
            self._warmups(spec, case, runner, log)
            for index in range(1, spec.repeats + 1):
                output = scratch_dir / f".prof_{index:03d}"
                self._run(spec, case, quick_argv(output, runner, self.executable), log, f"quick {index}")
                target = scratch_dir / f"repeat_{index:03d}" / TASK_TIME_FILE
                archive_table(profiler_tables(output, "task_time"), target)
                archive_table(profiler_tables(output, "op_summary"), target.with_name(QUICK_SUMMARY_FILE))
                shutil.rmtree(output, ignore_errors=True)
                durations.append(self.read_quick_repeat(target.parent, spec.op_name))
        except ContractError as exc:
            raise CheckFailed(exc.file, exc.field, exc.problem, exc.fix) from None
        return durations

    def read_quick_repeat(self, repeat_dir: Path, op_name: str) -> float:
        """``task_time(us)`` of the target in a quick repeat, found through the op_summary's stream/task ids."""
        target, summary = repeat_dir / TASK_TIME_FILE, repeat_dir / QUICK_SUMMARY_FILE
        columns = [msprof_csv.KERNEL_NAME, msprof_csv.KERNEL_TYPE, "stream_id", "task_id", msprof_csv.TASK_TIME]
        frame = msprof_csv.read_table(read_csv_file(target), str(target), columns)
        text = read_csv_file(summary)
        present = msprof_csv.header(text, str(summary))
        ops = msprof_csv.read_op_summary(text, str(summary), launches.id_columns(present))
        return launches.select_task_time(frame, ops, op_name, str(summary))

    def list_op_names(self, spec: RunSpec, case: Case, scratch_dir: Path) -> list[dict[str, Any]]:
        scratch_dir.mkdir(parents=True, exist_ok=True)
        log, runner = LogBook(scratch_dir / COLLECTION_LOG), self.case_command(spec, case.id)
        self._warmups(spec, case, runner, log)
        output = scratch_dir / "discovery"
        self._run(spec, case, metric_argv(protocol.CANONICAL_METRIC, output, runner, self.executable),
                  log, "discovery run")
        target = scratch_dir / TIMING_FILE
        archive_table(profiler_tables(output, "op_summary"), target)
        text = read_csv_file(target)
        present = msprof_csv.header(text, str(target))
        frame = msprof_csv.read_op_summary(text, str(target), launches.id_columns(present))
        task_time = None
        if any(output.glob("PROF_*/**/task_time_*.csv")):
            times = scratch_dir / TASK_TIME_FILE
            archive_table(profiler_tables(output, "task_time"), times)
            task_time = msprof_csv.read_table(read_csv_file(times), str(times))
        rows = [discovery_row(ops) for ops in launches.group(frame, str(target), task_time)]
        return sorted(rows, key=lambda r: (r["total_duration_us"] is None, -(r["total_duration_us"] or 0.0),
                                           r["exact_op_name"]))


def check_launch(path: Path, op_name: str, frozen: dict[str, Any] | None) -> dict[str, Any]:
    """The target's launch in an archived table; a launch of other rows than the frozen one is refused."""
    text = read_csv_file(path)
    frame = msprof_csv.read_op_summary(text, str(path), launches.id_columns(msprof_csv.header(text, str(path))))
    ops = launches.op_launches(frame, op_name, str(path))
    found = {"rows_per_launch": ops.rows_per_launch, "task_types": sorted(set(ops.labels)), "basis": ops.basis}
    if frozen is not None and frozen.get("rows_per_launch") != ops.rows_per_launch:
        raise ContractError(path, "protocol.launch", f"one launch of {op_name!r} is {ops.rows_per_launch} rows here, "
                            f"{frozen.get('rows_per_launch')} when frozen (discovery)",
                            "the kernel's launch changed (runtime, CANN or code); run discovery and re-freeze")
    return found


def discovery_row(ops: launches.OpLaunches) -> dict[str, Any]:
    """One discovery-table row: the op's launches (count = launches), task types, streams, durations."""
    row = ops.as_dict()
    row.update(count=ops.launches, task_type=",".join(row["task_types"]))
    return row
