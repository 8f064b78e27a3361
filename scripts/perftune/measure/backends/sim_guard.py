"""What a timed op call did on the host besides the simulated launch (pypto-sim; issue 28 item 7).

Active only in a process the pypto-sim runner started (``pypto_sim_runner`` calls :func:`activate`,
and its children inherit :data:`ACTIVE_ENV`, read once at import), before the operator's code is imported. The
cpu runner wraps its one op call in :func:`watch`; on cpu and msprof it is a no-op. During the call:

- every torch function and ``Tensor`` method the op calls OUTSIDE a jit launch is counted
  (``torch.overrides.TorchFunctionMode``, the mechanism of cann-bench's torch-function guard);
  calls pypto makes inside ``JitCallableWrapper.__call__`` (the launch: tracing, registering the
  tensors, pass-verify's calculator) are not;
- each launch's tensor arguments are digested before and after it: the ones it changed are the
  launch's outputs (pass-verify's results).

The record (``attestation.json`` → ``sim``) is ``{"launches": N, "host_torch": {name: count},
"allowed_torch": {name: count}, "launch_outputs": [sha256, ...]}``: ``host_torch`` holds every call
not in :data:`ALLOWED`, the narrow list of what a wrapper needs (allocate, view or reshape, copy,
read metadata). ``verify/sim_launch.py`` judges it (``P9.host_compute``, ``P9.launch_output``).
A C extension that computes on a tensor's memory without calling torch is not seen here; the
launch's bytes (``P9.launch_work``) and the output check still apply.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

from .. import attestation

ACTIVE_ENV = "PERFTUNE_SIM_GUARD"
ACTIVE = os.environ.get(ACTIVE_ENV) == "1"      # fixed before the operator's import
JIT_MODULE = "pypto.frontend.parser.entry"
# what a wrapper around the launch needs: allocation, views and reshapes, copies, metadata (narrow)
ALLOCATE = ("empty", "empty_like", "zeros", "zeros_like", "empty_strided", "new_empty", "new_zeros")
VIEW = ("view", "reshape", "flatten", "unsqueeze", "squeeze", "transpose", "permute", "t", "contiguous",
        "expand", "__getitem__", "narrow", "detach", "unflatten", "view_as", "reshape_as")
COPY = ("copy_", "clone")
METADATA = ("dim", "size", "numel", "stride", "is_contiguous", "element_size", "shape", "dtype", "device",
            "ndim", "is_floating_point", "requires_grad", "is_cuda", "layout", "storage_offset", "__len__",
            "names", "grad_fn", "is_sparse", "is_quantized", "is_meta", "is_nested", "itemsize", "nbytes",
            "__torch_function__", "_is_view", "is_complex")
ALLOWED = frozenset(ALLOCATE + VIEW + COPY + METADATA)


def activate() -> None:
    """Turn the watch on in this process (``pypto_sim_runner``, before the measured module runs)."""
    global ACTIVE
    ACTIVE = True
    os.environ[ACTIVE_ENV] = "1"


def torch_name(func: Any) -> str:
    """``Tensor.<name>`` for a tensor method or property, ``torch.<name>`` for a function."""
    name = getattr(func, "__name__", None)
    owner = getattr(func, "__objclass__", None)
    if name == "__get__" and hasattr(func, "__self__"):      # a property: Tensor.shape.__get__
        prop = func.__self__
        name, owner = getattr(prop, "__name__", repr(prop)), getattr(prop, "__objclass__", None)
    qual = getattr(func, "__qualname__", "") or ""
    if owner is not None or qual.startswith(("Tensor.", "TensorBase.", "_TensorBase.")):
        return f"Tensor.{name}"
    module = (getattr(func, "__module__", None) or "torch").split(".")[0]
    return f"{module}.{name or repr(func)}"


def allowed(name: str) -> bool:
    return name.split(".", 1)[-1] in ALLOWED


def _digest(tensor: Any) -> str | None:
    """The attestation's digest of a tensor (so a launch output compares with the op's outputs)."""
    try:
        return attestation.describe(tensor, "launch").get("sha256")
    except Exception:  # an exotic tensor: no digest, the check then finds no matching launch output
        return None


class _Watch:
    """One op call's record (the body of :func:`watch`)."""

    def __init__(self) -> None:
        self.depth, self.launches = 0, 0
        self.host: dict[str, int] = {}
        self.allowed: dict[str, int] = {}
        self.outputs: list[str] = []

    def seen(self, func: Any) -> None:
        if self.depth:
            return
        name = torch_name(func)
        bucket = self.allowed if allowed(name) else self.host
        bucket[name] = bucket.get(name, 0) + 1

    def launch(self, call, wrapper, args, kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if hasattr(a, "detach") and hasattr(a, "numel")]
        self.depth += 1
        try:
            before = [_digest(t) for t in tensors]
            result = call(wrapper, *args, **kwargs)
            after = [_digest(t) for t in tensors]
        finally:
            self.depth -= 1
        self.launches += 1
        self.outputs += [d for b, d in zip(before, after) if d is not None and d != b]
        return result

    def record(self) -> dict[str, Any]:
        return {"launches": self.launches, "host_torch": dict(sorted(self.host.items())),
                "allowed_torch": dict(sorted(self.allowed.items())), "launch_outputs": self.outputs}


@contextlib.contextmanager
def watch() -> Iterator[_Watch | None]:
    """Around one op call: the record's builder in a pypto-sim process, else None (nothing traced)."""
    entry = sys.modules.get(JIT_MODULE)
    if not ACTIVE or entry is None or "torch" not in sys.modules:
        yield None
        return
    from torch.overrides import TorchFunctionMode

    state = _Watch()

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            state.seen(func)
            return func(*args, **(kwargs or {}))

    jit = entry.JitCallableWrapper
    original = jit.__call__

    def launch(wrapper, *args, **kwargs):
        if state.depth:
            return original(wrapper, *args, **kwargs)
        return state.launch(original, wrapper, args, kwargs)

    jit.__call__ = launch
    try:
        with Mode():
            yield state
    finally:
        jit.__call__ = original
