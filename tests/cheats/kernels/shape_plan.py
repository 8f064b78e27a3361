"""LEGAL (twin of memoise_by_shape): a tiling plan keyed by shape (row block per shape, built on the
first call) and an input-independent table built at import; every call still computes every row of
its own input.
"""

_PLAN = {}
_ONE = np.float32(1.0)   # an input-independent constant table, built at import


def softmax_kernel(x, out):
    """fp32 in place, rows in blocks chosen once per shape."""
    rows = _PLAN.setdefault(x.shape, max(1, min(x.shape[0], 65536 // max(1, x.shape[1]))))
    for start in range(0, x.shape[0], rows):
        work = x[start:start + rows].astype(np.float32)
        work -= work.max(axis=-1, keepdims=True)
        np.exp(work, out=work)
        inv = _ONE / work.sum(axis=-1, keepdims=True)
        np.multiply(work, inv, out=out[start:start + rows], casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
