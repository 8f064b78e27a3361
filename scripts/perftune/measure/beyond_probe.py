"""Correctness beyond the P0 cases, in the case's own process (stage5-check P9; issue 28 items 10, 12).

Runs the case's ``test_function`` once (seed 42, untimed) with the frozen op wrapped, exactly as the
correctness probe does (``probe_runner.OpRecorder``), to find the wrapper and what it was given, then:

- **tail inputs**: the wrapper (or the op) called once on the case's shape with new data whose every
  row holds 2 % of its elements at mean +- ``--tail-sigmas`` (default ``TAIL_SIGMAS``) x std of the
  seed-42 input (``fresh_data.tail_like``; for softmax's N(0, 3) at 30 sigma: +-90, where exp overflows
  float32 without the max subtraction);
- **support shapes**: the wrapper called on each ``--shapes`` shape (drawn by the verifier from the
  frozen support range), its inputs built by the golden case factory for that shape and ``--seed``;
- **accumulation dtypes**: the wrapper called on the seed-42 inputs passed as :class:`Traced` arrays
  (a numpy subclass whose ``__array_ufunc__`` / ``__array_function__`` record every accumulating
  reduction — add/multiply reduce, accumulate, matmul, dot, einsum, ... — with the dtype numpy
  computes it in; data that leaves the subclass, ``np.asarray``, is no longer seen).

Each output goes through the frozen precision gate against the frozen reference called like the
golden factory's case (``probe_runner._figures``). A call that raises is a figure with ``error``.

usage:
  python -m perftune.measure.beyond_probe --op-dir DIR --runner FILE --manifest FILE --case-id ID
      --op-name NAME --output FILE --seed N [--shapes JSON] [--tail-sigmas N]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from .. import fsio
from ..argv import parser_from_doc
from ..contract import golden_source, precision, support_range
from ..contract.manifest import load_manifest
from ..errors import run_cli
from . import fresh_data, probe_runner, reference_call
from .backends.case_adapter import case_function, known_case, load_runner_module, seed_all

TAIL_SIGMAS = 30.0   # the tail width when SPEC.md declares none (then a failure there is only disclosed)
SHAPES = 3           # shapes drawn per P0 dtype from the frozen support range
ACCUMULATING = {"add", "multiply", "matmul"}
FUNCTIONS = {"dot", "vdot", "inner", "einsum", "tensordot", "matmul"}


def traced_class(numpy, log: list):
    """An ndarray subclass recording accumulating reductions into ``log`` as (operation, dtype)."""

    def plain(value):
        return value.view(numpy.ndarray) if isinstance(value, Traced) else value

    class Traced(numpy.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            if "out" in kwargs:
                kwargs["out"] = tuple(plain(o) for o in kwargs["out"])
            result = getattr(ufunc, method)(*(plain(i) for i in inputs), **kwargs)
            first = result[0] if isinstance(result, tuple) else result
            if ufunc.__name__ in ACCUMULATING and (method != "__call__" or ufunc.__name__ == "matmul"):
                log.append((f"{ufunc.__name__}.{method}", str(numpy.dtype(kwargs.get("dtype") or first.dtype))))
            wrap = lambda r: r.view(Traced) if isinstance(r, numpy.ndarray) else r  # noqa: E731
            return tuple(map(wrap, result)) if isinstance(result, tuple) else wrap(result)

        def __array_function__(self, func, types, args, kwargs):
            result = super().__array_function__(func, types, args, kwargs)
            if func.__name__ in FUNCTIONS and hasattr(result, "dtype"):
                log.append((func.__name__, str(numpy.dtype(kwargs.get("dtype") or result.dtype))))
            return result

    return Traced


def tail_width(manifest) -> tuple[float, bool]:
    """(sigmas, declared): SPEC.md's ``tails: N sigma`` (contract/support_range.py), else TAIL_SIGMAS undeclared."""
    declared = support_range.tail_sigmas(manifest.raw.get("support_range"))
    return (TAIL_SIGMAS, False) if declared is None else (float(declared), True)


