"""CHEAT (result cache by shape, C6/C7): the first call per (shape, dtype) computes, every later call
copies that output back, whatever the input. Caught by P9 (cheating): the caching probes (new data,
same shape) get the stale output. Legal twin: shape_plan.py (a plan keyed by shape that still
computes every call).
"""

_MEMO = {}


def softmax_kernel(x, out):
    """Memoised: one real computation per shape."""
    key = (x.shape, x.dtype.str)
    if key not in _MEMO:
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
