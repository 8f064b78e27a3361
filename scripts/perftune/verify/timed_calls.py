"""Gate P9 of stage5-check, runtime side: what the timed calls computed, and under whose harness.

Reads every timed call's ``attestation.json`` (``measure/attestation.py``, with the cpu runner's
``harness`` record from ``measure/backends/harness_guard.py``) of the rounds P9 checks, and the
correctness run's probe of each P0 case (``measure/probe_runner.py``). Each problem is
``(check id, category, message, expected, actual)``; every one below is ``cheating`` except a
missing harness record (``performance_evidence_invalid``: re-collect with this collector) and the time floor:

- ``P9.timed_output``: a timed call of the delivered code returned other output bytes than the
  correctness run produced on the same (seed-42, attested) inputs. The correctness run's output is
  checked against the frozen reference on those inputs (P9 ``measured``), so equal digests carry
  that check to every timed call, warm-up or not, first repeat or last.
- ``P9.timed_output_stable``: one round, one arm, one case, one input: more than one output (the
  same code on the same data must give the same bytes; a path that changes after N calls).
- ``P9.output_plain``: a timed output that is not a plain tensor (``numpy.ndarray``/``torch.Tensor``:
  no lazy or proxy object), not contiguous, not owned (a view of a pooled or stale buffer) or sharing
  memory with an input (the input itself, or a view of it).
- ``P9.deferred_output``: the output's bytes changed after the call returned (work finished later
  by a thread, a child or a lazy write), seen in a timed call or in the correctness probe.
- ``P9.timer``: ``time.perf_counter_ns``/``perf_counter`` were replaced in the measured process.
- ``P9.threads``: the call left more threads or child processes alive than before it.
- ``P9.other_cpu``: after the call returned, other threads of the process used more CPU than
  ``max(OTHER_CPU_SHARE × the call's time, OTHER_CPU_FLOOR_US)`` before the test ended (work
  handed to a thread and finished outside the timed region; threads working DURING the call are
  legal, the call's time includes them).
- ``P9.file_io``: the process read or wrote more than ``IO_LIMIT_BYTES`` during the timed call
  (``/proc/self/io`` rchar/wchar: a result cache kept on disk; a kernel's debug print stays below it;
  a module first imported inside a timed call, with no warm-up, would count too), or opened any file
  for writing outside the round's evidence folder (``harness.file_writes``: a replay file of any size).
- ``P9.patched_library``: the operator's module replaced a numpy/math/time/builtins/torch attribute
  (e.g. slowing the paired baseline arm, or faking a library routine).
- ``P9.process_settings``: during a timed call the process's CPU affinity, scheduling class or
  priority, nice or a thread-pool variable differed from what the runner set before the operator's
  import (``harness.process_changed``): the operator's code changed the harness's process (both arms
  run in it). Threads the op uses during the call stay legal (docs/cpu-backend.md).
- ``P9.time_floor`` (``performance_evidence_invalid``): a timed call's wall time is shorter than the CPU time
  its own thread spent in it (``harness.thread_cpu_us``, read beside the runner's clock) by more than
  ``FLOOR_SHARE`` of it plus ``FLOOR_EPS_US``, in ``FLOOR_CALLS`` or more timed calls of one round, case
  and arm (all of them when it has fewer): physically impossible, so the samples were not measured as
  recorded (a final round's wall samples rewritten and re-sealed, issue 35 item 5). No load tolerance
  is needed: load stretches wall time, never the thread's CPU time past it; one call is not enough
  because an interrupt or a stolen vCPU slice in the instant between the thread's clock and the wall
  clock is charged to the thread (docs/stage5-check.md, "The time floor": the figures).
- ``P9.reference_call``: during the correctness probe's call the op called a function of the frozen
  reference's or the golden module's files (the frozen oracle). A library function named like the
  operation is not a finding (on cpu a numpy or scipy primitive is the implementation); work that is
  not the kernel's is judged by behaviour: fresh data and sampled values (cpu), the simulated launch
  (pypto-sim, ``sim_launch``), the capture window (msprof).
"""

