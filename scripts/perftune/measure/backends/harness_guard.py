"""What the harness owns in a measured process: the timer, the threads, the libraries (issue 28).

Imported by the cpu runner BEFORE the operator's test module, so the clocks below are bound to the
interpreter's own functions, never to anything the operator's code installs. Per timed call
:class:`CallGuard` records, outside the timed region:

- ``timer_intact``: ``time.perf_counter_ns``/``time.perf_counter`` are still the functions bound
  here (a test module that replaces the timer is ``cheating``; the runner times with the bound one);
- ``threads`` / ``children``: native threads (``/proc/self/task``) and child processes before the
  call, after it, and after the test function returned (work handed to a thread or child that
  outlives the call);
- ``other_cpu_us`` / ``other_cpu_after_us``: process CPU time (``resource.getrusage``) minus the
  calling thread's CPU time (``time.thread_time_ns``) during the call, and from its return to the
  test's end: a kernel may use threads while it runs (the call's time includes them), but CPU spent
  by other threads after the call returned is work finished outside the timed region;
- ``call_cpu_us``: the process's CPU time during the call (every thread; load does not inflate it the
  way it inflates wall time: ``verify/baseline_arm.py`` compares it across arms), read by the runner
  right beside its two clock reads (:func:`cpu_now`), like ``thread_cpu_us`` below;
- ``io_bytes``: bytes the process read and wrote during the call (``/proc/self/io``; a replay cache
  on disk, written while timed);
- ``file_writes``: files opened for writing during the call (``sys.addaudithook`` "open" events, a hook
  installed here, before the operator's import, that nothing can remove), outside the round's
  evidence folder (:data:`EVIDENCE_ROOT`, set by the runner: the harness's own files) and outside
  ``__pycache__`` folders (the bytecode of a module first imported during the call); a replay file
  of any size, written anywhere else;
- ``patched``: attributes of the libraries a kernel computes with (numpy and its submodules as they
  were right after numpy's first import, before the operator's module saw it; ``math``, ``time``,
  ``builtins``, ``torch``) that are no longer the objects they were before the operator's import
  (a module that slows the baseline arm or fakes a library routine by patching numpy).
- ``process_changed``: the process settings the runner owns (:func:`process_settings`: CPU affinity,
  scheduling class and priority, nice of every native thread; the thread-pool variables
  :data:`THREAD_VARS`) that differ, before or right after the call, from what the runner set before
  the operator's import (:func:`own_process`): a kernel that pins CPUs, raises its scheduling class or
  resizes thread pools at import (docs/cpu-backend.md, "The process is the harness's");
- ``thread_cpu_us``: the calling thread's CPU time during the call (``time.thread_time_ns``), read by
  the runner right beside its two clock reads (:func:`cpu_now`), so no reading of the guard is in it:
  a lower bound of the call's wall time for any kernel (``P9.time_floor``).

The verifier reads these records from ``attestation.json`` (``verify/timed_calls.py``).
"""

from __future__ import annotations

import importlib.abc
import os
import resource
import sys
import time
from typing import Any, Callable

CLOCK_NS = time.perf_counter_ns          # bound at import: before any operator code runs
_PERF_COUNTER = time.perf_counter
_THREAD_NS = time.thread_time_ns
_GETRUSAGE = resource.getrusage
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
EVIDENCE_ROOT: list[str] = []          # the round's evidence folder (cpu_runner sets it)
_WATCH: list[list[str]] = []           # non-empty while a timed call runs: the files it opened for writing


def _audit(event: str, args: tuple) -> None:
    if not _WATCH or event != "open":
        return
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    writing = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (isinstance(mode, str) and set(mode) & set("wax+"))
    if writing and isinstance(path, (str, bytes, os.PathLike)):
        name = os.path.abspath(os.fsdecode(path))
        cached = f"{os.sep}__pycache__{os.sep}" in name   # a module first imported in the call: its .pyc
        if not cached and not any(name == root or name.startswith(root + os.sep) for root in EVIDENCE_ROOT):
            _WATCH[-1].append(name)


sys.addaudithook(_audit)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")
_POLICIES = {getattr(os, n): n for n in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE", "SCHED_FIFO", "SCHED_RR")
             if hasattr(os, n)}
OWNED: dict[str, Any] = {}             # the runner's settings (own_process), the reference of every call


def process_settings() -> dict[str, Any]:
    """Per setting, the distinct values over this process's native threads; the thread-pool variables."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    affinity, scheduling, nice = set(), set(), set()
    for tid in tids:
        try:
            affinity.add(",".join(map(str, sorted(os.sched_getaffinity(tid)))))
            policy = os.sched_getscheduler(tid)
            scheduling.add(f"{_POLICIES.get(policy, policy)}:{os.sched_getparam(tid).sched_priority}")
            nice.add(str(os.getpriority(os.PRIO_PROCESS, tid)))
        except (OSError, AttributeError):
            continue   # the thread ended meanwhile, or no such call on this platform
    return {"affinity": sorted(affinity), "scheduling": sorted(scheduling), "nice": sorted(nice),
            **{name: os.environ.get(name) for name in THREAD_VARS}}


def own_process() -> dict[str, Any]:
    """Before the operator's import: the normal scheduling class (SCHED_OTHER, priority 0) for the
    runner, the affinity and nice it inherited; records them as :data:`OWNED` (both arms share them)."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass   # not permitted or not Linux: the inherited class is recorded as it is
    OWNED.clear()
    OWNED.update(process_settings())
    return dict(OWNED)


def process_changes() -> list[str]:
    """``setting owned -> now`` for every setting that differs from :data:`OWNED` (none before own_process)."""
    if not OWNED:
        return []
    now = process_settings()
    return [f"{key} {OWNED[key]} -> {now.get(key)}" for key in sorted(OWNED) if now.get(key) != OWNED[key]]
