"""What Stage 5 would extract from a profiler output: any PROF_*, OPPROF_*, ASCEND_PROFILER_OUTPUT folder or file.

:func:`inspect_path` reads, with the same readers the backends use, every table it finds and
reports: the tables (kind, files, slices merged), per op the launches (:mod:`profiler.launches`:
rows per launch, task types, compute / control streams, durations), the PMU metric columns, and
for ``op_name`` the target: its duration per launch, whether a formal round would accept the
table (exactly one launch) or refuse it (and why), the quick-mode duration (task_time joined on
stream / task ids) and the target's ``*_ratio`` columns per pipe family as written. torch_npu
``kernel_details.csv`` gives the golden path's total and device rule; msOpProf
``OpBasicInfo.csv`` / ``PipeUtilization.csv`` their rows; Chrome-trace timelines (``trace.json``,
``msprof_*.json``) their lanes and window through :mod:`profiler.timeline` as it is. Every reader
refusal on a part becomes a warning; a path with nothing readable is a ContractError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ContractError
from . import core_types, kernel_details, launches, msopprof_csv, msprof_csv, prof_layout, timeline

MAX_BYTES = 64 << 20
TRACE_GLOBS = ("trace.json", "msprof_*.json", "trace_view.json")


def _text(path: Path) -> str:
    if path.stat().st_size > MAX_BYTES:
        raise ContractError(path, "-", f"{path.stat().st_size} bytes is above the inspection limit",
                            "inspect a smaller output or one PROF folder")
    return msprof_csv.decode(path.read_bytes(), str(path))


def _merged(files: list[Path]) -> str:
    texts = [_text(f) for f in files]
    return texts[0] if len(texts) == 1 else msprof_csv.merge_slices(texts, [str(f) for f in files])


def _table(root: Path, prefix: str, warnings: list[str]) -> tuple[list[Path], str | None]:
    if root.is_file():
        return ([root], _text(root)) if root.name.startswith(prefix + "_") else ([], None)
    if not prof_layout.table_folders(root, prefix):
        return [], None
    try:
        files = prof_layout.table_files(root, prefix)
        return files, _merged(files)
    except ContractError as exc:
        warnings.append(exc.line())
        return [], None


def _rel(path: Path, root: Path) -> str:
    base = root if root.is_dir() else root.parent
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _target(frame, task_time, op_name: str, source: str, warnings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"op_name": op_name}
    try:
        ops = launches.op_launches(frame, op_name, source, task_time)
    except ContractError as exc:
        warnings.append(exc.line())
        return {**out, "found": False}
    out.update(found=True, launches=ops.launches, rows_per_launch=ops.rows_per_launch,
               launch_durations_us=[d for d in ops.launch_durations() if d is not None])
    try:
        row = launches.select_target(frame, op_name, source, task_time)
        out.update(formal_round="accepted", duration_us=row.duration_us, row=row.row)
        number = {c: v for c, v in row.values.items() if isinstance(v, float)}
        primary, basis = core_types.primary_core(*core_types.values_of(number.get))
        ratios = {core: {family: {c: number[c] for c in cols if c in number} for family, cols in pipes.items()}
                  for core, pipes in core_types.PIPE_COLUMNS.items()}
        out.update(primary_core=primary, primary_core_basis=basis,
                   pipe_ratios={core: {f: r for f, r in fams.items() if r} for core, fams in ratios.items()})
    except ContractError as exc:
        out["formal_round"] = f"refused: {exc.problem}"
    if task_time is not None and ops.launches == 1:
        try:
            out["quick_duration_us"] = launches.select_task_time(task_time, frame, op_name, source)
        except ContractError as exc:
            out["quick_duration_us"] = None
            warnings.append(exc.line())
    return out


def _msprof(root: Path, op_name: str | None, report: dict[str, Any]) -> None:
    warnings = report["warnings"]
    files, text = _table(root, "op_summary", warnings)
    tt_files, tt_text = _table(root, "task_time", warnings)
    task_time = None
    if tt_text is not None:
        report["tables"].append({"kind": "task_time", "files": [_rel(f, root) for f in tt_files]})
        try:
            task_time = msprof_csv.read_table(tt_text, str(tt_files[0]))
        except ContractError as exc:
            warnings.append(exc.line())
    if text is None:
        return
    source = str(files[0])
    try:
        frame = msprof_csv.read_op_summary(text, source)
    except ContractError as exc:
        warnings.append(exc.line())
        return
    names = list(frame.columns)
    report["tables"].append({"kind": "op_summary", "files": [_rel(f, root) for f in files],
                             "rows": len(frame), "pmu_columns": launches.pmu_columns(names)})
    try:
        report["ops"] = [o.as_dict() for o in launches.group(frame, source, task_time)]
    except ContractError as exc:
        warnings.append(exc.line())
    for item in report["ops"]:
        warnings.extend(f"{item['exact_op_name']}: {w}" for w in item["warnings"])
    if op_name is not None:
        report["target"] = _target(frame, task_time, op_name, source, warnings)


def _kernel_details(root: Path, report: dict[str, Any]) -> None:
    for path in prof_layout.kernel_details_files(root):
        try:
            text = _text(path)
            names = msprof_csv.header(text, str(path))
            device = 0
            if kernel_details.DEVICE in names:
                column = msprof_csv.read_table(text, str(path), [kernel_details.DEVICE])[kernel_details.DEVICE]
                devices = sorted({int(v) for v in msprof_csv.numeric(column, str(path), "Device_id").dropna()})
                device = devices[0] if len(devices) == 1 else -1
            read = kernel_details.read_kernel_details(text, device, str(path))
            report["kernel_details"].append({"file": _rel(path, root), "rows": read.rows,
                                             "total_us": round(read.total_us, 6), "device_rule": read.device_rule,
                                             "device_id": device if read.device_rule == "column" else None,
                                             "accelerator_cores": read.accelerator_cores})
        except ContractError as exc:
            report["warnings"].append(exc.line())


def _msopprof(root: Path, report: dict[str, Any]) -> None:
    for path in prof_layout.msopprof_files(root):
        try:
            kind, text = msopprof_csv.kind_of(path.name), _text(path)
            content = msopprof_csv.op_basic_info(text, str(path)) if kind == "OpBasicInfo" \
                else msopprof_csv.pipe_utilization(text, str(path))
            report["msopprof"].append({"file": _rel(path, root), "kind": kind, "content": content})
        except ContractError as exc:
            report["warnings"].append(exc.line())


def _timelines(root: Path, op_name: str | None, report: dict[str, Any]) -> None:
    paths = [root] if root.is_file() and root.suffix == ".json" else \
        sorted({p for g in TRACE_GLOBS for p in root.rglob(g)}) if root.is_dir() else []
    for path in paths:
        item: dict[str, Any] = {"file": _rel(path, root)}
        try:
            text = _text(path)
            events, _, _ = timeline.chrome_trace_events(text, str(path))
            item["events"] = len(events)
            trace = timeline.read_trace([(text, str(path))], op_name, core=path.parent.name)
            model = timeline.summarise_trace(trace)
            item.update(window=model["window"], lane_model=model["lane_model"], lanes=len(model["lanes"]),
                        families=sorted(model["pipes"]))
        except ContractError as exc:
            report["warnings"].append(exc.line())
        report["timelines"].append(item)


def inspect_path(path: str | Path, op_name: str | None = None) -> dict[str, Any]:
    """The inspection report of one profiler folder or file (see the module docstring)."""
    root = Path(path)
    if not root.exists():
        raise ContractError(path, "PATH", "does not exist", "pass a PROF_*, OPPROF_* or ASCEND_PROFILER_OUTPUT "
                            "folder, or one of their files")
    report: dict[str, Any] = {"path": str(root), "op_name": op_name, "tables": [], "ops": [], "kernel_details": [],
                              "msopprof": [], "timelines": [], "warnings": []}
    if root.is_file() and root.name in prof_layout.MSOPPROF_FILES or root.is_dir():
        _msopprof(root, report)
    if root.is_file() and root.name == prof_layout.KERNEL_DETAILS or root.is_dir():
        _kernel_details(root, report)
    if root.is_dir() or root.name.startswith(("op_summary_", "task_time_")):
        _msprof(root, op_name, report)
    if root.is_dir() or root.suffix == ".json":
        _timelines(root, op_name, report)
    if not any(report[k] for k in ("tables", "kernel_details", "msopprof", "timelines")):
        detail = f" ({report['warnings'][0]})" if report["warnings"] else ""
        raise ContractError(path, "PATH", f"no profiler table or timeline found{detail}",
                            "pass a PROF_*, OPPROF_* or ASCEND_PROFILER_OUTPUT folder, or one of their files")
    return report


def render_text(report: dict[str, Any]) -> str:
    """The human view of :func:`inspect_path`'s report (the JSON is the machine form)."""
    lines = [f"{report['path']}"]
    for table in report["tables"]:
        extra = f", {table['rows']} rows, {len(table['pmu_columns'])} PMU columns" if "rows" in table else ""
        lines.append(f"table {table['kind']}: {', '.join(table['files'])}{extra}")
    for op in report["ops"]:
        lines.append(f"op {op['exact_op_name']}: {op['launches']} launches, {op['rows']} rows "
                     f"({op['rows_per_launch']} per launch), task types {op['task_types']}, compute streams "
                     f"{op['compute_streams']}, control streams {op['control_streams']}, total "
                     f"{op['total_duration_us']} us")
    target = report.get("target")
    if target:
        if target.get("found"):
            lines.append(f"target {target['op_name']}: {target['launches']} launches "
                         f"{target['launch_durations_us'][:10]} us; formal round {target['formal_round']}")
            if "duration_us" in target:
                lines.append(f"  duration {target['duration_us']} us (data row {target['row']}); "
                             f"primary core {target['primary_core']} ({target['primary_core_basis']}), pipe ratios {target['pipe_ratios']}")
            if "quick_duration_us" in target:
                lines.append(f"  quick mode (task_time by stream/task ids): {target['quick_duration_us']} us")
        else:
            lines.append(f"target {target['op_name']}: not found")
    for item in report["kernel_details"]:
        lines.append(f"kernel_details {item['file']}: {item['rows']} rows, total {item['total_us']} us, device "
                     f"rule {item['device_rule']}, cores {item['accelerator_cores']}")
    for item in report["msopprof"]:
        lines.append(f"msOpProf {item['kind']} {item['file']}: {item['content']}")
    for item in report["timelines"]:
        lines.append(f"timeline {item['file']}: {item.get('events')} events, window {item.get('window')}, lane model {item.get('lane_model')}, "
                     f"lanes {item.get('lanes')}, families {item.get('families')}")
    lines += [f"warning: {w}" for w in report["warnings"]]
    return "\n".join(lines) + "\n"