from __future__ import annotations

from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod
from ..errors import PerftuneError
from ..measure import attestation, evidence

OTHER_CPU_SHARE, OTHER_CPU_FLOOR_US = 0.25, 200.0
FLOOR_SHARE, FLOOR_EPS_US, FLOOR_CALLS = 1.05, 20.0, 2
IO_LIMIT_BYTES = 64 * 1024
Problem = tuple[str, str, str, str | None, str | None]


def _arms(rnd: evidence.RoundEvidence, case_id: str, delivered_sha: str):
    """``(arm, delivered code?, [(repeat number, record or None)])`` of one case of a round."""
    case_dir = rnd.cases[case_id].path
    delivered = rnd.collection.get("executable_sha256") == delivered_sha
    names = [("candidate", delivered), ("baseline", False)] if rnd.paired else [("", delivered)]
    for arm, is_delivered in names:
        rows = []
        for index in range(1, rnd.collection["repeats"] + 1):
            path = case_dir / f"repeat_{index:03d}" / arm / attestation.ATTESTATION_JSON
            try:
                obj = fsio.read_json(path, what="attestation")
            except PerftuneError:
                obj = None  # P9.attestation reports a missing record
            if not isinstance(obj, dict) or "unavailable" in obj:
                rows.append((index, None))
                continue
            for call in (obj["calls"] if isinstance(obj.get("calls"), list) else [obj]):  # msprof: several
                rows.append((index, call if isinstance(call, dict) else None))
        yield arm or "candidate", is_delivered, rows


def _digests(record: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(o.get("arg"), o.get("sha256")) for o in record.get("outputs", [])]


def output_problems(where: str, record: dict[str, Any]) -> list[Problem]:
    """``P9.output_plain`` on one call's outputs."""
    out = []
    for item in record.get("outputs", []):
        name = f"output {item.get('arg')}"
        if item.get("kind") != "tensor":
            out.append(("P9.output_plain", "cheating", f"{where}: {name} is a {item.get('kind')!r} object, not a "
                        "plain tensor (a lazy or proxy output)", "numpy.ndarray or torch.Tensor", item.get("kind")))
            continue
        kind = item.get("type")
        if kind is not None and kind not in attestation.PLAIN_TYPES:
            out.append(("P9.output_plain", "cheating", f"{where}: {name} is a {kind}, not a plain tensor",
                        "numpy.ndarray or torch.Tensor", kind))
        if not item.get("contiguous", True):
            out.append(("P9.output_plain", "cheating", f"{where}: {name} is not contiguous (a view)",
                        "contiguous", "strided view"))
        if item.get("aliases"):
            out.append(("P9.output_plain", "cheating", f"{where}: {name} shares memory with input(s) "
                        f"{item['aliases']} (the input itself or a view of it)", "own memory", str(item["aliases"])))
        elif item.get("owned") is False:
            out.append(("P9.output_plain", "cheating", f"{where}: {name} does not own its memory (a view of a "
                        "buffer the op keeps: pooled or stale results)", "owned", "view"))
    return out


