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
from .. import fsio
from ..contract import schemas
from . import (core_types, diagnosis, hotspots, kernel_details, launches, msopprof_csv, msprof_csv, occupancy,
               prof_layout, timeline)

MAX_BYTES = 64 << 20
TRACE_GLOBS = ("trace.json", "msprof_*.json", "trace_view.json")
READERS = {"OpBasicInfo": msopprof_csv.op_basic_info, "PipeUtilization": msopprof_csv.pipe_utilization,
           "instr_exe": hotspots.instr_exe, "code_exe": hotspots.code_exe}


def _text(path: Path) -> str:
    if path.stat().st_size > MAX_BYTES:
        raise ContractError(path, "-", f"{path.stat().st_size} bytes is above the inspection limit",
                            "inspect a smaller output or one PROF folder")
    return msprof_csv.decode(path.read_bytes(), str(path))


def _merged(files: list[Path]) -> str:
    texts = [_text(f) for f in files]
    return texts[0] if len(texts) == 1 else msprof_csv.merge_slices(texts, [str(f) for f in files])


def _table(root: Path, prefix: str, found: dict[str, list[Path]], warnings: list[str]) -> tuple[list[Path], str | None]:
    """The files and merged text of the one ``prefix`` table: a file of that kind, else by name, else the
    one file of that kind by content (``found``: :func:`prof_layout.content_kinds`)."""
    if root.is_file():
        return ([root], _text(root)) if prof_layout.kind_of_file(root) == prefix else ([], None)
    try:
        if prof_layout.table_folders(root, prefix):
            files = prof_layout.table_files(root, prefix)
            return files, _merged(files)
        by_content = found.get(prefix, [])
        if len(by_content) > 1:
            raise ContractError(root, f"{prefix} (by content)", f"{len(by_content)} files hold a {prefix} table: "
                                f"{[_rel(f, root) for f in by_content[:4]]}", "inspect one run's folder or file")
        return (by_content, _text(by_content[0])) if by_content else ([], None)
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


