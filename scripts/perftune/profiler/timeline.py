"""Per-pipe busy intervals of one kernel from instruction traces (supplemental, never formal timing).

One model, fed by one parser per format (a simulator backend can build :class:`Event` lists and
call :func:`summarise` directly):

- :class:`Event`: one busy span ``[start, end)`` of one pipe family on one lane. A *lane* is the
  ``(pid, tid)`` pair of the trace (one core / block / unit as the trace names it); the lane's
  process and thread names are kept as the trace wrote them.
- :func:`merge_lanes`: union the spans per (lane, family) (duplicates and self-overlap counted
  once), clipped to a window when given; :func:`compute_movement_overlap`: inside ONE lane, the
  time compute pipes run while data-movement pipes run (spans of different lanes never overlap
  each other: different cores run independently).
- :func:`summarise`: on the unique target-kernel window, :func:`merge_lanes`, overlap of two
  families only inside the same lane, and completeness (``expected`` families present; lanes named).
  The pypto-sim backend (:func:`perftune.profiler.pypto_sim_files.busy_model`) builds its events
  from the simulator's per-core pipe spans and uses :func:`merge_lanes` and
  :func:`compute_movement_overlap` the same way.

Parsers (``chrome_trace_events``): the Chrome trace-event JSON that both the application
profiler's timeline export (``msprof --export=on`` after ``--instr-profiling=on``) and msOpProf's
simulator ``trace.json`` use: either ``[...]`` or ``{"traceEvents": [...]}``, complete events
``ph: "X"`` (``ts``, ``dur``), begin/end pairs ``ph: "B"/"E"``, and ``ph: "M"`` metadata naming
processes and threads. Strict JSON: a truncated file, or a second document appended to the
first, is refused. An event's pipe family is the documented pipe name (VECTOR, CUBE, MTE1, MTE2,
MTE3, SCALAR, FIXPIPE) found as the event's name, its ``args.pipe`` or its thread's name; other
events (FLOWCTRL, CACHEMISS, instruction mnemonics without a pipe) are kept as family ``other``.
The target kernel's window is the one event whose name is exactly the frozen op name; none (the
silent empty capture of a ``--kernel-name`` that matched nothing) or several is an error.
Why not Perfetto's trace processor: it downloads its native binary on first use (no offline
wheel), and the model needs only interval unions; see docs/msprof-backend.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import ContractError

PIPES = ("VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "SCALAR", "FIXPIPE")
ALIASES = {"VEC": "VECTOR", "MAC": "CUBE", "FIXP": "FIXPIPE"}
MEMORY_PIPES = ("MTE1", "MTE2", "MTE3", "FIXPIPE")
COMPUTE_PIPES = ("VECTOR", "CUBE")
OTHER = "other"


@dataclass(frozen=True)
class Event:
    lane: tuple[Any, Any]
    family: str
    start: float
    end: float
    name: str = ""


def pipe_family(*names: Any) -> str:
    """The first documented pipe name among ``names`` (case-insensitive, whole token), else ``other``."""
    for name in names:
        if not isinstance(name, str):
            continue
        for token in name.upper().replace("-", "_").replace(" ", "_").split("_"):
            token = ALIASES.get(token, token)
            if token in PIPES:
                return token
    return OTHER


def union(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, merged spans (touching spans merge; empty spans drop)."""
    out: list[list[float]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def intersect(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
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
    """``json.loads`` with the truncated/appended cases named (both are refused)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        what = ("a second JSON document is appended (two exports in one file?)" if exc.msg == "Extra data"
                else f"truncated or malformed JSON ({exc.msg} at char {exc.pos})")
        raise ContractError(source, "-", what, "re-export the trace; never repair it by hand") from None


def chrome_trace_events(text: str, source: str) -> tuple[list[dict[str, Any]], dict[tuple, str], dict[Any, str]]:
    """``(complete events, thread names by (pid, tid), process names by pid)`` of a Chrome trace."""
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
            events.append(_span(item, source, float(item.get("ts", "nan")), item.get("dur")))
        elif ph == "B":
            open_[key].append(item)
        elif ph == "E":
            stack = open_.get(key)
            if not stack:
                raise ContractError(source, "traceEvents", f"end event without a begin on lane {key}",
                                    "re-export the trace (it is cut)")
            begin = stack.pop()
            events.append(_span(begin, source, float(begin["ts"]), float(item["ts"]) - float(begin["ts"])))
    unclosed = sum(len(v) for v in open_.values())
    if unclosed:
        raise ContractError(source, "traceEvents", f"{unclosed} begin events never end", "re-export the trace (it is cut)")
    return events, threads, processes


def _span(item: dict[str, Any], source: str, ts: float, dur: Any) -> dict[str, Any]:
    try:
        dur = float(dur)
    except (TypeError, ValueError):
        raise ContractError(source, "traceEvents", f"event {item.get('name')!r} has no numeric dur",
                            "re-export the trace") from None
    if not (ts == ts and dur == dur) or dur < 0:
        raise ContractError(source, "traceEvents", f"event {item.get('name')!r} has ts {ts} dur {dur}",
                            "re-export the trace")
    return {**item, "ts": ts, "dur": dur}


def events_from_chrome(text: str, source: str, op_name: str) -> tuple[tuple[float, float], list[Event], dict]:
    """The target window, the pipe :class:`Event` list and lane names of one Chrome trace."""
    raw, threads, processes = chrome_trace_events(text, source)
    windows = [e for e in raw if e.get("name") == op_name]
    if len(windows) != 1:
        problem = (f"{len(windows)} target-kernel windows named {op_name!r} (need exactly 1)" if windows else
                   f"no event named {op_name!r}: empty capture (a --kernel-name that matches nothing, or another "
                   "kernel was traced)")
        raise ContractError(source, "target window", problem,
                            "trace one launch of the frozen op, unfiltered or with its exact (mangled) name")
    win = windows[0]
    window = (win["ts"], win["ts"] + win["dur"])
    out = []
    for e in raw:
        if e is win or e.get("name") == op_name:
            continue
        lane = (e.get("pid"), e.get("tid"))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        family = pipe_family(e.get("name"), args.get("pipe"), threads.get(lane))
        out.append(Event(lane, family, e["ts"], e["ts"] + e["dur"], str(e.get("name"))))
    names = {lane: {"process": processes.get(lane[0]), "thread": threads.get(lane)} for lane in {e.lane for e in out}}
    return window, out, names


def merge_lanes(events: Iterable[Event], window: tuple[float, float] | None = None
                ) -> tuple[dict[tuple, list[tuple[float, float]]], dict[tuple, int]]:
    """``(merged spans, event counts)`` per ``(lane, family)``, clipped to ``window`` when given."""
    spans: dict[tuple, list] = defaultdict(list)
    counts: dict[tuple, int] = defaultdict(int)
    for e in events:
        s, t = (max(e.start, window[0]), min(e.end, window[1])) if window else (e.start, e.end)
        if t > s:
            spans[(e.lane, e.family)].append((s, t))
            counts[(e.lane, e.family)] += 1
    return {key: union(v) for key, v in spans.items()}, counts


def compute_movement_overlap(families: dict[str, list[tuple[float, float]]]) -> float:
    """Time one lane's compute pipes (VECTOR, CUBE) run while its data-movement pipes run (unions)."""
    compute = union([s for f in COMPUTE_PIPES for s in families.get(f, [])])
    movement = union([s for f in MEMORY_PIPES for s in families.get(f, [])])
    return length(intersect(compute, movement))


def summarise(window: tuple[float, float], events: list[Event], *, expected: Iterable[str] = (),
              lane_names: dict | None = None, unit: str = "us") -> dict[str, Any]:
    """The per-pipe busy model inside ``window`` (see the module docstring)."""
    lo, hi = window
    if not hi > lo:
        raise ContractError("-", "target window", f"[{lo}, {hi}] is empty", "re-collect the timeline")
    merged, counts = merge_lanes(events, window)
    lanes = sorted({lane for lane, _ in merged}, key=repr)
    span = hi - lo
    lane_rows, pipes, overlap = [], defaultdict(lambda: {"busy": 0.0, "events": 0, "lanes": 0}), defaultdict(float)
    for lane in lanes:
        fams = sorted(f for (ln, f) in merged if ln == lane)
        row = {"pid": lane[0], "tid": lane[1], **((lane_names or {}).get(lane) or {}), "families": {}}
        for fam in fams:
            busy = length(merged[(lane, fam)])
            row["families"][fam] = {"busy": _r(busy), "busy_fraction": _r(busy / span), "events": counts[(lane, fam)]}
            pipes[fam]["busy"] += busy
            pipes[fam]["events"] += counts[(lane, fam)]
            pipes[fam]["lanes"] += 1
        for i, a in enumerate(fams):
            for b in fams[i + 1:]:
                if OTHER not in (a, b):
                    both = length(intersect(merged[(lane, a)], merged[(lane, b)]))
                    overlap[f"{a}|{b}"] += both
                    if both > 0:
                        row.setdefault("overlap", {})[f"{a}|{b}"] = _r(both)
        lane_rows.append(row)
    present = {f for f in pipes if f != OTHER}
    missing = sorted(set(expected) - present)
    return {"unit": unit, "window": {"start": _r(lo), "end": _r(hi), "duration": _r(span)},
            "lanes": lane_rows,
            "pipes": {f: {"busy": _r(v["busy"]), "lanes": v["lanes"], "events": v["events"],
                          "mean_busy_fraction": _r(v["busy"] / (span * v["lanes"]))} for f, v in sorted(pipes.items())},
            "overlap_same_lane": {k: _r(v) for k, v in sorted(overlap.items())},
            "completeness": {"target_windows": 1, "expected_pipes": sorted(set(expected)), "missing_pipes": missing,
                             "lanes": len(lane_rows), "status": "complete" if lane_rows and not missing else "incomplete"}}


def _r(value: float) -> float:
    return float(f"{value:.6g}")
