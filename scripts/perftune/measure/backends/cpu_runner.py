"""The cpu backend's measured process: one case per process, as on the NPU.

One process measures one block of a case's repeats (the parent starts ``protocol.processes`` of
them per case, docs/cpu-backend.md). It imports the op's test module, replaces the module global
named by the frozen op name (e.g. ``softmax_kernel``) with a timing shim and calls the case's
``test_function``: ``--warmup`` untimed calls, then ``--repeats`` timed calls. ``random``/``numpy`` are seeded with 42 before every
test call. One full ``gc.collect()`` + ``gc.freeze()`` runs before the first call, never between
calls: a collection right before a sample walks the whole heap and leaves the caches cold, which
inflated µs-scale kernels up to 30x against ``timeit`` (docs/benchmarks.md §3). The shim disables
GC only around the op call and times it with ``time.perf_counter_ns`` as bound by ``harness_guard``
before the operator's module is imported; each call also records the harness guard's readings
(timer identity, threads and children, other threads' CPU time, patched library attributes, the
output digests once the test returned) under ``harness`` in its attestation; a random timed call and
the last one of each process and arm also keep output values (``sampled``, ``measure/sampled_values.py``;
every timed call on fresh data). Every test call must call
the op exactly once (0 or >=2 calls fails, the cpu twin of msprof's "exactly one matching row").
Inputs are built by the test outside the op call, so they are never timed.

``--mode profile`` instead runs the case once under ``sys.setprofile`` and records every Python
function defined in the runner/op folders (discovery). Results go to ``--output`` as JSON; stdout
carries exactly one ``PYPTO_PERF_SELECTED_CASE=<id>`` line. Unknown case id: exit 2.

usage:
  python -m perftune.measure.backends.cpu_runner --op-dir DIR --runner FILE --manifest FILE --case-id ID
      --op-name NAME --warmup N --repeats N --output FILE [--mode time|profile]
      [--paired-runner FILE --first-repeat N]

Fresh data (the verifier's P10) never shows in the command line or the environment: the parent writes
``{"fresh_seed": N or null}`` to :data:`CHANNEL` beside ``--output`` for every launch, rounds and the
verifier's runs alike, and the runner reads and unlinks it before the operator's module is imported
(:func:`read_channel`). With a seed, every op call is timed on new data of the same shapes drawn with
seed N + the call's index (``measure/fresh_data.py``), then made again untimed on the test's own
arguments, so the test's check still passes and a kernel cannot have seen the timed data; each fresh
timed call keeps its output values and records ``fresh`` (per argument: the digest of the test's
value and the seed of its new data), so the verifier rebuilds the inputs it received and checks
its values against the frozen reference (``P10.remeasured_values``).
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

from . import harness_guard  # first: the clocks are bound before any operator code is imported
from . import sim_guard      # pypto-sim only: host torch work around the launch (before the operator's import)

from ... import fsio
from ...contract import protocol
from ...argv import parser_from_doc
from ...errors import CheckFailed, ContractError, run_cli
from ...contract.manifest import load_manifest
from .. import attestation, fresh_data, sampled_values
from .base import CHANNEL
from .case_adapter import case_function, known_case, load_runner_module, seed_all

def read_channel(output: Path) -> dict:
    """The parent's launch settings (``fresh_seed``) beside ``--output``, read and unlinked before the
    operator's import ({} when the launcher wrote none, e.g. a runner started by hand)."""
    path = output.parent / CHANNEL
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    path.unlink()
    obj = json.loads(text)
    return obj if isinstance(obj, dict) else {}


