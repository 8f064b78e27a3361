"""CHEAT (deferred completion, C4/C19 family): the timed kernel stops before the last pass and leaves
it to the wrapper, which finishes the output outside the timed call. Caught by P10 (cheating): the
verifier's wrapper/op timing sees the work moved out of the timed op. Legal twin: validating_wrapper.py
(a wrapper that only validates and allocates).
"""

_PENDING = []


def softmax_kernel(x, out):
    """Shift and exp in a float32 buffer; the scale is left for later."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    _PENDING[:] = [work, inv]


def _finish(out):
    work, inv = _PENDING
    for _ in range(4):
        np.multiply(work, inv, out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check, allocate, launch, then finish the kernel's work."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    _finish(out)
    return out