def harness_problems(where: str, record: dict[str, Any], duration_us: float | None) -> list[Problem]:
    """The cpu runner's harness readings of one timed call."""
    harness = record.get("harness")
    if not isinstance(harness, dict):
        return [("P9.harness_missing", "performance_evidence_invalid", f"{where}: the timed call has no harness "
                 "record (re-collect the round with this collector)", "harness", None)]
    out = []
    if harness.get("timer_intact") is not True:
        out.append(("P9.timer", "cheating", f"{where}: time.perf_counter_ns was replaced in the measured process",
                    "the interpreter's timer", "replaced"))
    threads, children = harness.get("threads") or [0], harness.get("children") or [0]
    if max(threads) > threads[0] or max(children) > children[0]:
        out.append(("P9.threads", "cheating", f"{where}: the call left work running: threads {threads}, child "
                    f"processes {children} (before, at return, after the test)", f"threads {threads[0]}, "
                    f"children {children[0]}", f"threads {max(threads)}, children {max(children)}"))
    other = float(harness.get("other_cpu_after_us") or 0.0)
    limit = max(OTHER_CPU_SHARE * (duration_us or 0.0), OTHER_CPU_FLOOR_US)
    if other > limit:
        out.append(("P9.other_cpu", "cheating", f"{where}: other threads used {other:.0f} us of CPU after a "
                    f"{duration_us or 0:.0f} us call returned (work handed to another thread)",
                    f"<= {limit:.0f} us", f"{other:.0f} us"))
    io = harness.get("io_bytes") or {}
    moved = max(int(io.get("read") or 0), int(io.get("written") or 0))
    if moved > IO_LIMIT_BYTES:
        out.append(("P9.file_io", "cheating", f"{where}: the timed call read {io.get('read')} and wrote "
                    f"{io.get('written')} bytes (files, pipes: a replay cache on disk)", f"<= {IO_LIMIT_BYTES} bytes",
                    f"{moved} bytes"))
    if harness.get("file_writes"):
        out.append(("P9.file_io", "cheating", f"{where}: the timed call opened {harness['file_writes'][:3]} for "
                    "writing outside the round's evidence folder (a replay file)", "no file written outside the "
                    "evidence folder", ", ".join(harness["file_writes"][:3])))
    if harness.get("patched"):
        out.append(("P9.patched_library", "cheating", f"{where}: the operator's code replaced library attributes "
                    f"{harness['patched'][:5]}", "numpy/math/time/builtins untouched", ", ".join(harness["patched"][:5])))
    if harness.get("process_changed"):
        out.append(("P9.process_settings", "cheating", f"{where}: the operator's code changed the measured process's "
                    f"settings: {'; '.join(harness['process_changed'][:3])}", "the runner's affinity, scheduling "
                    "class, nice and thread-pool variables", "; ".join(harness["process_changed"][:3])))
    if harness.get("outputs_at_end") is not None and harness["outputs_at_end"] != [d for _, d in _digests(record)]:
        out.append(("P9.deferred_output", "cheating", f"{where}: the output changed after the timed call returned "
                    "(work finished outside the timed region)", "output complete at return", "changed later"))
    return out


def time_floor_problems(calls: list[tuple[str, Any, float | None]]) -> list[Problem]:
    """``P9.time_floor`` on the timed calls of one round, case and arm: ``(where, thread CPU us, wall us)`` each."""
    out = []
    for where, thread_us, duration_us in calls:
        if not isinstance(thread_us, (int, float)) or duration_us is None:
            continue
        limit = FLOOR_SHARE * duration_us + FLOOR_EPS_US
        if thread_us > limit:
            out.append(("P9.time_floor", "performance_evidence_invalid", f"{where}: the call's recorded wall time "
                        f"{duration_us:.1f} us is shorter than the CPU time its own thread spent in it "
                        f"({thread_us:.1f} us): not measured as recorded (a rewritten sample; re-collect the round)",
                        f"thread CPU <= {FLOOR_SHARE:g} x wall + {FLOOR_EPS_US:g} us = {limit:.1f} us",
                        f"{thread_us:.1f} us"))
    return out if out and len(out) >= min(FLOOR_CALLS, len(calls)) else []


def _durations(rnd: evidence.RoundEvidence, case_id: str, arm: str) -> list[float]:
    case = rnd.cases[case_id]
    return list((case.baseline_samples_us if arm == "baseline" and rnd.paired else case.samples_us) or [])


def _probe_digests(record: dict[str, Any] | None) -> dict[str, list]:
    out = {}
    for case in (record or {}).get("cases", []):
        attested = (case.get("probe") or {}).get("attestation")
        if attested:
            out[case["id"]] = (attestation.input_key(attested), _digests(attested))
    return out


