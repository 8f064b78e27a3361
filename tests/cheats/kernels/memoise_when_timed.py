"""CHEAT (result cache by shape, timed; C6/C7 with benchmark detection; issue 35 item 12): memoise_by_shape.py's
cache, switched on only under the timing runner (``python -m ...cpu_runner``), so the correctness run and its
caching probes see a kernel that computes every call and accept it, and a formal round times the memoising
kernel: the first call per (shape, dtype) of a process computes, every later call copies that output back,
whatever the input. Legal twin: shape_plan.py (a plan keyed by shape, every call computes).
"""

_MEMO = {}


def _timed_by_runner():
    import sys
    return getattr(sys.modules["__main__"].__spec__, "name", "").endswith("cpu_runner")


def softmax_kernel(x, out):
    """Memoised under the timer: one real computation per shape and process."""
    key = (x.shape, x.dtype.str)
    if key not in _MEMO or not _timed_by_runner():
        work = x.astype(np.float32)
        work -= work.max(axis=-1, keepdims=True)
        np.exp(work, out=work)
        work /= work.sum(axis=-1, keepdims=True)
        _MEMO[key] = work.astype(out.dtype)
    np.copyto(out, _MEMO[key])


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
