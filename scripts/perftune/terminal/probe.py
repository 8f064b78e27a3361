"""Measurements behind cpu terminal evidence: platform peaks and a kernel's fixed per-call overhead.

Platform probe (:func:`probe_platform`, in-process, ~1 s): the *practical numpy roof* of this
machine, single thread, float32 — not the silicon peak, because a numpy kernel cannot beat it:
- memory: the faster of ``numpy.copyto`` of a 64 MiB float64 array (≫ L2 and L3, DRAM) and of a
  512 KiB one (cache resident), bytes = read + write, best of 7: the roof must bound a case whose
  inputs stay in cache between calls (a repeated test call finds them there);
- arithmetic: the faster of multiply-add (``multiply`` then ``add``, 2 op/element, in place) on
  64 Ki float32 (256 KiB, L2-resident), best of 7 loops of 200 iterations, and a float32
  ``matmul`` of two 256x256 matrices into a preallocated output (2·256³ op), best of 61 loops of 3:
  the roof is the fastest arithmetic numpy reaches, so a BLAS-backed kernel stays under it;
- transcendental: in-place ``exp`` on the same in-cache float32 array, best of 7 loops of 100.

Fixed overhead (``python -m perftune.terminal.probe`` in the op dir, one process for all cases):
imports the op's test module like the cpu runner, replaces the frozen op with a shim, runs the
case's test once (so the real arguments reach the op), then times the *same* kernel on a cut of
its arguments that keeps the loop structure of the real call: the leading dim (axis 0 of the
first array argument: rows, ``m``) stays whole and every work axis the frozen work model names
(``T[i]`` / ``shape[i]`` dims, tensors whose elements are a product of dims) becomes 1; an axis the
model does not name stays only when it is axis 0 with the leading size (an output buffer), never an
axis because its size equals another (softmax ``x[64, 4096]`` → ``x[64, 1]``; linear
``x[m, k] @ w[k, n]`` → ``x[m, 1] @ w[1, 1]``, also when n = m). What remains is the fixed cost
per call *and per row* (interpreter, Python loops over rows, ufunc dispatch, allocation), which a
one-element cut would hide. Median of 101 calls, in µs.

usage:
  python -m perftune.terminal.probe --op-dir DIR --runner FILE --manifest FILE --op-name NAME
      --case-id ID [--case-id ID ...] --output FILE
"""

from __future__ import annotations

import gc
import inspect
import platform as host
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import fsio
from ..argv import parser_from_doc
from ..measure.backends.case_adapter import case_function, known_case, load_runner_module, seed_all
from ..errors import CheckFailed, ContractError, run_cli
from ..contract.manifest import load_manifest

TINY_CALLS = 101
COPY_BYTES = 64 * 1024 * 1024
CACHE_COPY_BYTES = 512 * 1024
CACHE_ELEMENTS = 64 * 1024
MATMUL_N = 256
MATMUL_ROUNDS = 61  # ~0.3 ms per product: many short rounds find a quiet window on a shared host


def _best_seconds(step, loops: int, rounds: int = 7) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            step()
        best = min(best, time.perf_counter() - start)
    return best / loops