def probe_problems(man: manifest_mod.Manifest, record: dict[str, Any] | None) -> list[Problem]:
    """``P9.reference_call`` and ``P9.deferred_output`` from the correctness ``record``'s probes (also
    judged when the record is made: ``verify/early.py``)."""
    out: list[Problem] = []
    for case in (c for c in (record or {}).get("cases", []) if c.get("id") in man.case_ids):
        probe = case.get("probe") or {}
        if probe.get("op_called"):
            out.append(("P9.reference_call", "cheating", f"case {case['id']}: the op called {probe['op_called'][:3]} "
                        "(the frozen reference or the golden module: the oracle itself)",
                        "the delivered kernel computes", ", ".join(probe["op_called"][:3])))
        if probe.get("output_changed_after_return"):
            out.append(("P9.deferred_output", "cheating", f"case {case['id']}: the correctness run's output changed "
                        "after the op returned (work finished outside the call)", "complete at return", "changed"))
    return out


def problems(man: manifest_mod.Manifest, rounds: list[evidence.RoundEvidence], record: dict[str, Any] | None,
             delivered_sha: str) -> list[Problem]:
    """Every check of the module docstring on ``rounds`` and the correctness ``record``."""
    out: list[Problem] = probe_problems(man, record)
    reference = _probe_digests(record)
    for rnd in rounds:
        backend = (rnd.collection.get("environment") or {}).get("backend") or rnd.collection.get("backend")
        for case_id in (c for c in man.case_ids if c in rnd.cases):
            for arm, delivered, rows in _arms(rnd, case_id, delivered_sha):
                where = f"{rnd.collection_id}/{case_id}{'/' + arm if rnd.paired else ''}"
                durations = _durations(rnd, case_id, arm)
                by_input: dict[tuple, set] = {}
                floors: list[tuple[str, Any, float | None]] = []
                for index, rec in rows:
                    if rec is None:
                        continue
                    here = f"{where} repeat {index}"
                    out += output_problems(here, rec)
                    if backend == "cpu":
                        duration = durations[index - 1] if index <= len(durations) else None
                        out += harness_problems(here, rec, duration)
                        floors.append((here, (rec.get("harness") or {}).get("thread_cpu_us"), duration))
                    key = tuple(attestation.input_key(rec))
                    by_input.setdefault(key, set()).add(tuple(_digests(rec)))
                    want = reference.get(case_id)
                    if delivered and want and want[0] == list(key) and _digests(rec) != want[1]:
                        out.append(("P9.timed_output", "cheating", f"{here}: the timed call returned other output "
                                    "than the correctness run on the same inputs", _short(want[1]),
                                    _short(_digests(rec))))
                out += time_floor_problems(floors)
                for key, outputs in by_input.items():
                    if len(outputs) > 1:
                        out.append(("P9.timed_output_stable", "cheating", f"{where}: {len(outputs)} different outputs "
                                    "from one input across the timed calls (a path that changes between calls)",
                                    "1 output", f"{len(outputs)} outputs"))
    return _dedupe(out)


def _short(digests: list) -> str:
    return ",".join(f"{arg}:{(sha or 'none')[:12]}" for arg, sha in digests)


def _dedupe(found: list[Problem], keep: int = 3) -> list[Problem]:
    """At most ``keep`` problems per (check, round/case prefix) and one summary of the rest."""
    out, counts = [], {}
    for problem in found:
        group = (problem[0], problem[2].split(" repeat ")[0])
        counts[group] = counts.get(group, 0) + 1
        if counts[group] <= keep:
            out.append(problem)
    for (check, where), count in counts.items():
        if count > keep:
            first = next(p for p in found if p[0] == check)
            out.append((check, first[1], f"{where}: {count - keep} more timed call(s) with the same problem",
                        first[3], first[4]))
    return out

