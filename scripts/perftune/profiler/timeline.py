"""Per-pipe busy intervals of one kernel from instruction traces (supplemental, never formal timing).

One model, fed by one parser per format (a simulator backend can build :class:`Event` lists and
call :func:`summarise` directly):

- :class:`Event`: one busy span ``[start, end)`` of one pipe family on one lane. A *lane* is one
  core (or block) as the trace models it, so that the pipes running at the same time on one core
  share a lane; :func:`lane_model` names how a trace says which core an event ran on.
- :func:`merge_lanes`: union the spans per (lane, family) (duplicates, channels and self-overlap
  counted once), clipped to a window when given; :func:`compute_movement_overlap`: inside ONE lane,
  the time compute pipes run while data-movement pipes run (spans of different lanes never overlap
  each other: different cores run independently).
- :func:`summarise`: on the window, :func:`merge_lanes`, overlap of two families only inside the
  same lane, and completeness (``expected`` families present; lanes named). The pypto-sim backend
  (:func:`perftune.profiler.pypto_sim_files.busy_model`) builds its events from the simulator's
  per-core pipe spans and uses :func:`merge_lanes` and :func:`compute_movement_overlap` the same way.

Parser (:func:`read_trace`): the Chrome trace-event JSON of msOpProf's simulator ``trace.json``,
of the application profiler's timeline export (``msprof_*.json``, also sliced into
``msprof_slice_<N>_<timestamp>.json``: :func:`slice_order`) and of torch_npu's ``trace_view.json``:
either ``[...]`` or ``{"traceEvents": [...]}``, complete events ``ph: "X"`` (``ts``, ``dur``),
begin/end pairs ``ph: "B"/"E"``, ``ph: "M"`` metadata naming processes and threads; flow (``s``,
``t``, ``f``) and counter events are not spans and are skipped. Strict JSON: a truncated file, or a
second document appended to the first, is refused. Timestamps stay exact: JSON numbers and the
quoted epoch-µs strings msprof writes (``"1784216647589246.165"``) are read as :class:`Decimal`,
never through float64; the window's ends are reported as the decimal strings the trace wrote.

Lane models (:func:`lane_model`), as the tools write them:

- ``file_is_core`` (msOpProf simulator, per-core ``simulator/core<N>.<veccore|cubecore><M>/trace.json``):
  each process is a PIPE (``process_name`` SCALAR, VECTOR, CUBE, MTE1, MTE2, MTE3, FIXPIPE and the
  non-pipe FLOWCTRL, SCALARLDST, ALL, CACHEMISS), each thread a channel of that pipe (``SCALAR_1``);
  the core is the file, so the whole file is one lane (named by the caller, default the folder).
- ``process_is_core`` (simulator traces without metadata, e.g. ``visualize_data.bin`` dumps):
  ``pid`` is the core (``"core0.veccore0"``) and ``tid`` the pipe name; the lane is the pid.
- ``thread_is_lane`` (msprof / torch_npu timelines): the lane is ``(pid, tid)`` (a stream, a
  block, a host thread); a pipe only from ``args.pipe`` or a thread named by a pipe.

An event's pipe family is the profiler's own name of its process, its thread or its ``args.pipe``
matched WHOLE (``VECTOR``, ``VEC``, ``CUBE``, ``MTE1``.., channel names ``<PIPE>_<n>``); an event
name never makes a pipe, so host ops (``aten::_local_scalar_dense``) and instruction mnemonics are
family ``other``, as are FLOWCTRL, SCALARLDST, ALL and CACHEMISS. One name is read: the
simulator's sync wait (``WAIT_FLAG``, ``wait_event``) is family ``wait``, the pipe stalled, not
busy: in a real vector-core trace the VECTOR pipe's WAIT_FLAG spans cover MTE2's transfers, and
counting them as busy would turn a 0.9 % compute/movement overlap into 163 %. Overlap is counted
between documented pipes only.
The window is the one event named exactly as the op (the target kernel); several are an error. No
such event: :func:`read_trace` with ``require_target`` (the card route) refuses the empty capture;
else the window is the whole capture and the model says so (``window.source: capture``).
Why not Perfetto's trace processor: it downloads its native binary on first use (no offline
wheel), and the model needs only interval unions; see docs/msprof-backend.md.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable

from ..errors import ContractError

PIPES = ("VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "SCALAR", "FIXPIPE")
ALIASES = {"VEC": "VECTOR", "MAC": "CUBE", "FIXP": "FIXPIPE"}
MEMORY_PIPES = ("MTE1", "MTE2", "MTE3", "FIXPIPE")
COMPUTE_PIPES = ("VECTOR", "CUBE")
SIMULATOR_UNITS = ("FLOWCTRL", "SCALARLDST", "ALL", "CACHEMISS")  # processes of a per-core trace, not pipes
OTHER = "other"
WAIT = "wait"
WAIT_NAMES = ("WAIT_FLAG", "WAIT_EVENT")
LANE_MODELS = ("file_is_core", "process_is_core", "thread_is_lane")
_CHANNEL = re.compile(r"^([A-Z0-9]+?)(?:_\d+)?$")
_SLICE = re.compile(r"^(?P<stem>.+?)_slice_(?P<index>\d+)_(?P<stamp>\d+)\.json$")


@dataclass(frozen=True)
class Event:
    lane: tuple[Any, ...]
    family: str
    start: Any
    end: Any
    name: str = ""


@dataclass(frozen=True)
class Trace:
    """What :func:`read_trace` found: the window, the events, and how lanes were read."""
    window: tuple[Decimal, Decimal]
    window_source: str
    events: list[Event]
    lane_names: dict = field(default_factory=dict)
    lane_model: str = "thread_is_lane"
    note: str = ""


def pipe_name(name: Any) -> str | None:
    """The documented pipe a profiler name denotes (whole name or ``<PIPE>_<n>`` channel), else None."""
    if not isinstance(name, str):
        return None
    match = _CHANNEL.match(name.strip().upper())
    if not match:
        return None
    token = ALIASES.get(match.group(1), match.group(1))
    return token if token in PIPES else None


def pipe_family(*names: Any) -> str:
    """The pipe of the first name that denotes one (:func:`pipe_name`), else ``other``."""
    for name in names:
        found = pipe_name(name)
        if found:
            return found
    return OTHER


def union(spans: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Sorted, merged spans (touching spans merge; empty spans drop)."""
    out: list[list[Any]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def length(spans: list[tuple[Any, Any]]) -> Any:
    return sum((b - a for a, b in spans), start=0)


def intersect(a: list[tuple[Any, Any]], b: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Intersection of two merged span lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def load_json_strict(text: str, source: str) -> Any:
    """``json.loads`` (floats as :class:`Decimal`) with the truncated/appended cases named (both refused)."""
    try:
        return json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        what = ("a second JSON document is appended (two exports in one file?)" if exc.msg == "Extra data"
                else f"truncated or malformed JSON ({exc.msg} at char {exc.pos})")
        raise ContractError(source, "-", what, "re-export the trace; never repair it by hand") from None


def exact(value: Any, source: str, what: str) -> Decimal:
    """A trace time as an exact :class:`Decimal` (JSON number or quoted decimal string)."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str, float)):
        raise ContractError(source, "traceEvents", f"{what} is {value!r}, not a number", "re-export the trace")
    try:
        number = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
    except InvalidOperation:
        raise ContractError(source, "traceEvents", f"{what} is {value!r}, not a number", "re-export the trace") from None
    if not number.is_finite():
        raise ContractError(source, "traceEvents", f"{what} is {value!r}", "re-export the trace")
    return number


def chrome_trace_events(text: str, source: str) -> tuple[list[dict[str, Any]], dict[tuple, str], dict[Any, str]]:
    """``(complete events with exact ts/dur, thread names by (pid, tid), process names by pid)``."""
    obj = load_json_strict(text, source)
    raw = obj.get("traceEvents") if isinstance(obj, dict) else obj
    if not isinstance(raw, list):
        raise ContractError(source, "traceEvents", "is not a list of trace events", "pass a Chrome trace JSON")
    threads: dict = {}
    processes: dict = {}
    events: list = []
    open_: dict = defaultdict(list)
    for item in raw:
        if not isinstance(item, dict):
            continue
        ph, key = item.get("ph"), (item.get("pid"), item.get("tid"))
        name = (item.get("args") or {}).get("name") if isinstance(item.get("args"), dict) else None
        if ph == "M" and item.get("name") == "thread_name":
            threads[key] = str(name)
        elif ph == "M" and item.get("name") == "process_name":
            processes[item.get("pid")] = str(name)
        elif ph == "X":
            events.append(_span(item, source, item.get("ts"), item.get("dur")))
        elif ph == "B":
            open_[key].append(item)
        elif ph == "E":
            stack = open_.get(key)
            if not stack:
                raise ContractError(source, "traceEvents", f"end event without a begin on lane {key}",
                                    "re-export the trace (it is cut)")
            begin = stack.pop()
            start = exact(begin.get("ts"), source, f"ts of {begin.get('name')!r}")
            events.append(_span(begin, source, start, exact(item.get("ts"), source, "ts of an end event") - start))
    unclosed = sum(len(v) for v in open_.values())
    if unclosed:
        raise ContractError(source, "traceEvents", f"{unclosed} begin events never end", "re-export the trace (it is cut)")
    return events, threads, processes


def _span(item: dict[str, Any], source: str, ts: Any, dur: Any) -> dict[str, Any]:
    what = f"event {item.get('name')!r}"
    if dur is None:
        raise ContractError(source, "traceEvents", f"{what} has no numeric dur", "re-export the trace")
    ts, dur = exact(ts, source, f"ts of {what}"), exact(dur, source, f"dur of {what}")
    if dur < 0:
        raise ContractError(source, "traceEvents", f"{what} has ts {ts} dur {dur}", "re-export the trace")
    return {**item, "ts": ts, "dur": dur}


def lane_model(threads: dict[tuple, str], processes: dict[Any, str], events: Iterable[dict] = ()) -> str:
    """How a trace says which core an event ran on (module docstring, "Lane models")."""
    if any(pipe_name(p) or p in SIMULATOR_UNITS for p in processes.values()):
        return "file_is_core"
    if any(isinstance(e.get("tid"), str) and pipe_name(e["tid"]) for e in events):
        return "process_is_core"
    return "thread_is_lane"


def slice_order(names: Iterable[str], source: str = "-") -> list[str]:
    """The file names of one timeline export in order: one unsliced file, or the complete slices
    ``<stem>_slice_<N>_<timestamp>.json`` (N from 0, timestamps may differ); else a ContractError."""
    names = sorted(names)
    slices = {n: _SLICE.match(n) for n in names}
    if len(names) == 1 and not slices[names[0]]:
        return names
    if not names or not all(slices.values()) or len({m.group("stem") for m in slices.values()}) != 1:
        raise ContractError(source, "msprof_*.json", f"{len(names)} timeline exports {names} (need one file or the "
                            "slices of one export)", "export once into a fresh PROF folder")
    by_index: dict[int, list[str]] = defaultdict(list)
    for name, match in slices.items():
        by_index[int(match.group("index"))].append(name)
    missing = sorted(set(range(max(by_index) + 1)) - set(by_index))
    doubled = sorted(i for i, v in by_index.items() if len(v) > 1)
    if missing or doubled:
        what = f"slice {missing[0]} is missing" if missing else f"slice {doubled[0]} appears twice"
        raise ContractError(source, "msprof_slice_*.json", f"{what} (found {names})",
                            "copy every slice of the export, or re-export")
    return [by_index[i][0] for i in sorted(by_index)]


def read_trace(pieces: Iterable[tuple[str, str]], op_name: str | None = None, *, core: str | None = None,
               require_target: bool = False) -> Trace:
    """The :class:`Trace` of one export given as ``[(text, source)]`` (several = the slices of one export)."""
    raw, threads, processes, sources = [], {}, {}, []
    for text, source in pieces:
        events, t, p = chrome_trace_events(text, source)
        raw += events
        threads.update(t)
        processes.update(p)
        sources.append(source)
    source = sources[0] if len(sources) == 1 else f"{sources[0]} (+{len(sources) - 1} slices)"
    model = lane_model(threads, processes, raw)
    targets = [e for e in raw if op_name is not None and e.get("name") == op_name]
    if len(targets) > 1:
        raise ContractError(source, "target window", f"{len(targets)} target-kernel windows named {op_name!r} "
                            "(need exactly 1)", "trace one launch of the frozen op")
    if not targets and require_target:
        raise ContractError(source, "target window", f"no event named {op_name!r}: empty capture (a --kernel-name "
                            "that matches nothing, or another kernel was traced)",
                            "trace one launch of the frozen op, unfiltered or with its exact (mangled) name")
    out = [_event(e, model, core or source, threads, processes) for e in raw if not targets or e is not targets[0]]
    if not out and not targets:
        raise ContractError(source, "traceEvents", "no complete events (empty capture)", "re-collect the trace")
    if targets:
        window, how = (targets[0]["ts"], targets[0]["ts"] + targets[0]["dur"]), "target_event"
        note = f"the window is the one event named {op_name!r}"
    else:
        window, how = (min(e.start for e in out), max(e.end for e in out)), "capture"
        note = ("no event names the kernel" + (f" {op_name!r}" if op_name else "") +
                ": the window is the whole capture (every event of the trace)")
    names = {e.lane: _lane_name(e.lane, model, threads, processes) for e in out}
    return Trace(window, how, out, names, model, note)


def _event(e: dict[str, Any], model: str, core: str, threads: dict, processes: dict) -> Event:
    pid, tid = e.get("pid"), e.get("tid")
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    thread = threads.get((pid, tid)) or (tid if isinstance(tid, str) else None)
    process = processes.get(pid) or (pid if isinstance(pid, str) else None)
    if model == "file_is_core":
        lane, family = (core,), pipe_family(process, thread)
    elif model == "process_is_core":
        lane, family = (pid,), pipe_family(thread, args.get("pipe"))
    else:
        lane, family = (pid, tid), pipe_family(args.get("pipe"), thread)
    if str(e.get("name")).upper() in WAIT_NAMES:
        family = WAIT
    return Event(lane, family, e["ts"], e["ts"] + e["dur"], str(e.get("name")))


def _lane_name(lane: tuple, model: str, threads: dict, processes: dict) -> dict[str, Any]:
    if model == "file_is_core":
        return {"core": lane[0]}
    if model == "process_is_core":
        return {"core": processes.get(lane[0]) or lane[0]}
    return {"process": processes.get(lane[0]), "thread": threads.get(lane)}


def merge_lanes(events: Iterable[Event], window: tuple[Any, Any] | None = None
                ) -> tuple[dict[tuple, list[tuple[Any, Any]]], dict[tuple, int]]:
    """``(merged spans, event counts)`` per ``(lane, family)``, clipped to ``window`` when given."""
    spans: dict[tuple, list] = defaultdict(list)
    counts: dict[tuple, int] = defaultdict(int)
    for e in events:
        s, t = (max(e.start, window[0]), min(e.end, window[1])) if window else (e.start, e.end)
        if t > s:
            spans[(e.lane, e.family)].append((s, t))
            counts[(e.lane, e.family)] += 1
    return {key: union(v) for key, v in spans.items()}, counts


def compute_movement_overlap(families: dict[str, list[tuple[Any, Any]]]) -> Any:
    """Time one lane's compute pipes (VECTOR, CUBE) run while its data-movement pipes run (unions)."""
    compute = union([s for f in COMPUTE_PIPES for s in families.get(f, [])])
    movement = union([s for f in MEMORY_PIPES for s in families.get(f, [])])
    return length(intersect(compute, movement))


def _dec(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)


def summarise(window: tuple[Any, Any], events: list[Event], *, expected: Iterable[str] = (),
              lane_names: dict | None = None, unit: str = "us", window_source: str = "target_event",
              lane_model: str = "thread_is_lane", note: str = "") -> dict[str, Any]:
    """The per-pipe busy model inside ``window`` (see the module docstring); times are exact
    decimals inside, busy times are floats of the exact sums, window ends the exact decimal strings."""
    lo, hi = _dec(window[0]), _dec(window[1])
    if not hi > lo:
        raise ContractError("-", "target window", f"[{lo}, {hi}] is empty", "re-collect the timeline")
    events = [replace(e, start=_dec(e.start), end=_dec(e.end)) for e in events]
    merged, counts = merge_lanes(events, (lo, hi))
    lanes = sorted({lane for lane, _ in merged}, key=repr)
    span = hi - lo
    lane_rows, pipes, overlap = [], defaultdict(lambda: {"busy": Decimal(0), "events": 0, "lanes": 0}), \
        defaultdict(Decimal)
    for lane in lanes:
        fams = sorted(f for (ln, f) in merged if ln == lane)
        row = {"lane": list(lane), **((lane_names or {}).get(lane) or {}), "families": {}}
        for fam in fams:
            busy = length(merged[(lane, fam)])
            row["families"][fam] = {"busy": float(busy), "busy_fraction": float(busy / span),
                                    "events": counts[(lane, fam)]}
            pipes[fam]["busy"] += busy
            pipes[fam]["events"] += counts[(lane, fam)]
            pipes[fam]["lanes"] += 1
        for i, a in enumerate(fams):
            for b in fams[i + 1:]:
                if a in PIPES and b in PIPES:
                    both = length(intersect(merged[(lane, a)], merged[(lane, b)]))
                    overlap[f"{a}|{b}"] += both
                    if both > 0:
                        row.setdefault("overlap", {})[f"{a}|{b}"] = float(both)
        lane_rows.append(row)
    present = {f for f in pipes if f in PIPES}
    missing = sorted(set(expected) - present)
    return {"unit": unit, "lane_model": lane_model,
            "window": {"start": str(lo), "end": str(hi), "duration": float(span), "source": window_source,
                       **({"note": note} if note else {})},
            "lanes": lane_rows,
            "pipes": {f: {"busy": float(v["busy"]), "lanes": v["lanes"], "events": v["events"],
                          "mean_busy_fraction": float(v["busy"] / (span * v["lanes"]))}
                      for f, v in sorted(pipes.items())},
            "overlap_same_lane": {k: float(v) for k, v in sorted(overlap.items())},
            "completeness": {"target_windows": 1 if window_source == "target_event" else 0,
                             "expected_pipes": sorted(set(expected)), "missing_pipes": missing,
                             "lanes": len(lane_rows), "status": "complete" if lane_rows and not missing else "incomplete"}}


def summarise_trace(trace: Trace, *, expected: Iterable[str] = (), unit: str = "us") -> dict[str, Any]:
    """:func:`summarise` of a :class:`Trace` (window, lanes and how they were read)."""
    return summarise(trace.window, trace.events, expected=expected, lane_names=trace.lane_names, unit=unit,
                     window_source=trace.window_source, lane_model=trace.lane_model, note=trace.note)