def probe_platform(now: str) -> dict[str, Any]:
    """Measure this machine's practical numpy peaks; a platform dict (schemas/platform)."""
    src = np.ones(COPY_BYTES // 8)
    dst = np.empty_like(src)
    copy_s = _best_seconds(lambda: np.copyto(dst, src), 1)
    small, small_dst = np.ones(CACHE_COPY_BYTES // 8), np.empty(CACHE_COPY_BYTES // 8)
    cache_s = _best_seconds(lambda: np.copyto(small_dst, small), 20)
    dram_rate, cache_rate = 2 * COPY_BYTES / copy_s, 2 * CACHE_COPY_BYTES / cache_s
    copy_how = (f"numpy.copyto of {CACHE_COPY_BYTES >> 10} KiB in cache (DRAM {COPY_BYTES >> 20} MiB: {dram_rate:.3g} B/s)"
                if cache_rate > dram_rate else f"numpy.copyto of {COPY_BYTES >> 20} MiB")
    a = np.full(CACHE_ELEMENTS, 1.0001, np.float32)
    b = np.full(CACHE_ELEMENTS, 1e-7, np.float32)
    t = np.ones(CACHE_ELEMENTS, np.float32)

    def fma():
        np.multiply(t, a, out=t)
        np.add(t, b, out=t)

    fma_s = _best_seconds(fma, 200)
    m = np.ones((MATMUL_N, MATMUL_N), np.float32)
    product = np.empty_like(m)
    matmul_s = _best_seconds(lambda: np.matmul(m, m, out=product), 3, rounds=MATMUL_ROUNDS)
    fma_rate, matmul_rate = 2 * CACHE_ELEMENTS / fma_s, 2 * MATMUL_N ** 3 / matmul_s
    arith_how = (f"float32 matmul {MATMUL_N}x{MATMUL_N} (faster than multiply+add at {fma_rate:.3g} op/s)"
                 if matmul_rate > fma_rate else f"float32 multiply+add on {CACHE_ELEMENTS} in-cache elements "
                 f"(faster than matmul at {matmul_rate:.3g} op/s)")
    e = np.full(CACHE_ELEMENTS, -1.0, np.float32)
    exp_s = _best_seconds(lambda: np.exp(e, out=t), 100)
    source = f"terminal_evidence.py probe on this host at {now}"
    peaks = {
        "memory_bytes_per_s": {"value": round(max(dram_rate, cache_rate)), "unit": "B/s", "status": "measured",
                               "source": f"{source}: {copy_how}, read+write"},
        "arithmetic_ops_per_s": {"value": round(max(fma_rate, matmul_rate)), "unit": "op/s", "status": "measured",
                                 "source": f"{source}: {arith_how}"},
        "transcendental_ops_per_s": {"value": round(CACHE_ELEMENTS / exp_s), "unit": "op/s", "status": "measured",
                                     "source": f"{source}: float32 exp on {CACHE_ELEMENTS} in-cache elements"},
    }
    probe = {"measured_at": now, "machine": host.machine(), "processor": host.processor() or "-",
             "python": host.python_version(), "numpy": np.__version__, "threads": 1,
             "copy_bytes": COPY_BYTES, "cache_copy_bytes": CACHE_COPY_BYTES, "cache_elements": CACHE_ELEMENTS, "matmul_n": MATMUL_N, "best_of": 7}
    return {"schema_version": 1, "platform_id": "cpu-probe", "name": f"cpu ({host.machine()}) numpy roof",
            "backend": "cpu", "peaks": peaks, "probe": probe,
            "notes": "practical single-thread numpy roof of the measuring host; re-probe on another host"}


def axis_dims(work_model: dict | None, names: list[str]) -> dict[tuple[str, int], str]:
    """(argument name, axis) -> work-model dim: ``T[i]`` dims, ``shape[i]`` dims (the first array
    argument) and tensors whose ``elements`` is a product of dims (one per axis, in order)."""
    model = work_model or {}
    dims = {d["dim"]: str(d["value"]).replace(" ", "") for d in model.get("dims", [])}
    out: dict[tuple[str, int], str] = {}
    for dim, value in dims.items():
        match = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", value)
        if match:
            tensor = names[0] if match.group(1) == "shape" and names else match.group(1)
            out[(tensor, int(match.group(2)))] = dim
    base = {d for d, v in dims.items() if re.fullmatch(r"[A-Za-z_]\w*\[\d+\]", v)}
    for tensor in model.get("tensors", []):
        factors = str(tensor["elements"]).replace(" ", "").split("*")
        if all(f in base for f in factors):
            for axis, dim in enumerate(factors):
                out.setdefault((tensor["tensor"], axis), dim)
    return out


def _arrays(target, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(parameter name, value) of every argument, named by the kernel's signature when it binds."""
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
        return list(bound.arguments.items())
    except (TypeError, ValueError):
        return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def cut_arguments(target, args: tuple, kwargs: dict, work_model: dict | None) -> tuple[dict[str, Any], str | None]:
    """The loop-preserving cut: the leading dim (axis 0 of the first array argument) stays whole and every
    work axis the work model names becomes 1; an axis the model does not name is kept only when it is axis 0
    of size equal to the leading dim (an output buffer), never any other axis because of its size."""
    named = _arrays(target, args, kwargs)
    arrays = [n for n, v in named if isinstance(v, np.ndarray) and v.ndim > 0]
    mapping = axis_dims(work_model, arrays)
    leading = mapping.get((arrays[0], 0)) if arrays else None
    lead_size = dict(named)[arrays[0]].shape[0] if arrays else None
    out = {}
    for name, value in named:
        if not (isinstance(value, np.ndarray) and value.ndim > 0):
            out[name] = value
            continue
        keep = []
        for axis, size in enumerate(value.shape):
            dim = mapping.get((name, axis))
            keep.append(dim == leading if dim is not None and leading is not None
                        else axis == 0 and size == lead_size)
        out[name] = value[tuple(slice(None) if k else slice(0, 1) for k in keep)]
    return out, leading


class CaptureShim:
    """Stands in for the op during one test call: forwards it, remembers the arguments."""

    def __init__(self, target) -> None:
        self.target = target
        self.calls: list[tuple[tuple, dict]] = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.target(*args, **kwargs)


def fixed_overhead_us(target, args: tuple, kwargs: dict, work_model: dict | None = None
                      ) -> tuple[float, list[list[int]]]:
    """Median time (µs) of ``target`` on the loop-preserving cut of its arguments, and the cut shapes."""
    cut, _ = cut_arguments(target, args, kwargs, work_model)
    names = [n for n, _ in _arrays(target, args, kwargs)]
    tiny_args, tiny_kwargs = tuple(cut[n] for n in names[:len(args)]), {k: cut[k] for k in names[len(args):]}
    durations = []
    gc.disable()
    try:
        for _ in range(TINY_CALLS):
            start = time.perf_counter_ns()
            target(*tiny_args, **tiny_kwargs)
            durations.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    shapes = [list(a.shape) for a in (*tiny_args, *tiny_kwargs.values()) if isinstance(a, np.ndarray)]
    return statistics.median(durations) / 1000, shapes


def measure_case(module, function, op_name: str, case_id: str, work_model: dict | None = None) -> dict[str, Any]:
    target = getattr(module, op_name, None)
    if not callable(target):
        raise ContractError(op_name, "protocol.op_name", "is not a function of the runner module",
                            "freeze the exact kernel name")
    shim = CaptureShim(target)
    setattr(module, op_name, shim)
    try:
        function()
    finally:
        setattr(module, op_name, target)
    if len(shim.calls) != 1:
        raise CheckFailed(op_name, case_id, f"the test called the op {len(shim.calls)} times", "launch it once")
    try:
        overhead, shapes = fixed_overhead_us(target, *shim.calls[0], work_model)
    except Exception as exc:  # the kernel does not accept a tiny cut: say so, never guess
        return {"case_id": case_id, "fixed_overhead_us": None, "tiny_shapes": None,
                "problem": f"kernel refused the tiny input: {type(exc).__name__}: {exc}"}
    return {"case_id": case_id, "fixed_overhead_us": overhead, "tiny_shapes": shapes, "calls": TINY_CALLS}


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "terminal_probe")
    for flag in ("--op-dir", "--runner", "--manifest", "--op-name", "--output"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--case-id", action="append", required=True)
    args = parser.parse_args(argv)
    manifest = load_manifest(args.manifest)
    module = load_runner_module(Path(args.runner).resolve(), Path(args.op_dir).resolve())
    rows = []
    for case_id in args.case_id:
        known_case(manifest, case_id, args.manifest)
        seed_all()
        rows.append(measure_case(module, case_function(module, manifest, case_id, args.manifest),
                                 args.op_name, case_id, manifest.raw.get("work_model")))
    fsio.write_json(args.output, {"cases": rows})
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
