"""Reading PyPTO's cost-model simulator output (``CostModelSimulationOutput/``), one parser per file.

Pure functions over text/objects (the backend reads the files, bounded, and passes them in), so
every number the pypto-sim backend reports is re-derived from the archived raw files alone:

- ``_simulate.stat.report.txt`` (:func:`parse_stat_report`): ``Key....: value [pct%]`` lines in
  ``====`` sections. ``Total Cycles`` of the first section is the canonical simulated time of the
  launch; the ``Core Machine Top Statistics`` section gives per pipe ``Used <P> Pipe Number`` and
  ``Average <P> Usage`` (cycles and % of the total). A missing or non-numeric required field is an
  error, never 0.
- ``_simulate.config.ini`` (:func:`parse_config_ini`): ``[Section]`` + ``key = value``; the
  simulated chip is ``[Model] deviceArch``.
- ``_simulate.swim.json`` / ``_simulate.pipe.swim.json`` (:func:`busy_model`): one entry per core
  (``blockIdx``, ``coreType`` AIC/AIV) with ``tasks`` (``execStart``/``execEnd`` cycles) and
  ``pipeLogs`` (pipe name → tile-op spans in cycles).
- ``_simulate.pipe.swim.json`` tile ops (:func:`moved_bytes`): each ``tileOp`` text names its
  operands as ``<id> <MEM>_[offset][shape]-<ids> <N>B`` (``COPY_IN 11 DDR_[0,0][64,1024]-11-14 262144B
  TO 206 UB_[0,0][8,1024]-206-92 32768B``); a transfer's bytes are those of its on-chip operand (UB,
  L1, L0C: the tile), never the whole DDR tensor it reads from or writes into.
- ``bubble_analysis.log`` (:func:`parse_bubble_log`): per core ``[NAME] Execute task num:N`` then
  ``Core Total Work Time``, ``Total Wait Time``, ``Wait Schedule Time``, ``Wait Predecessor Time``
  (µs). Cores that ran no task are dropped from the summary; :func:`waits_by_core_type` sums them
  per core type (the cube <-> vector hand-off wait of a MIX kernel).
- ``pipeLogs[].tileOp`` (:func:`tile_results`): ``<id> <OP> <operands> TO <id> <MEM>_[offset][dims]-... <N>B``;
  the result tile's bytes over its elements is the element width the op wrote (``ROWSUM_SINGLE ... TO
  ... UB_[0,0][8,8]-... 256B``: 4 bytes, float32; ``A_MUL_B ... TO ... L0C_[0,0][64,64]-... 16384B``).

The per-pipe busy model (:func:`busy_model`) is :mod:`perftune.profiler.timeline`'s, the one the
msprof instruction timeline uses: a lane is one core; per lane the spans of one pipe are united
(overlapping or repeated spans count once), the core's task time is the union of its task spans,
and compute/data-movement overlap is counted only inside one lane (different cores run independently).
Pipe names map to the families the msprof route uses: ``VECTOR_ALU``→vec, ``CUBE``→cube,
``MTE_IN``→mte2 (global → local), ``MTE1``→mte1, ``MTE_OUT``→mte3, ``PIPE_S``→scalar (pypto 0.2.0
writes it for scalar work such as a RESHAPE of a 1-D tensor), ``PIPE_FIX``→fixpipe. The names are
pypto's own: ``pipe_name_map`` of its ``lib/scripts/draw_pipe_swim_lane.py``
(:func:`pipe_names_of_script`; a test holds PIPE_FAMILY to the installed pypto) plus ``PIPE_FIX``,
which ``libtile_fwk_simulation.so`` names. A pipe name outside PIPE_FAMILY (a newer pypto) is never
fatal: its busy cycles are recorded under ``unknown_pipes`` of the core type and left out of the
ratios and the route. A core type that wrote no scalar span has no scalar ratio (None, never 0).
:func:`route_row` turns the model into
the op_summary-style row :func:`perftune.measure.routing.route` reads, so the bound route of a
simulated launch comes from the same code as an msprof one.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from . import timeline
from ..errors import ContractError

STAT_REPORT = "_simulate.stat.report.txt"
CONFIG_INI = "_simulate.config.ini"
SWIM_JSON = "_simulate.swim.json"
PIPE_SWIM_JSON = "_simulate.pipe.swim.json"
BUBBLE_LOG = "bubble_analysis.log"
MERGED_SWIMLANE = "merged_swimlane.json"

PIPE_FAMILY = {"VECTOR_ALU": "vec", "CUBE": "cube", "MTE_IN": "mte2", "MTE1": "mte1", "MTE_OUT": "mte3",
               "PIPE_S": "scalar", "PIPE_FIX": "fixpipe"}
TIMELINE_PIPE = {"VECTOR_ALU": "VECTOR", "CUBE": "CUBE", "MTE_IN": "MTE2", "MTE1": "MTE1", "MTE_OUT": "MTE3",
                 "PIPE_S": "SCALAR", "PIPE_FIX": "FIXPIPE"}
PIPE_SCRIPT = "lib/scripts/draw_pipe_swim_lane.py"  # inside the pypto package: its pipe_name_map
ROUTE_FAMILY = {TIMELINE_PIPE[name]: family for name, family in PIPE_FAMILY.items()}
STAT_PIPES = ("Cube", "Vector", "MTE_IN", "MTE1", "MTE_OUT")
_LINE = re.compile(r"^\s*(?:\|--)?\s*(?P<key>[A-Za-z_][\w ]*?)\s*\.{2,}\s*:\s*(?P<rest>.*)$")
_SECTION = re.compile(r"^=+\s*(?P<name>[^=]*?)\s*=+$")
_BUBBLE_CORE = re.compile(r"^\[(?P<core>[^\]]+)\]\s*Execute task num:\s*(?P<n>\d+)\s*$")
_BUBBLE_FIELD = re.compile(r"^\s+(?P<key>[A-Za-z ]+?):\s*(?P<value>\S+)\s*$")


def _float(text: str, source: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ContractError(source, field, f"{text!r} is not a number", "re-run the simulation") from None
    if not math.isfinite(value) or value < 0:
        raise ContractError(source, field, f"{text!r} is not finite and >= 0", "re-run the simulation")
    return value


def parse_stat_report(text: str, source: str = STAT_REPORT) -> dict[str, Any]:
    """``{total_cycles, tasks, average_task_cycles, max_task_cycles, min_task_cycles, pipes, sections}``.

    ``pipes[P] = {used, average_cycles, percent}`` for P in Cube, Vector, MTE_IN, MTE1, MTE_OUT.
    """
    sections: dict[str, dict[str, list[float]]] = {}
    current = "-"
    for line in text.splitlines():
        if (head := _SECTION.match(line.strip())):
            current = head.group("name")
            sections.setdefault(current, {})
            continue
        if (found := _LINE.match(line)):
            values = [_float(v.rstrip("%"), source, found.group("key")) for v in found.group("rest").split()]
            sections.setdefault(current, {}).setdefault(found.group("key"), values)
    if not sections or "ASC++ MachineModel Report" not in sections:
        raise ContractError(source, "-", "not a simulator stat report (no 'ASC++ MachineModel Report')",
                            "archive CostModelSimulationOutput/_simulate.stat.report.txt unchanged")
    head, device = sections["ASC++ MachineModel Report"], _section(sections, "Statistics", source)
    top = _section(sections, "Core Machine Top Statistics", source)

    def one(block: dict[str, list[float]], key: str, index: int = 0) -> float:
        values = block.get(key)
        if not values or len(values) <= index:
            raise ContractError(source, key, "missing", "archive the complete stat report")
        return values[index]

    total = one(head, "Total Cycles")
    if total <= 0:
        raise ContractError(source, "Total Cycles", f"{total} is not > 0", "re-run the simulation")
    pipes = {p: {"used": int(one(top, f"Used {p} Pipe Number")), "average_cycles": one(top, f"Average {p} Usage"),
                 "percent": one(top, f"Average {p} Usage", 1)} for p in STAT_PIPES}
    return {"total_cycles": int(total), "tasks": int(one(device, "Total Submit Tasks")),
            "average_task_cycles": one(device, "Average Task Cycles"),
            "max_task_cycles": one(device, "Max Task Cycles"), "min_task_cycles": one(device, "Min Task Cycles"),
            "pipes": pipes, "core_total_cycles": int(one(top, "Total Cycles"))}


def _section(sections: dict[str, dict], suffix: str, source: str) -> dict[str, list[float]]:
    for name, block in sections.items():
        if name.endswith(suffix) and (suffix != "Statistics" or name.startswith("DeviceMachine")):
            return block
    raise ContractError(source, suffix, "section missing", "archive the complete stat report")


def parse_config_ini(text: str, source: str = CONFIG_INI) -> dict[str, dict[str, str]]:
    """``{section: {key: value}}`` of the simulator's effective configuration."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            out.setdefault(section, {})
        elif "=" in stripped and section is not None:
            key, value = stripped.split("=", 1)
            out[section][key.strip()] = value.strip()
    arch = out.get("Model", {}).get("deviceArch")
    if not arch:
        raise ContractError(source, "Model.deviceArch", "missing", "archive the simulator's config.ini")
    return out


