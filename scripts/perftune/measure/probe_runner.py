"""Probes of one case in its own process: the precision gate the test applied, caching, moved work.

``--mode correctness`` (run by ``check_correctness.py`` for every manifest case):

1. runs the case's ``test_function`` once (seeded with 42) with the frozen op wrapped: the op's
   inputs/outputs are attested (``measure/attestation.py``) and the function that called it (the
   wrapper) and the wrapper's arguments are kept;
2. records the precision thresholds the test APPLIED: ``atol``/``rtol`` locals and
   ``min_matched``-named values (``MIN_MATCHED``, ``min_matched_ratio``, ...) read by the test
   file's functions, and the ``rtol``/``atol`` of every ``numpy.isclose``/``allclose``/
   ``testing.assert_allclose`` call (a tracer on the test file's frames; no text is scraped);
3. measures the op's output against the frozen reference (``precision_gate.reference``) with the
   FROZEN thresholds: ``matched_ratio``, ``max_abs_error``; the reference is called the way the
   golden case factory defines the case (``reference_call``: its non-tensor arguments too), with
   the factory's tensors replaced by what the call received;
4. calls the wrapper (or the op when the test calls it directly) twice more in this process,
   with new data of the same shapes and dtypes drawn with the recorded seeds ``PROBE_SEEDS``;
   each output must meet the frozen gate against the reference of that data. A kernel that
   memoises by shape, id or call count, or that computed its outputs at import, fails here;
5. run as ``measure/correctness_probe.py`` with ``--beyond-seed N``: when the case is one stage5_check
   probes beyond the P0 inputs (``beyond_probe.plan``), the beyond-P0 probes on the same first call
   (``beyond_probe.after_first``; on pypto-sim no second compile), recorded as ``beyond``, so
   ``check_correctness.py`` judges them as P9 would (``verify/early.py``).

``--mode gap`` (run by ``stage5_check`` re-measurement): loads the runner and ``--paired-runner``
(the baseline version), discovers each arm's wrapper with one untimed call, then times the wrapper
and the op (nested) for ``--calls`` interleaved calls per arm: work moved from the op into the
wrapper shows up as a wrapper/op gap the baseline did not have.

usage:
  python -m perftune.measure.probe_runner --op-dir DIR --runner FILE --manifest FILE --case-id ID
      --op-name NAME --output FILE [--mode correctness|gap] [--paired-runner FILE] [--calls N]
      [--beyond-seed N (correctness_probe only)]
"""

from __future__ import annotations

import contextlib
import gc
import io
import importlib.util
import math
import sys
import time
from pathlib import Path
from typing import Any

from .. import fsio
from ..argv import parser_from_doc
from ..contract import precision
from ..contract.manifest import load_manifest
from ..errors import ContractError, PerftuneError, run_cli
from . import attestation, fresh_data, reference_call
from .backends.case_adapter import case_function, known_case, load_runner_module, seed_all

PROBE_SEEDS = (4243, 4244)
_CLOCK_NS = time.perf_counter_ns  # bound before the operator's module is imported (gap mode times with it)
_MIN_NAMES = ("min_matched", "min_matched_ratio", "matched_min", "min_match_ratio", "min_matched_fraction")
_NUMPY_DEFAULTS = {"isclose": (1e-05, 1e-08), "allclose": (1e-05, 1e-08), "assert_allclose": (1e-07, 0.0)}