class TimingShim:
    """Callable standing in for the op: times each call, counts calls."""

    def __init__(self, target, libraries: dict[str, int] | None = None, fresh_seed: int | None = None) -> None:
        self.target, self.fresh_seed, self.drawn = target, fresh_seed, 0
        self.libraries = libraries if libraries is not None else harness_guard.library_snapshot()
        self.calls = 0
        self.durations_ns: list[int] = []
        self.attestations: list[dict] = []
        self.pending: list[tuple] = []
        self.keep_at: set[int] = set()   # 0-based test-call indices whose output values are kept
        self.keeping: tuple[int, int] | None = None   # (timed call number, timed calls) of this call
        self.sampled_of = (0, 0)                        # (warm-ups, timed calls) of this process

    def __call__(self, *args, **kwargs):
        caller = attestation.caller_name()
        if self.fresh_seed is not None:
            return self._fresh_call(args, kwargs, caller)
        return self._timed(args, kwargs, caller)

    def _fresh_call(self, args: tuple, kwargs: dict, caller: str):
        """``--fresh-seed``: time the op on new data of the same shapes (seed + call index), then call
        it untimed on the test's own arguments so the test still checks what it built."""
        seed = self.fresh_seed + self.drawn
        self.drawn += 1
        seeds = {str(i): seed + i for i in range(len(args))}
        seeds.update({k: seed + 1000 + i for i, k in enumerate(sorted(kwargs))})
        origin = [{"arg": d["arg"], "from": d["sha256"], "seed": seeds[d["arg"]]}
                  for d in attestation.before(args, kwargs) if d.get("kind") == "tensor"]
        self._timed(tuple(fresh_data.fresh_like(a, seeds[str(i)]) for i, a in enumerate(args)),
                    {k: fresh_data.fresh_like(v, seeds[k]) for k, v in kwargs.items()}, caller, origin)
        return self.target(*args, **kwargs)

    def _timed(self, args: tuple, kwargs: dict, caller: str, origin: list | None = None):
        pre = attestation.before(args, kwargs)  # outside the timed region
        guard = harness_guard.CallGuard(self.libraries)
        clock = harness_guard.CLOCK_NS
        enabled = gc.isenabled()
        gc.disable()
        try:
            with sim_guard.watch() as sim:
                before = harness_guard.cpu_now()   # the call's CPU time beside the clock (P9.time_floor)
                start = clock()
                result = self.target(*args, **kwargs)
                stop = clock()
                after = harness_guard.cpu_now(thread_first=True)
        finally:
            if enabled:
                gc.enable()
        guard.returned((before, after))
        self.calls += 1
        self.durations_ns.append(stop - start)
        record = attestation.after(pre, args, kwargs, result, caller)
        if self.keeping:   # outside the timed region (measure/sampled_values.py)
            record["sampled"] = sampled_values.keep(record, args, kwargs, result, *self.keeping)
        if origin is not None:
            record["fresh"] = {"args": origin}
        if sim is not None:
            record["sim"] = sim.record()
        self.attestations.append(record)
        self.pending.append((guard, pre, args, kwargs, result, record))
        return result

    def settle(self) -> None:
        """After the test function returned: finish each call's harness record (outputs digested again)."""
        for guard, pre, args, kwargs, result, record in self.pending:
            again = attestation.after(pre, args, kwargs, result, record["caller"])
            record["harness"] = guard.finished([o.get("sha256") for o in again["outputs"]])
        self.pending = []


def _shim(module, op_name: str, source: str, libraries: dict[str, int] | None = None,
          fresh_seed: int | None = None) -> tuple[object, "TimingShim"]:
    target = getattr(module, op_name, None)
    if not callable(target):
        raise ContractError(source, "protocol.op_name", f"{op_name!r} is not a function of the runner module",
                            "freeze the exact name of the kernel function (see list-op-names)")
    shim = TimingShim(target, libraries, fresh_seed)
    setattr(module, op_name, shim)
    return target, shim


def _keep(shim: TimingShim, warmup: int, repeats: int) -> None:
    """Draw the timed calls whose values ``shim`` keeps (after the operator's import: unpredictable);
    on fresh data every timed call keeps them."""
    kept = range(1, repeats + 1) if shim.fresh_seed is not None else sampled_values.draw(repeats)
    shim.keep_at = {warmup + n - 1 for n in kept}
    shim.sampled_of = (warmup, repeats)


def _one_call(shim: TimingShim, function, op_name: str, index: int, source: str) -> dict:
    shim.calls, shim.durations_ns, shim.attestations, shim.pending = 0, [], [], []
    warmup, repeats = shim.sampled_of
    shim.keeping = (index - warmup + 1, repeats) if index in shim.keep_at else None
    seed_all()
    function()
    shim.settle()
    if shim.calls != 1:
        raise CheckFailed(source, op_name, f"test call {index + 1} called the op {shim.calls} times",
                          "each test must launch the target exactly once")
    return {"duration_ns": shim.durations_ns[0], "calls": shim.calls, "attestation": shim.attestations[0]}


def _settle_heap() -> None:
    """Collect once and move every surviving object out of GC's reach before the first call."""
    gc.collect()
    gc.freeze()


def time_case(module, function, op_name: str, warmup: int, repeats: int, source: str,
              libraries: dict[str, int] | None = None, fresh_seed: int | None = None) -> list[dict]:
    """Run warm-ups then repeats of ``function`` with ``op_name`` shimmed; one sample per repeat."""
    target, shim = _shim(module, op_name, source, libraries, fresh_seed)
    _keep(shim, warmup, repeats)
    _settle_heap()
    try:
        calls = [_one_call(shim, function, op_name, i, source) for i in range(warmup + repeats)]
    finally:
        setattr(module, op_name, target)
    return calls[warmup:]