_LIBRARIES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "math", "time", "builtins", "torch")


def _process_cpu_ns() -> int:
    usage = _GETRUSAGE(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def cpu_now(thread_first: bool = False) -> tuple[int, int]:
    """(process CPU ns, calling thread's CPU ns), the thread's read nearest the runner's clock: last before the
    call, first after it (``thread_first``)."""
    if thread_first:
        thread = _THREAD_NS()
        return _process_cpu_ns(), thread
    return _process_cpu_ns(), _THREAD_NS()


def io_bytes() -> tuple[int, int]:
    """(bytes read, bytes written) by this process so far (``/proc/self/io`` rchar/wchar; 0 without it)."""
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        return int(fields.get("rchar", 0)), int(fields.get("wchar", 0))
    except (OSError, ValueError):
        return 0, 0


def native_threads() -> int:
    """Threads of this process (native ones too: a C extension's pool is not in ``threading``)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading
        return threading.active_count()


def children() -> int:
    """Live child processes of this process (0 when /proc is not readable)."""
    total = 0
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
                total += len(handle.read().split())
    except OSError:
        return 0
    return total


class AfterNumpyImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs ``action()`` right after numpy's first import, before the importer (the operator's module)
    sees numpy; ``tag`` names the hook so its owner can replace it. One hook for the harness's library
    snapshot and the case adapter's seeding: a runner that never uses numpy does not pay its import."""

    def __init__(self, action: Callable[[], None], tag: str) -> None:
        self.action, self.tag, self.inner, self.finding = action, tag, None, False

    def find_spec(self, fullname, path, target=None):
        if fullname != "numpy" or self.finding:
            return None
        self.finding = True
        try:
            spec = next((found for finder in sys.meta_path if finder is not self and hasattr(finder, "find_spec")
                         and (found := finder.find_spec(fullname, path, target)) is not None), None)
        finally:
            self.finding = False
        if spec is None or spec.loader is None:
            return spec
        self.inner, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        module.__spec__.loader = module.__loader__ = self.inner   # numpy sees its own loader
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.inner.exec_module(module)
        self.action()


def remove_hooks(tag: str) -> None:
    """Drop every :class:`AfterNumpyImport` hook named ``tag`` that has not fired yet."""
    for finder in [f for f in sys.meta_path if isinstance(f, AfterNumpyImport) and f.tag == tag]:
        sys.meta_path.remove(finder)


def preload() -> dict[str, int]:
    """The library snapshot, taken before the operator's import (numpy's part when it is first imported)."""
    snapshot = library_snapshot()
    if "numpy" not in sys.modules:
        sys.meta_path.insert(0, AfterNumpyImport(lambda: snapshot.update(library_snapshot()), "snapshot"))
    return snapshot


def library_snapshot() -> dict[str, int]:
    """``module.attr`` → id of the object, for the libraries loaded now."""
    out = {}
    for name in _LIBRARIES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if not attr.startswith("__"):
                out[f"{name}.{attr}"] = id(value)
    return out


def patched(before: dict[str, int]) -> list[str]:
    """Names of ``before`` whose object was replaced or removed (added names are not patches)."""
    now = library_snapshot()
    return sorted(name for name, ident in before.items() if now.get(name, ident) != ident or name not in now)


def timer_intact() -> bool:
    return time.perf_counter_ns is CLOCK_NS and time.perf_counter is _PERF_COUNTER


class CallGuard:
    """One timed call's harness record (every reading outside the timed region)."""

    def __init__(self, libraries: dict[str, int]) -> None:
        self.libraries = libraries
        self.threads = [native_threads()]
        self.children = [children()]
        self.io0 = io_bytes()
        self.cpu0, self.thread0 = _process_cpu_ns(), _THREAD_NS()
        self.writes: list[str] = []
        self.changed = process_changes()
        _WATCH[:] = [self.writes]   # last: the guard's own reads above are not the call's

    def returned(self, window: tuple[tuple[int, int], tuple[int, int]] | None = None) -> None:
        """Right after the call; ``window``: :func:`cpu_now` right before and right after the runner's clock reads."""
        _WATCH.clear()
        self.window = window
        self.cpu1, self.thread1 = _process_cpu_ns(), _THREAD_NS()
        io1 = io_bytes()
        self.io = {"read": io1[0] - self.io0[0], "written": io1[1] - self.io0[1]}
        self.threads.append(native_threads())
        self.children.append(children())
        self.changed = sorted(set(self.changed) | set(process_changes()))

    def finished(self, outputs_at_end: list[str | None]) -> dict[str, Any]:
        """The record once the test function returned (``outputs_at_end``: output digests then)."""
        during = (self.cpu1 - self.cpu0) - (self.thread1 - self.thread0)
        (p0, t0), (p1, t1) = self.window or ((self.cpu0, self.thread0), (self.cpu1, self.thread1))
        call = (p1 - p0, t1 - t0)
        after = (_process_cpu_ns() - self.cpu1) - (_THREAD_NS() - self.thread1)
        self.threads.append(native_threads())
        self.children.append(children())
        return {"timer_intact": timer_intact(), "threads": self.threads, "children": self.children,
                "other_cpu_us": round(max(during, 0) / 1000, 3), "other_cpu_after_us": round(max(after, 0) / 1000, 3),
                "call_cpu_us": round(max(call[0], 0) / 1000, 3),   # the process's CPU during the call
                "patched": patched(self.libraries)[:20], "outputs_at_end": outputs_at_end, "io_bytes": self.io,
                "file_writes": sorted(set(self.writes))[:10], "process_changed": self.changed[:10],
                "thread_cpu_us": round(call[1] / 1000, 3)}