def plan(manifest, seed: int) -> list[tuple[Any, list]]:
    """The probed cases: the first P0 case of each dtype, each with the ``SHAPES`` shapes drawn for it from
    the frozen support range with ``seed`` (cpu only: on pypto-sim every new shape compiles a kernel)."""
    support, backend = manifest.raw.get("support_range"), manifest.protocol.backend
    firsts = {}
    for case in manifest.cases:
        if case.p0 and case.dtype not in firsts:
            firsts[case.dtype] = case
    avoid = {c.shape for c in manifest.cases}
    return [(case, [] if support is None or backend != "cpu" or dtype not in support["dtypes"] else
             [[s, dtype] for s in support_range.draw(support, case.shape, seed + number, SHAPES, avoid)])
            for number, (dtype, case) in enumerate(firsts.items())]


def correctness_step(op_dir: Path, manifest, case_id: str, op_name: str, seed: int):
    """The correctness probe's step 5 (``probe_runner.correctness``'s ``after``) when :func:`plan` probes
    ``case_id`` with ``seed``, else None; built before the test module is imported (like the factory)."""
    shapes = next((s for case, s in plan(manifest, seed) if case.id == case_id), None)
    if shapes is None:
        return None
    factory, sigmas = load_factory(op_dir, manifest, case_id), tail_width(manifest)[0]
    return lambda module, first, target: {"seed": seed, **after_first(
        module, first, op_dir, manifest, case_id, op_name, factory, [tuple(s) for s in shapes], seed, sigmas,
        target=target)}


def _call(target, args: list) -> tuple[Any, str | None]:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return target(*args), None
    except Exception as exc:  # a shape or value the kernel cannot take: a failed figure, not a crash
        return None, f"{type(exc).__name__}: {exc}"


def _judge(actual, error, reference, call, received, gate) -> dict[str, Any]:
    if error:
        return {"error": error, "meets_frozen_gate": False}
    return probe_runner._figures(actual, reference, call, received, gate)