def _diagnose(frame, ops: launches.OpLaunches, cores: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`diagnosis.diagnose` of one op over all its launches."""
    rows = [diagnosis.numbers_of(v) for v in launches.launch_values(frame, ops)]
    return diagnosis.diagnose(rows, ops.launch_durations(), row_types=ops.labels, launch_types=ops.launch_labels(),
                              compute=launches.COMPUTE in ops.kinds, cores=cores)


def _msprof(root: Path, op_name: str | None, report: dict[str, Any], found: dict[str, list[Path]]) -> None:
    warnings = report["warnings"]
    files, text = _table(root, "op_summary", found, warnings)
    tt_files, tt_text = _table(root, "task_time", found, warnings)
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
        report["ops"] = [{**o.as_dict(), "diagnosis": _diagnose(frame, o, report["cores"])}
                         for o in launches.group(frame, source, task_time)]
    except ContractError as exc:
        warnings.append(exc.line())
    for item in report["ops"]:
        warnings.extend(f"{item['exact_op_name']}: {w}" for w in item["warnings"])
    if op_name is not None:
        report["target"] = _target(frame, task_time, op_name, source, warnings)


def _kernel_details(root: Path, report: dict[str, Any], found: dict[str, list[Path]]) -> None:
    for path in sorted({*prof_layout.kernel_details_files(root), *found.get("kernel_details", [])}):
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


def _msopprof(root: Path, report: dict[str, Any], found: dict[str, list[Path]]) -> None:
    by_content = [p for k in prof_layout.MSOPPROF_KINDS for p in found.get(k, [])]
    for path in sorted({*prof_layout.msopprof_files(root), *by_content}):
        try:
            kind = prof_layout.kind_of_file(path)
            if kind not in READERS:     # the name says msOpProf, the header another table
                continue
            content = READERS[kind](_text(path), str(path))
            report["msopprof"].append({"file": _rel(path, root), "kind": kind, "content": content})
        except ContractError as exc:
            report["warnings"].append(exc.line())


def _msopprof_diagnoses(root: Path, report: dict[str, Any]) -> None:
    """One diagnosis per folder holding a ``PipeUtilization`` table: its block rows, the side with the larger
    summed core time, the per-block spread and the blocks of ``OpBasicInfo`` in the same folder (on a ``mix``
    kernel the vector side's blocks are its ``Mix Block Dim``, the MIX_AIC layout of one cube and two vector
    rows per block)."""
    folders: dict[str, dict[str, Any]] = {}
    for item in report["msopprof"]:
        folders.setdefault(str(Path(item["file"]).parent), {})[item["kind"]] = item
    for folder, kinds in sorted(folders.items()):
        if "PipeUtilization" not in kinds:
            continue
        path = (root if root.is_dir() else root.parent) / kinds["PipeUtilization"]["file"]
        try:
            rows = msopprof_csv.block_rows(_text(path), str(path))
        except ContractError as exc:
            report["warnings"].append(exc.line())
            continue
        side = diagnosis.block_side(rows)
        basic = ((kinds.get("OpBasicInfo") or {}).get("content") or [{}])[0]
        blocks = {"Block Num": basic.get("block_dim"), "Mix Block Num": basic.get("mix_block_dim")}
        kind = "MIX_AIC" if basic.get("op_type") == "mix" else None
        spread = occupancy.msopprof_spread(kinds["PipeUtilization"]["content"], side[0], kinds["PipeUtilization"]["file"]) \
            if side[0] else None
        found = diagnosis.diagnose([{**r, **{k: v for k, v in blocks.items() if v}} for r in rows],
                                   [basic.get("duration_us")], launch_types=[kind] * len(rows), cores=report["cores"],
                                   block_spread=spread, side=side)
        found["figures"]["rows_are"] = "msOpProf block rows (one per block and sub-block), not launches"
        report["msopprof_diagnoses"].append({"folder": folder, "op_name": basic.get("op_name"), "diagnosis": found})


def _platform(platform: str | Path | None, chip: str | None) -> dict[str, Any] | None:
    """The chip's core counts from a platform file (:func:`occupancy.cores_of`), None without a file."""
    if platform is None:
        return None
    obj = fsio.read_json(Path(platform), what="platform file")
    schemas.validate(obj, "platform", platform)
    cores = occupancy.cores_of(obj, chip)
    if cores is None:
        have = [p for e in obj.get("cores") or [] for p in e["chip_patterns"]]
        raise ContractError(platform, "cores", f"no core counts for chip {chip!r} (entries for {have})",
                            "pass --chip with the npu-smi 'Chip Name' of the card, or a platform file with its cores")
    return {**cores, "platform_file": str(platform)}


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


def inspect_path(path: str | Path, op_name: str | None = None, *, platform: str | Path | None = None,
                 chip: str | None = None) -> dict[str, Any]:
    """The inspection report of one profiler folder or file (see the module docstring); ``platform`` (a
    ``platforms/*.json`` file) and ``chip`` give the core counts the occupancy rule reads."""
    root = Path(path)
    if not root.exists():
        raise ContractError(path, "PATH", "does not exist", "pass a PROF_*, OPPROF_* or ASCEND_PROFILER_OUTPUT "
                            "folder, or one of their files")
    report: dict[str, Any] = {"path": str(root), "op_name": op_name, "cores": _platform(platform, chip), "tables": [],
                              "ops": [], "kernel_details": [], "msopprof": [], "msopprof_diagnoses": [],
                              "timelines": [], "warnings": []}
    kind = prof_layout.kind_of_file(root) if root.is_file() else None
    found = prof_layout.content_kinds(root) if root.is_dir() else {}
    if root.is_dir() or kind in prof_layout.MSOPPROF_KINDS:
        _msopprof(root, report, found)
        _msopprof_diagnoses(root, report)
    if root.is_dir() or kind == "kernel_details":
        _kernel_details(root, report, found)
    if root.is_dir() or kind in prof_layout.MSPROF_TABLES:
        _msprof(root, op_name, report, found)
    if root.is_dir() or root.suffix == ".json":
        _timelines(root, op_name, report)
    if not any(report[k] for k in ("tables", "kernel_details", "msopprof", "timelines")):
        detail = f" ({report['warnings'][0]})" if report["warnings"] else ""
        raise ContractError(path, "PATH", f"no profiler table or timeline found{detail}",
                            "pass a PROF_*, OPPROF_* or ASCEND_PROFILER_OUTPUT folder, or one of their files")
    return report


def _diagnosis_line(found: dict[str, Any]) -> str:
    return (f"  diagnosis {found['label']} [{found['rule_id']}] on {found['side']}: {found['rule']}; next: "
            f"{found['next']['command']} ({', '.join(found['next']['families'])})")


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
        lines.append(_diagnosis_line(op["diagnosis"]))
    for item in report["msopprof_diagnoses"]:
        lines.append(f"msOpProf {item['folder']} ({item['op_name']}):")
        lines.append(_diagnosis_line(item["diagnosis"]))
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