def parse_bubble_log(text: str, source: str = BUBBLE_LOG) -> dict[str, dict[str, float]]:
    """Per core that ran tasks: ``{tasks, work_us, wait_us, wait_schedule_us, wait_predecessor_us}``."""
    keys = {"Core Total Work Time": "work_us", "Total Wait Time": "wait_us",
            "Wait Schedule Time": "wait_schedule_us", "Wait Predecessor Time": "wait_predecessor_us"}
    cores: dict[str, dict[str, float]] = {}
    core = None
    for line in text.splitlines():
        if (head := _BUBBLE_CORE.match(line)):
            core = head.group("core")
            cores[core] = {"tasks": int(head.group("n"))}
        elif core and (field := _BUBBLE_FIELD.match(line)) and field.group("key") in keys:
            cores[core][keys[field.group("key")]] = _float(field.group("value"), source, f"{core}.{field.group('key')}")
    if not cores:
        raise ContractError(source, "-", "no '[core] Execute task num' block", "archive bubble_analysis.log unchanged")
    for name, values in cores.items():
        missing = sorted(set(keys.values()) - set(values))
        if values["tasks"] > 0 and missing:
            raise ContractError(source, name, f"missing {missing}", "archive bubble_analysis.log unchanged")
    return {name: values for name, values in cores.items() if values["tasks"] > 0}


