"""What one launch of an op is, as the profiler writes it: compute tasks, control tasks, streams.

One call of a kernel can write several op_summary rows with the same ``Op Name``. In a CANN 9.0.0
run of a PyPTO kernel every launch is three rows: two AI-CPU control tasks (each on its own
stream, every PMU metric ``N/A``) and one AI-core task carrying the metrics; ``Task Type`` is
``N/A`` on all three. The launch's duration is the AI-core task's, never a sum with the control
tasks.

The rule (one owner: this module). Each row of the target is classified, first source that knows:

1. ``Task Type`` of op_summary (``AI_CORE``, ``AI_VECTOR_CORE``, ``MIX_AIC``, ``MIX_AIV`` are
   compute; anything else, e.g. ``AI_CPU``, ``HCCL``, is not);
2. ``kernel_type`` of the task_time row with the same ``(Stream ID, Task ID)`` (``KERNEL_AICORE``,
   ``KERNEL_AIVEC``, ``KERNEL_MIX_AIC``, ``KERNEL_MIX_AIV`` are compute, ``KERNEL_AICPU`` is not);
3. the PMU columns: a row with a number in any of ``aicore_time(us)``, ``aiv_time(us)``,
   ``aic_total_cycles``, ``aiv_total_cycles`` or a ``*_ratio`` column is a compute task; a row
   whose PMU cells are all missing is a control task. Without any PMU column the kind is unknown.

The launches of an op are its compute rows; an op with no compute row (a pure AI-CPU op, or a
table without PMU columns) has one launch per row. ``rows_per_launch`` is rows / launches when
it divides evenly (else ``None`` and a warning). A formal round needs exactly one launch; several
are "the runner launched the target more than once" (refused, never averaged).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ContractError
from . import msprof_csv
from .msprof_csv import pd   # pandas, imported on first use

STREAM, TASK = "Stream ID", "Task ID"
COMPUTE_TASK_TYPES = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV"})
COMPUTE_KERNEL_TYPES = frozenset({"KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV"})
PMU_COLUMNS = ("aicore_time(us)", "aiv_time(us)", "aic_total_cycles", "aiv_total_cycles")
_RATIO = re.compile(r"_ratio$")
COMPUTE, CONTROL, UNKNOWN = "compute", "control", "unknown"
RULE = ("launches = the op's compute tasks (Task Type, else task_time kernel_type joined on stream/task "
        "ids, else PMU metrics present); control tasks are never summed into the kernel time")


def pmu_columns(names: Sequence[str]) -> list[str]:
    """The PMU metric columns of a header (the markers of a compute task)."""
    return [n for n in names if n in PMU_COLUMNS or _RATIO.search(n)]


def id_columns(names: Sequence[str]) -> list[str]:
    """The columns the launch rule reads besides Op Name / Duration (those present)."""
    return [c for c in (msprof_csv.TASK_TYPE, STREAM, TASK) if c in names] + pmu_columns(names)


@dataclass(frozen=True)
class OpLaunches:
    """Every row of one ``Op Name`` and how the rows make launches."""

    op_name: str
    rows: tuple[int, ...]                  # 0-based frame positions, file order
    kinds: tuple[str, ...]                 # compute / control / unknown per row
    labels: tuple[str, ...]                # the task type as the profiler names it (or inferred)
    streams: tuple[str | None, ...]
    durations: tuple[float | None, ...]
    basis: str                             # which source classified the rows
    warnings: tuple[str, ...] = field(default=())
    kernel_names: tuple[str, ...] = field(default=())   # task_time's names of the launch tasks

    @property
    def launch_rows(self) -> tuple[int, ...]:
        compute = tuple(r for r, k in zip(self.rows, self.kinds) if k == COMPUTE)
        return compute or self.rows

    @property
    def launches(self) -> int:
        return len(self.launch_rows)

    @property
    def rows_per_launch(self) -> int | None:
        return len(self.rows) // self.launches if len(self.rows) % self.launches == 0 else None

    def launch_durations(self) -> list[float | None]:
        index = {r: i for i, r in enumerate(self.rows)}
        return [self.durations[index[r]] for r in self.launch_rows]

    def launch_labels(self) -> list[str]:
        index = {r: i for i, r in enumerate(self.rows)}
        return [self.labels[index[r]] for r in self.launch_rows]

    def as_dict(self) -> dict[str, Any]:
        def side(kind: str) -> list[str]:
            return sorted({s for s, k in zip(self.streams, self.kinds) if k == kind and s is not None})
        control = [d for d, k in zip(self.durations, self.kinds) if k != COMPUTE and d is not None]
        durations = [d for d in self.launch_durations() if d is not None]
        return {"exact_op_name": self.op_name, "rows": len(self.rows), "launches": self.launches,
                "rows_per_launch": self.rows_per_launch, "basis": self.basis,
                "task_types": sorted(set(self.labels)), "compute_streams": side(COMPUTE),
                "control_streams": side(CONTROL) if COMPUTE in self.kinds else [],
                "launch_durations_us": durations,
                "total_duration_us": round(sum(durations), 6) if durations else None,
                "control_duration_us": round(sum(control), 6) if COMPUTE in self.kinds and control else None,
                "task_time_kernel_names": list(self.kernel_names), "warnings": list(self.warnings)}


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series([None] * len(frame), index=frame.index, dtype=object)
    return msprof_csv.stripped(frame[column])


def _task_time_join(frame: pd.DataFrame, task_time: pd.DataFrame | None, column: str) -> pd.Series:
    """A task_time column for each op_summary row, joined on (stream, task); None where no row joins."""
    empty = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    if task_time is None or STREAM not in frame.columns or TASK not in frame.columns:
        return empty
    keys = pd.DataFrame({"s": _text(task_time, "stream_id"), "t": _text(task_time, "task_id"),
                         "k": _text(task_time, column)}).dropna(subset=["s", "t"])
    keys = keys.drop_duplicates(subset=["s", "t"], keep=False)   # a reused id pair is no evidence
    lookup = {(s, t): k for s, t, k in zip(keys["s"], keys["t"], keys["k"])}
    pairs = zip(_text(frame, STREAM), _text(frame, TASK))
    return pd.Series([lookup.get((s, t)) for s, t in pairs], index=frame.index, dtype=object)


def classify(frame: pd.DataFrame, task_time: pd.DataFrame | None = None) -> tuple[list[str], list[str], str]:
    """``(kinds, labels, basis)`` for every row of ``frame`` (see the module docstring)."""
    types = _text(frame, msprof_csv.TASK_TYPE)
    kernels = _task_time_join(frame, task_time, msprof_csv.KERNEL_TYPE)
    pmu = pmu_columns(list(frame.columns))
    has_metric = frame[pmu].notna().any(axis=1) if pmu else pd.Series(False, index=frame.index)
    kinds, labels, bases = [], [], set()
    for task_type, kernel, metric in zip(types, kernels, has_metric):
        if task_type is not None:
            kinds.append(COMPUTE if task_type in COMPUTE_TASK_TYPES else CONTROL)
            labels.append(task_type)
            bases.add("Task Type")
        elif kernel is not None:
            kinds.append(COMPUTE if kernel in COMPUTE_KERNEL_TYPES else CONTROL)
            labels.append(kernel)
            bases.add("task_time kernel_type")
        elif pmu:
            kinds.append(COMPUTE if metric else CONTROL)
            labels.append("N/A (PMU metrics)" if metric else "N/A (no metrics)")
            bases.add("PMU metrics")
        else:
            kinds.append(UNKNOWN)
            labels.append("N/A")
            bases.add("none")
    return kinds, labels, "+".join(sorted(bases)) or "none"


def group(frame: pd.DataFrame, source: str, task_time: pd.DataFrame | None = None) -> list[OpLaunches]:
    """One :class:`OpLaunches` per Op Name of the table, in first-appearance order."""
    names = msprof_csv.stripped(frame[msprof_csv.OP_NAME])
    durations = msprof_csv.numeric(frame[msprof_csv.DURATION], source, msprof_csv.DURATION)
    kinds, labels, _ = classify(frame, task_time)
    streams = _text(frame, STREAM).tolist()
    kernel_names = _task_time_join(frame, task_time, msprof_csv.KERNEL_NAME).tolist()
    positions: dict[str, list[int]] = {}
    for position, name in enumerate(names):
        if name is not None:
            positions.setdefault(name, []).append(position)
    out = []
    for name, rows in positions.items():
        sub = frame.iloc[rows]
        _, _, basis = classify(sub, task_time)
        ops = OpLaunches(name, tuple(rows), tuple(kinds[r] for r in rows), tuple(labels[r] for r in rows),
                         tuple(streams[r] for r in rows),
                         tuple(None if pd.isna(durations.iloc[r]) else float(durations.iloc[r]) for r in rows),
                         basis)
        warnings = []
        if ops.rows_per_launch is None:
            warnings.append(f"{len(rows)} rows do not divide into {ops.launches} launches evenly")
        if UNKNOWN in ops.kinds:
            warnings.append("no Task Type, kernel_type or PMU column: every row counted as a launch")
        names_seen = tuple(dict.fromkeys(kernel_names[r] for r in ops.launch_rows if kernel_names[r] is not None))
        out.append(OpLaunches(**{**ops.__dict__, "warnings": tuple(warnings), "kernel_names": names_seen}))
    return out


def launch_values(frame: pd.DataFrame, ops: OpLaunches) -> list[dict[str, float | str | None]]:
    """Every cell of each launch row of ``ops`` (:func:`msprof_csv.cell`: number, text or None), in order."""
    records = frame.iloc[list(ops.launch_rows)].to_dict("records")
    return [{str(c): msprof_csv.cell(v) for c, v in record.items()} for record in records]


def op_launches(frame: pd.DataFrame, op_name: str, source: str,
                task_time: pd.DataFrame | None = None) -> OpLaunches:
    """The launches of the one exact ``op_name`` (no row equal to it is a ContractError)."""
    hits = [int(i) for i in (msprof_csv.stripped(frame[msprof_csv.OP_NAME]) == op_name).to_numpy().nonzero()[0]]
    if not hits:
        present = list(dict.fromkeys(msprof_csv.stripped(frame[msprof_csv.OP_NAME]).dropna().head(10000)))
        raise ContractError(source, msprof_csv.OP_NAME, f"no row equals {op_name!r} exactly ({len(frame)} rows; "
                            f"names present: {present[:3]})",
                            "freeze the exact name listed by collect_perf.py list-op-names")
    sub = frame.iloc[hits]
    (ops,) = group(sub, source, task_time)
    return OpLaunches(**{**ops.__dict__, "rows": tuple(hits)})


def select_target(frame: pd.DataFrame, op_name: str, source: str,
                  task_time: pd.DataFrame | None = None) -> msprof_csv.TargetRow:
    """The one launch of ``op_name``: its compute row (control rows are not the kernel's time)."""
    ops = op_launches(frame, op_name, source, task_time)
    if ops.launches != 1:
        rows = [r + 1 for r in ops.launch_rows[:5]]
        raise ContractError(source, msprof_csv.OP_NAME, f"{op_name!r} has {ops.launches} launches (data rows "
                            f"{rows}; {len(ops.rows)} rows, {ops.basis}): the runner launched the target "
                            "more than once", "make each profiled process launch the target exactly once")
    index = ops.launch_rows[0]
    record = frame.iloc[index]
    values = {str(column): msprof_csv.cell(record[column]) for column in frame.columns}
    duration = msprof_csv.positive_duration(record[msprof_csv.DURATION], source, msprof_csv.DURATION, index + 1)
    return msprof_csv.TargetRow(op_name=op_name, duration_us=duration, row=index + 1, values=values)


def select_task_time(task_time: pd.DataFrame, op_summary: pd.DataFrame, op_name: str, source: str) -> float:
    """Quick mode: the target's ``task_time(us)``, found through the (stream, task) ids of its op_summary
    rows, never by comparing ``kernel_name`` (task_time names the binary, e.g. ``tilefwk_0_mix_aic``)."""
    if STREAM not in op_summary.columns or TASK not in op_summary.columns:
        raise ContractError(source, "Stream ID/Task ID", "the op_summary has no stream/task ids to join",
                            "re-run msprof with --task-time=on (CANN writes both ids)")
    ops = op_launches(op_summary, op_name, source, task_time)
    if ops.launches != 1:
        raise ContractError(source, msprof_csv.KERNEL_NAME, f"{op_name!r} has {ops.launches} launches in one quick "
                            "run", "each quick run must launch the frozen target exactly once")
    row = op_summary.iloc[ops.launch_rows[0]]
    stream, task = (msprof_csv.cell(row[c]) for c in (STREAM, TASK))
    streams, tasks = (msprof_csv.numeric(task_time[c], source, c) for c in ("stream_id", "task_id"))
    hits = [int(i) for i in ((streams == stream) & (tasks == task)).to_numpy().nonzero()[0]]
    if len(hits) != 1:
        raise ContractError(source, "stream_id/task_id", f"{len(hits)} task_time rows carry stream {stream} task "
                            f"{task} of {op_name!r} (need 1)", "archive the task_time of the same run")
    return msprof_csv.positive_duration(task_time.iloc[hits[0]][msprof_csv.TASK_TIME], source,
                                        msprof_csv.TASK_TIME, hits[0] + 1)


ACLNN = re.compile(r"^aclnn", re.I)


def capture(frame: pd.DataFrame, op_name: str, source: str, task_time: pd.DataFrame | None = None) -> dict[str, Any]:
    """The whole capture's device time against the target's (issue 28 item 7): ``target_us`` is the
    target's compute tasks (control tasks never summed, as above), ``other_us`` every other op's rows:
    ``others`` lists each with its launches, device µs and kind: ``aclnn`` (an ``aclnn*`` op: a torch
    or ACL call the process made) and ``compute`` false for ``AI_CPU``/``HCCL`` tasks (a host round
    trip or a collective)."""
    op_launches(frame, op_name, source, task_time)   # the target must be there (one exact name)
    target_us, others = 0.0, []
    for item in group(frame, source, task_time):
        device = round(float(sum(d for d in item.launch_durations() if d is not None)), 6)
        if item.op_name == op_name:
            target_us = device
            continue
        others.append({"op_name": item.op_name, "launches": item.launches, "device_us": device,
                       "aclnn": bool(ACLNN.match(item.op_name)), "compute": COMPUTE in item.kinds,
                       "task_types": sorted(set(item.labels))})
    others.sort(key=lambda o: (-o["device_us"], o["op_name"]))
    other_us = round(float(sum(o["device_us"] for o in others)), 6)
    return {"op_name": op_name, "target_us": target_us, "other_us": other_us,
            "capture_us": round(target_us + other_us, 6), "others": others,
            "aclnn_ops": [o["op_name"] for o in others if o["aclnn"]],
            "non_compute_ops": [o["op_name"] for o in others if not o["compute"]]}