def time_paired(arms: dict[str, tuple[object, object]], op_name: str, warmup: int, repeats: int,
                source: str, first_repeat: int = 0, libraries: dict[str, int] | None = None,
                fresh_seed: int | None = None) -> dict:
    """Interleave the ``baseline`` and ``candidate`` arms in one process, per repeat.

    Round-wide repeat k (= ``first_repeat`` + the index in this process + 1; a round spread over
    several processes passes the index of its first repeat) runs baseline first when k is odd and
    candidate first when k is even (warm-ups too), so slow drift and "always second" effects cancel
    across processes as well; the order of every repeat is returned.
    """
    shims = {arm: _shim(module, op_name, f"{source} ({arm})", libraries, fresh_seed)
             for arm, (module, _f) in arms.items()}
    for _target, shim in shims.values():
        _keep(shim, warmup, repeats)
    _settle_heap()
    samples: dict[str, list[dict]] = {"baseline": [], "candidate": []}
    order = []
    try:
        for index in range(warmup + repeats):
            sequence = ["baseline", "candidate"] if (first_repeat + index - warmup) % 2 == 0 else ["candidate", "baseline"]
            for arm in sequence:
                result = _one_call(shims[arm][1], arms[arm][1], op_name, index, f"{source} ({arm})")
                if index >= warmup:
                    samples[arm].append(result)
            if index >= warmup:
                order.append(sequence)
    finally:
        for arm, (module, _f) in arms.items():
            setattr(module, op_name, shims[arm][0])
    return {"samples": samples["candidate"], "baseline_samples": samples["baseline"], "order": order}


def profile_case(function, roots: list[Path]) -> list[dict]:
    """Run once under ``sys.setprofile``; inclusive time of functions defined under ``roots``."""
    folders = tuple(str(r.resolve()) + "/" for r in roots)
    stack: dict[int, list[int]] = {}
    totals: dict[str, list[int]] = {}

    def hook(frame, event, _arg):
        code = frame.f_code
        if event not in ("call", "return") or not code.co_filename.startswith(folders):
            return
        if event == "call":
            stack.setdefault(id(frame), []).append(harness_guard.CLOCK_NS())
        elif stack.get(id(frame)):
            elapsed = harness_guard.CLOCK_NS() - stack[id(frame)].pop()
            entry = totals.setdefault(code.co_qualname, [0, 0])
            entry[0] += 1
            entry[1] += elapsed

    seed_all()
    sys.setprofile(hook)
    try:
        function()
    finally:
        sys.setprofile(None)
    rows = [{"count": c, "task_type": "python_function", "total_duration_us": round(ns / 1000, 3),
             "exact_op_name": name} for name, (c, ns) in totals.items()]
    return sorted(rows, key=lambda r: (-r["total_duration_us"], r["exact_op_name"]))


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "cpu_runner")
    for flag in ("--op-dir", "--runner", "--manifest", "--case-id", "--output"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--op-name", default="")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--mode", choices=("time", "profile"), default="time")
    parser.add_argument("--paired-runner", help="saved baseline runner, interleaved per repeat (time mode)")
    parser.add_argument("--first-repeat", type=int, default=0,
                        help="round-wide index (from 0) of this process's first repeat (paired arm order)")
    args = parser.parse_args(argv)
    seed = read_channel(Path(args.output)).get("fresh_seed")   # before anything of the operator runs
    fresh_seed = None if seed is None else int(seed) + 1000 * args.first_repeat
    manifest = load_manifest(args.manifest, check_schema=False)  # the parent validated it
    known_case(manifest, args.case_id, args.manifest)
    op_dir, runner = Path(args.op_dir).resolve(), Path(args.runner).resolve()
    libraries = harness_guard.preload()  # before the operator's import: what it may not replace
    harness_guard.own_process()           # the process settings both arms run under (docs/cpu-backend.md)
    harness_guard.EVIDENCE_ROOT[:] = [str(Path(args.output).resolve().parents[1])]   # the round's case folder
    module = load_runner_module(runner, op_dir)
    function = case_function(module, manifest, args.case_id, args.manifest)
    try:
        if args.mode == "profile":
            result = {"rows": profile_case(function, sorted({op_dir, runner.parent}))}
        elif args.paired_runner:
            base_runner = Path(args.paired_runner).resolve()
            base = load_runner_module(base_runner, op_dir, name=f"{base_runner.stem}__paired_baseline")
            arms = {"baseline": (base, case_function(base, manifest, args.case_id, args.manifest)),
                    "candidate": (module, function)}
            result = time_paired(arms, args.op_name, args.warmup, args.repeats, str(runner), args.first_repeat,
                                 libraries, fresh_seed)
        else:
            result = {"samples": time_case(module, function, args.op_name, args.warmup, args.repeats,
                                           str(runner), libraries, fresh_seed)}
    except (ContractError, CheckFailed):
        raise
    except Exception as exc:  # the operator's own test failed: one line, exit 1
        raise CheckFailed(runner, args.case_id, f"test raised {type(exc).__name__}: {exc}",
                          "fix the operator or its test") from None
    fsio.write_json(args.output, {"case_id": args.case_id, "op_name": args.op_name, **result})
    print(f"{protocol.SELECTED_CASE_MARKER}{args.case_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