def waits_by_core_type(bubbles: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """:func:`parse_bubble_log`'s cores summed per core type (the ``AIC``/``AIV`` prefix of ``AIC_3``):
    ``{cores, tasks, work_us, wait_schedule_us, wait_predecessor_us}``. In a MIX kernel the vector
    cores' wait on predecessors is the cube -> vector hand-off (and the cube cores' the way back)."""
    out: dict[str, dict[str, float]] = {}
    for name, core in sorted(bubbles.items()):
        kind = name.split("_", 1)[0]
        block = out.setdefault(kind, {"cores": 0, "tasks": 0, "work_us": 0.0, "wait_schedule_us": 0.0,
                                      "wait_predecessor_us": 0.0})
        block["cores"] += 1
        for key in ("tasks", "work_us", "wait_schedule_us", "wait_predecessor_us"):
            block[key] += core[key]
    return {kind: {k: (round(v, 6) if isinstance(v, float) else v) for k, v in block.items()}
            for kind, block in out.items()}


def _spans(entries: Any, key: str, source: str) -> list[tuple[int, int]]:
    if not isinstance(entries, list):
        raise ContractError(source, key, "is not a list", "archive the simulator file unchanged")
    out = []
    for item in entries:
        start, end = (item.get("execStart"), item.get("execEnd")) if isinstance(item, dict) else (None, None)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (start, end)) or end < start:
            raise ContractError(source, key, f"bad span {item!r}", "archive the simulator file unchanged")
        out.append((start, end))
    return out