def _snapshot(value):
    """An owned copy of a tensor as it is now (numpy or torch); anything else as it is."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return numpy.array(value, copy=True)
    if hasattr(value, "detach") and hasattr(value, "clone"):
        return value.detach().clone()
    return value


class CallTrace:
    """Python functions the op called that live in the frozen oracle's files: the frozen reference
    and the golden module (``sys.setprofile``; the probe's call is untimed). Calling the frozen oracle
    from the timed path is the one structural rule (docs/stage5-check.md): a library function named
    like the operation (``pypto.matmul`` under ``matmul_kernel``, ``np.cumsum`` in a cumsum kernel,
    ``scipy.special.softmax``) is an implementation, never a finding by its name; whether the work is
    the kernel's is judged by behaviour (fresh data, sampled values, the simulated launch, the capture)."""

    def __init__(self, forbidden: dict[str, str]) -> None:
        self.forbidden, self.hits = forbidden, set()

    def hook(self, frame, event, arg):
        if event == "call":
            where = self.forbidden.get(frame.f_code.co_filename)
            if where:
                self.hits.add(f"{where}:{frame.f_code.co_name}")

    def run(self, target, args, kwargs):
        previous = sys.getprofile()
        sys.setprofile(self.hook)
        try:
            return target(*args, **kwargs)
        finally:
            sys.setprofile(previous)


class OpRecorder:
    """Stands in for the op: attests each call, keeps the last call's objects and the caller's args,
    and a copy of the output as it was when the call returned (work finished later is not credited)."""

    def __init__(self, target, trace: CallTrace | None = None) -> None:
        self.target, self.calls, self.trace = target, [], trace

    def __call__(self, *args, **kwargs):
        frame = sys._getframe(1)
        code = frame.f_code
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        caller_args = [frame.f_locals[p] for p in params if p in frame.f_locals]
        pre = attestation.before(args, kwargs)
        result = self.trace.run(self.target, args, kwargs) if self.trace else self.target(*args, **kwargs)
        post = attestation.before(args, kwargs)
        record = attestation.split(pre, post, result, code.co_name)
        if result is not None and record["outputs"]:
            record["outputs"][-1].update(attestation.ownership(result, args, kwargs,
                                                               [i["arg"] for i in record["inputs"]]))
        written = [i for i in range(len(args)) if pre[i].get("sha256") != post[i].get("sha256")]
        at_return = _snapshot(args[written[0]] if written else result)
        self.calls.append({"record": record, "args": args, "result": result, "written": written,
                           "caller_args": caller_args, "at_return": at_return})
        return result


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _literal_minimums(filename: str) -> dict[int, list[float]]:
    """Per function (first line): numbers compared as ``<name containing matched> >= <number>``."""
    import ast
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    out: dict[int, list[float]] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        first = min([function.lineno] + [d.lineno for d in function.decorator_list])
        for node in ast.walk(function):
            if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.GtE, ast.Gt))
                    and isinstance(node.left, ast.Name) and "matched" in node.left.id.lower()
                    and isinstance(node.comparators[0], ast.Constant) and _is_number(node.comparators[0].value)):
                out.setdefault(first, []).append(float(node.comparators[0].value))
    return out


class GateTracer:
    """Collects the thresholds the test file's functions applied (locals and globals they read)."""

    def __init__(self, filename: str) -> None:
        self.filename, self.seen = filename, {"atol": set(), "rtol": set(), "min_matched": set()}
        self.literal = _literal_minimums(filename)

    def _code_literals(self, code) -> None:
        for value in self.literal.get(code.co_firstlineno, ()):  # ``matched >= 0.999`` written inline
            self.seen["min_matched"].add(value)

    def _global(self, frame, event, _arg):
        if frame.f_code.co_filename != self.filename:
            return None
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, _arg):
        if event == "return":
            self._code_literals(frame.f_code)
            names = {**{n: frame.f_globals.get(n) for n in frame.f_code.co_names}, **frame.f_locals}
            for name, value in names.items():
                key = name.lower()
                if key in ("atol", "rtol") and _is_number(value):
                    self.seen[key].add(float(value))
                elif key in _MIN_NAMES and _is_number(value):
                    self.seen["min_matched"].add(float(value))
        return self._local

    def numpy_hooks(self):
        import numpy
        originals = [(numpy, "isclose"), (numpy, "allclose"), (numpy.testing, "assert_allclose")]
        saved = [(owner, name, getattr(owner, name)) for owner, name in originals]

        def wrap(name, function):
            def hooked(*args, **kwargs):
                rtol, atol = _NUMPY_DEFAULTS[name]
                rest = list(args[2:])
                rtol, atol = kwargs.get("rtol", rest[0] if rest else rtol), kwargs.get("atol", rest[1] if len(rest) > 1 else atol)
                self.seen["rtol"].add(float(rtol))
                self.seen["atol"].add(float(atol))
                return function(*args, **kwargs)
            return hooked

        for owner, name, function in saved:
            setattr(owner, name, wrap(name, function))
        return saved

    def run(self, function) -> BaseException | None:
        saved = self.numpy_hooks()
        sys.settrace(self._global)
        try:
            function()
        except BaseException as exc:  # the test's own failure is a result here, not a crash
            return exc
        finally:
            sys.settrace(None)
            for owner, name, original in saved:
                setattr(owner, name, original)
        return None

    def applied(self) -> dict[str, list[float]]:
        return {k: sorted(v) for k, v in self.seen.items()}


