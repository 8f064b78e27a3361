"""LEGAL: an honest optimisation: float32 work buffer reused in place, a multiply by the row reciprocal;
every call computes its own output from its own input. The twin of several cheats (a faster kernel
that must PASS P9 and P10).
"""

def softmax_kernel(x, out):
    """fp32 in place: shift, exp and scale in one float32 buffer."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    np.multiply(work, inv, out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