def pipe_names_of_script(text: str, source: str = PIPE_SCRIPT) -> list[str]:
    """The pipe names of pypto's swimlane script: the values of its ``pipe_name_map`` literal."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pipe_name_map" for t in node.targets):
            return sorted(ast.literal_eval(node.value).values())
    raise ContractError(source, "pipe_name_map", "missing", "this pypto names its pipes elsewhere; update PIPE_SCRIPT")


def busy_model(swim: Any, pipe_swim: Any, source: str = PIPE_SWIM_JSON) -> dict[str, Any]:
    """Per core type: cores used, task cycles, per-family busy cycles and ratio, in-core overlap, and
    ``unknown_pipes`` (pipe name → united busy cycles of pipes outside PIPE_FAMILY; not in the ratios).

    The lanes, unions and overlap are :mod:`perftune.profiler.timeline`'s model (one model for the
    msprof instruction timeline and the simulator); a lane is ``(coreType, blockIdx)``."""
    if not isinstance(swim, list) or not isinstance(pipe_swim, list):
        raise ContractError(source, "-", "a swim file is not a list of cores", "archive the simulator files unchanged")
    tasks = {(c.get("coreType"), c.get("blockIdx")): timeline.union(_spans(c.get("tasks", []), "tasks", SWIM_JSON))
             for c in swim if isinstance(c, dict)}
    events, lanes, unknown = [], [], {}
    for core in pipe_swim:
        if not isinstance(core, dict) or not any((core.get("pipeLogs") or {}).values()):
            continue
        lane = (core.get("coreType"), core.get("blockIdx"))
        lanes.append(lane)
        for name, logs in core["pipeLogs"].items():
            found = _spans(logs, f"pipeLogs.{name}", source)
            if name not in PIPE_FAMILY:
                per_kind = unknown.setdefault(lane[0], {})
                per_kind[str(name)] = per_kind.get(str(name), 0) + timeline.length(timeline.union(found))
                continue
            events += [timeline.Event(lane, TIMELINE_PIPE[name], a, b, name) for a, b in found]
    merged, _counts = timeline.merge_lanes(events)
    out: dict[str, Any] = {}
    for lane in sorted(set(lanes), key=repr):
        pipes = {f: spans for (ln, f), spans in merged.items() if ln == lane}
        task = tasks.get(lane) or timeline.union([s for spans in pipes.values() for s in spans])
        block = out.setdefault(lane[0], {"cores": 0, "task_cycles": 0, "busy_cycles": {}, "overlap_cycles": 0})
        block["cores"] += 1
        block["task_cycles"] += timeline.length(task)
        for family, spans in pipes.items():
            key = ROUTE_FAMILY[family]
            block["busy_cycles"][key] = block["busy_cycles"].get(key, 0) + timeline.length(spans)
        block["overlap_cycles"] += timeline.compute_movement_overlap(pipes)
    for kind, block in out.items():
        block["unknown_pipes"] = dict(sorted(unknown.get(kind, {}).items()))
        block["ratios"] = {f: (round(c / block["task_cycles"], 6) if block["task_cycles"] else None)
                           for f, c in sorted(block["busy_cycles"].items())}
    return out


def route_row(model: dict[str, Any], frequency_mhz: float) -> dict[str, Any]:
    """The op_summary-style row (times in µs, ratios in [0, 1]) for :func:`routing.route`."""
    row: dict[str, Any] = {}
    for kind, prefix in (("AIC", "aic"), ("AIV", "aiv")):
        block = model.get(kind)
        if not block:
            continue
        row[f"{'aicore' if prefix == 'aic' else 'aiv'}_time(us)"] = block["task_cycles"] / frequency_mhz
        for family, ratio in block["ratios"].items():
            row[f"{prefix}_{family}_ratio"] = min(ratio, 1.0) if ratio is not None else None
    return row


def task_window(swim: Any, source: str = SWIM_JSON) -> tuple[int, int] | None:
    """(first task start, last task end) in cycles over every core; None when no task ran."""
    if not isinstance(swim, list):
        raise ContractError(source, "-", "is not a list of cores", "archive the simulator file unchanged")
    spans = [s for core in swim if isinstance(core, dict) for s in _spans(core.get("tasks", []), "tasks", source)]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


_TILE_OP = re.compile(r"^\d+ (\w+) .*? TO \d+ \w+?_\[[0-9,]*\]\[([0-9,]+)\]\S* (\d+)B")


def tile_results(pipe_swim: Any) -> list[tuple[str, int]]:
    """(op name, bytes per element of its result tile) of every tile op of ``_simulate.pipe.swim.json``
    whose text names a result tile (module docstring); others are skipped."""
    out = []
    for block in pipe_swim if isinstance(pipe_swim, list) else ():
        for logs in (block.get("pipeLogs") or {}).values() if isinstance(block, dict) else ():
            for entry in logs if isinstance(logs, list) else ():
                match = _TILE_OP.match(str(entry.get("tileOp", ""))) if isinstance(entry, dict) else None
                if match:
                    elements = math.prod(int(d) for d in match.group(2).split(","))
                    out.append((match.group(1), int(match.group(3)) // max(1, elements)))
    return out


_OPERAND = re.compile(r"\b(?P<mem>[A-Z][A-Z0-9]*)_\[[^\]]*\]\[[\d, ]*\][^ ]* (?P<bytes>\d+)B\b")
MOVE_PIPES = {"MTE_IN": "read", "MTE_OUT": "write"}   # global -> local, local -> global


def moved_bytes(pipe_swim: Any, source: str = PIPE_SWIM_JSON) -> dict[str, int]:
    """Bytes the launch moved between global memory and the cores: ``read`` (MTE_IN tile ops),
    ``write`` (MTE_OUT), summed over every core, and ``transfers`` (the tile-op count)."""
    if not isinstance(pipe_swim, list):
        raise ContractError(source, "-", "not a list of cores", "re-collect the round")
    out = {"read": 0, "write": 0, "transfers": 0}
    for core in pipe_swim:
        logs = core.get("pipeLogs") if isinstance(core, dict) else None
        for pipe, direction in MOVE_PIPES.items():
            for entry in (logs or {}).get(pipe) or []:
                text = entry.get("tileOp", "") if isinstance(entry, dict) else ""
                tile = [int(m["bytes"]) for m in _OPERAND.finditer(text) if m["mem"] != "DDR"]
                if not tile:
                    raise ContractError(source, f"pipeLogs.{pipe}.tileOp", f"no on-chip operand in {text[:80]!r}",
                                        "update pypto_sim_files.moved_bytes for this pypto")
                out[direction] += max(tile)
                out["transfers"] += 1
    return out