def gate_dtype(first: dict[str, Any], manifest: Any, case_id: str) -> str:
    """The dtype whose frozen gate judges a call: its first output's (a float16 matmul's float32
    result is judged by the float32 gate), else the case's."""
    return (first["record"]["outputs"] or [{}])[0].get("dtype") or manifest.case(case_id).dtype


def _reference(op_dir: Path, gate: dict[str, Any] | None):
    ref = (gate or {}).get("reference")
    if not ref:
        return None
    path = fsio.safe_join(op_dir, ref["path"], field="precision_gate.reference")
    spec = importlib.util.spec_from_file_location(f"{path.stem}__probe_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, ref["function"], None)


def _fresh(value, seed: int):
    """Same shape, dtype and type as ``value``, new data (``measure/fresh_data.py``)."""
    return fresh_data.fresh_like(value, seed)


def _output(call: dict[str, Any]):
    """The op's output as it was when the call returned."""
    return call["at_return"]


def _host(value):
    """A torch tensor as a host numpy array for the numpy reference and the gate (bfloat16, which
    numpy lacks, widened exactly to float32); anything else unchanged."""
    if hasattr(value, "detach") and hasattr(value, "cpu") and not isinstance(value, type):
        tensor = value.detach().cpu()
        return (tensor.float() if str(tensor.dtype) == "torch.bfloat16" else tensor).numpy()
    return value


def _figures(actual, reference, call: tuple, received: list, gate) -> dict[str, Any]:
    """``actual`` against the reference called like the golden factory's case (``reference_call``),
    its tensors taken from ``received`` (what the op or wrapper was given)."""
    fargs, fkwargs, where = call
    actual, received = _host(actual), [_host(a) for a in received]
    ref_args, ref_kwargs = reference_call.arguments(fargs, fkwargs, where, received)
    try:
        expected = reference(*ref_args, **ref_kwargs)
    except Exception as exc:  # the reference cannot take these inputs: work moved into them
        return {"error": f"reference({len(ref_args)} args) raised {type(exc).__name__}: {exc}"}
    figures = precision.matched(actual, expected, gate)
    meets = precision.meets(figures, gate)
    bad = sorted(k for k, v in figures.items() if isinstance(v, float) and not math.isfinite(v))
    figures = {k: (None if k in bad else v) for k, v in figures.items()}   # JSON has no inf/NaN: missing, noted
    return {**figures, **({"non_finite": bad} if bad else {}), "meets_frozen_gate": meets}


def _empty_like(value):
    import numpy
    if isinstance(value, numpy.ndarray) or attestation._host_array(value) is None:
        return numpy.empty_like(value)
    import torch
    return torch.empty_like(value)


def _forbidden_files(op_dir: Path, gate: dict[str, Any] | None) -> dict[str, str]:
    """Files the op may not call into: the frozen reference and the golden module."""
    from ..contract import golden_source
    out = {}
    ref = (gate or {}).get("reference")
    if ref:
        out[str(fsio.safe_join(op_dir, ref["path"], field="precision_gate.reference").resolve())] = "reference"
    try:
        out[str(golden_source.resolve(op_dir).path.resolve())] = "golden"
    except PerftuneError:
        pass
    return out


def _probe_calls(module, recorder: OpRecorder, first: dict[str, Any], reference, call: tuple, gate) -> list[dict]:
    import numpy
    wrapper = getattr(module, first["record"]["caller"], None)
    direct = not callable(wrapper) or first["record"]["caller"].startswith("test_")
    out = []
    for seed in PROBE_SEEDS:
        recorder.calls.clear()
        if direct:
            args = [_empty_like(a) if i in first["written"] else _fresh(a, seed) for i, a in enumerate(first["args"])]
            recorder(*args)
            actual = recorder.calls[-1]["at_return"]
            received = [a for i, a in enumerate(args) if i not in first["written"]]
        else:
            received = [_fresh(a, seed) for a in first["caller_args"]]
            actual = wrapper(*received)
        entry = {"seed": seed, "called": "op" if direct else first["record"]["caller"], "op_calls": len(recorder.calls)}
        out.append({**entry, **_figures(actual, reference, call, received, gate)})
    return out


def correctness(module, function, op_dir: Path, manifest, case_id: str, op_name: str, runner: Path,
                factory: tuple | str, after=None) -> dict:
    """``factory``: the golden factory's ``(args, kwargs, source)`` of the case, or why there is none;
    ``after(module, first call, op)``: step 5 (its result is ``beyond``), None: not run."""
    target = getattr(module, op_name, None)
    if not callable(target):
        raise ContractError(runner, "--op-name", f"{op_name!r} is not a function of the runner", "freeze the exact name")
    gate_frozen = manifest.raw.get("precision_gate")
    trace = CallTrace(_forbidden_files(op_dir, gate_frozen))
    recorder, tracer = OpRecorder(target, trace), GateTracer(str(runner))
    setattr(module, op_name, recorder)
    try:
        seed_all()
        error = tracer.run(function)
        out: dict[str, Any] = {"test_error": None if error is None else f"{type(error).__name__}: {error}",
                               "applied_gate": tracer.applied(), "op_calls": len(recorder.calls)}
        if len(recorder.calls) != 1:
            return {**out, "problem": f"the test called {op_name} {len(recorder.calls)} times (need exactly 1)"}
        first = recorder.calls[0]
        recorder.trace = None  # the probes below are not traced
        out["attestation"] = first["record"]
        out["op_called"] = sorted(trace.hits)
        now = attestation.describe(first["args"][first["written"][0]] if first["written"] else first["result"], "-")
        at_return = (first["record"]["outputs"] or [{}])[0 if first["written"] else -1]
        out["output_changed_after_return"] = now.get("sha256") != at_return.get("sha256")
        dtype = gate_dtype(first, manifest, case_id)
        gate, reference = precision.gate_for(gate_frozen, dtype), _reference(op_dir, gate_frozen)
        out.update(frozen_gate=gate, gate_dtype=dtype)
        if gate is None or reference is None:
            return {**out, "problem": "no frozen precision gate or reference for this dtype"}
        if isinstance(factory, str):
            return {**out, "problem": f"the reference call cannot be built: {factory}"}
        direct = first["record"]["caller"].startswith("test_") or not callable(getattr(module, first["record"]["caller"], None))
        received = ([a for i, a in enumerate(first["args"]) if i not in first["written"]] if direct
                    else list(first["caller_args"]))
        fargs, fkwargs, source = factory
        try:
            call = (fargs, fkwargs, reference_call.plan(fargs, fkwargs, received))
        except ValueError as exc:
            return {**out, "problem": f"the reference call cannot be built: {exc}"}
        ref_args, ref_kwargs = reference_call.arguments(*call, received)
        out["reference_call"] = {"factory": source, "arguments": reference_call.describe(ref_args, ref_kwargs)}
        out["measured"] = _figures(_output(first), reference, call, received, gate)
        out["probes"] = _probe_calls(module, recorder, first, reference, call, gate)
        if after is not None:
            out["beyond"] = after(module, first, target)
        return out
    finally:
        setattr(module, op_name, target)


class Timer:
    def __init__(self, target) -> None:
        self.target, self.ns, self.caller = target, [], None

    def __call__(self, *args, **kwargs):
        self.caller = sys._getframe(1).f_code.co_name
        start = _CLOCK_NS()
        result = self.target(*args, **kwargs)
        self.ns.append(_CLOCK_NS() - start)
        return result


def gap(arms: dict[str, tuple[Any, Any]], op_name: str, calls: int) -> dict[str, Any]:
    """Time wrapper and op per arm, ``calls`` interleaved calls each (one untimed discovery call)."""
    timers = {}
    for arm, (module, function) in arms.items():
        op = Timer(getattr(module, op_name))
        setattr(module, op_name, op)
        seed_all()
        function()
        name = op.caller if op.caller and not op.caller.startswith("test_") else None
        wrap = Timer(getattr(module, name)) if name and callable(getattr(module, name, None)) else None
        if wrap:
            setattr(module, name, wrap)
        op.ns.clear()
        timers[arm] = (op, wrap, name if wrap else None)
    gc.collect()
    for index in range(calls):
        for arm in (("baseline", "candidate") if index % 2 == 0 else ("candidate", "baseline")):
            seed_all()
            gc.disable()
            try:
                arms[arm][1]()
            finally:
                gc.enable()
    return {"arms": {arm: {"wrapper": name, "op_us": [n / 1000 for n in op.ns],
                           "wrapper_us": [n / 1000 for n in wrap.ns] if wrap else None}
                     for arm, (op, wrap, name) in timers.items()}}


def main(argv=None, beyond=None) -> int:
    """``beyond(op_dir, manifest, case_id, op_name, seed)``: step 5's ``after`` or None (``correctness_probe``)."""
    parser = parser_from_doc(__doc__, "probe_runner")
    for flag in ("--op-dir", "--runner", "--manifest", "--case-id", "--op-name", "--output"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--mode", choices=("correctness", "gap"), default="correctness")
    parser.add_argument("--paired-runner")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--beyond-seed", type=int)
    args = parser.parse_args(argv)
    manifest = load_manifest(args.manifest, check_schema=False)
    known_case(manifest, args.case_id, args.manifest)
    op_dir, runner = Path(args.op_dir).resolve(), Path(args.runner).resolve()
    factory: tuple | str = "not needed"
    if args.mode == "correctness":  # built before the test module runs (it cannot patch the factory)
        try:
            factory = reference_call.factory_case(op_dir, manifest, args.case_id)
        except PerftuneError as exc:
            factory = exc.line()
    after = beyond(op_dir, manifest, args.case_id, args.op_name, args.beyond_seed) \
        if beyond is not None and args.mode == "correctness" and args.beyond_seed is not None else None
    module = load_runner_module(runner, op_dir)
    function = case_function(module, manifest, args.case_id, args.manifest)
    if args.mode == "correctness":
        result = correctness(module, function, op_dir, manifest, args.case_id, args.op_name, runner, factory, after)
    else:
        base_runner = Path(args.paired_runner).resolve()
        base = load_runner_module(base_runner, op_dir, name=f"{base_runner.stem}__gap_baseline")
        arms = {"baseline": (base, case_function(base, manifest, args.case_id, args.manifest)),
                "candidate": (module, function)}
        with contextlib.redirect_stdout(io.StringIO()):  # the tests' prints are not evidence here
            result = gap(arms, args.op_name, args.calls)
    fsio.write_json(args.output, {"case_id": args.case_id, "mode": args.mode, **result})
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