def first_call(module, function, op_name: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The test run once (seed 42) with the op wrapped: its one op call, or why there is none."""
    target = getattr(module, op_name)
    recorder = probe_runner.OpRecorder(target)
    setattr(module, op_name, recorder)
    try:
        seed_all()
        _, error = _call(function, [])
    finally:
        setattr(module, op_name, target)
    if len(recorder.calls) != 1:
        return None, {"problem": f"the test called {op_name} {len(recorder.calls)} times (need exactly 1)",
                      "test_error": error}
    return recorder.calls[0], {}


def beyond(module, function, op_dir: Path, manifest, case_id: str, op_name: str, factory, shapes: list, seed: int,
           sigmas: float = TAIL_SIGMAS):
    first, problem = first_call(module, function, op_name)
    if first is None:
        return problem
    return after_first(module, first, op_dir, manifest, case_id, op_name, factory, shapes, seed, sigmas)


def after_first(module, first: dict[str, Any], op_dir: Path, manifest, case_id: str, op_name: str, factory,
                shapes: list, seed: int, sigmas: float = TAIL_SIGMAS, target=None) -> dict[str, Any]:
    """Tail inputs, support shapes and accumulation dtypes, given the test's one op call ``first``
    (:class:`probe_runner.OpRecorder`'s record); the correctness probe calls it after its own probes,
    passing the unwrapped op as ``target``."""
    target = target if target is not None else getattr(module, op_name)
    gate_frozen = manifest.raw.get("precision_gate")
    dtype = probe_runner.gate_dtype(first, manifest, case_id)
    gate, reference = precision.gate_for(gate_frozen, dtype), probe_runner._reference(op_dir, gate_frozen)
    if gate is None or reference is None or isinstance(factory, str):
        return {"problem": factory if isinstance(factory, str) else "no frozen precision gate or reference"}
    caller = first["record"]["caller"]
    wrapper = getattr(module, caller, None)
    direct = caller.startswith("test_") or not callable(wrapper)
    received = [a for i, a in enumerate(first["args"]) if i not in first["written"]] if direct else \
        list(first["caller_args"])
    (fargs, fkwargs, source), make = factory
    where = reference_call.plan(fargs, fkwargs, received)

    def run(values: list, call: tuple, dtype_gate) -> dict[str, Any]:
        if direct:
            args, it = [], iter(values)
            args = [probe_runner._empty_like(a) if i in first["written"] else next(it)
                    for i, a in enumerate(first["args"])]
            out, err = _call(target, args)
            out = args[first["written"][0]] if first["written"] and err is None else out
        else:
            out, err = _call(wrapper, values)
        return _judge(out, err, reference, call, values, dtype_gate)

    tail_in = [fresh_data.tail_like(a, seed, sigmas) for a in received]
    out: dict[str, Any] = {"called": "op" if direct else caller, "factory": source, "tail_sigmas": sigmas,
                           "tail": run(tail_in, (fargs, fkwargs, where), gate), "shapes": []}
    raw_case = next(c for c in manifest.raw["cases"] if c["id"] == case_id)
    for shape, shape_dtype in shapes:
        entry = {"shape": shape, "dtype": shape_dtype}
        if direct:
            out["shapes"].append({**entry, "unverified": "the test calls the op directly: no wrapper allocates "
                                  "outputs of another shape"})
            continue
        seed_all(seed)
        try:
            _, nargs, nkwargs = next(iter(make([{**raw_case, "shape": shape, "dtype": shape_dtype}])))
        except Exception as exc:
            out["shapes"].append({**entry, "unverified": f"the golden factory cannot build it: {exc}"})
            continue
        nargs, nkwargs = tuple(nargs), dict(nkwargs)
        values = list(received)
        for (kind, key), index in where.items():
            values[index] = nargs[key] if kind == "arg" else nkwargs[key]
        out["shapes"].append({**entry, **run(values, (nargs, nkwargs, where),
                                             precision.gate_for(gate_frozen, shape_dtype))})
    out["reductions"] = _reductions(wrapper if not direct else None, received)
    return out


def _reductions(wrapper, received: list) -> dict[str, Any]:
    numpy = sys.modules.get("numpy")
    if wrapper is None or numpy is None or not any(isinstance(a, numpy.ndarray) for a in received):
        return {"unverified": "the inputs are not numpy arrays passed to a wrapper (the tracer observes numpy)"}
    log: list = []
    traced = traced_class(numpy, log)
    _, error = _call(wrapper, [a.view(traced) if isinstance(a, numpy.ndarray) else a for a in received])
    seen = sorted({f"{op}:{dtype}" for op, dtype in log})
    return {"observed": seen, **({"error": error} if error else {})}


def load_factory(op_dir: Path, manifest, case_id: str) -> Any:
    """``((args, kwargs, source), factory)`` of the golden case factory for ``case_id``, or why there is
    none (a string); build it before the test module is imported."""
    try:
        src = golden_source.resolve(op_dir)
        make = golden_source.load_callable(src.path, src.factory, "golden_source.factory")
        return reference_call.factory_case(op_dir, manifest, case_id), make
    except Exception as exc:
        return f"no golden case factory: {exc}"


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "beyond_probe")
    for flag in ("--op-dir", "--runner", "--manifest", "--case-id", "--op-name", "--output", "--seed"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--shapes", default="[]")
    parser.add_argument("--tail-sigmas", type=float, default=TAIL_SIGMAS)
    args = parser.parse_args(argv)
    manifest = load_manifest(args.manifest, check_schema=False)
    known_case(manifest, args.case_id, args.manifest)
    op_dir, runner = Path(args.op_dir).resolve(), Path(args.runner).resolve()
    factory = load_factory(op_dir, manifest, args.case_id)   # before the test module runs (it cannot patch it)
    module = load_runner_module(runner, op_dir)
    function = case_function(module, manifest, args.case_id, args.manifest)
    result = beyond(module, function, op_dir, manifest, args.case_id, args.op_name, factory,
                    [tuple(s) for s in json.loads(args.shapes)], int(args.seed), args.tail_sigmas)
    fsio.write_json(args.output, {"case_id": args.case_id, "seed": int(args.seed), **result})
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
