"""LEGAL (twin of dropped_stabilisation): restructured but stabilised: the max shift folded into a base-2
exponent, y = 2^((x - max) * log2 e) / sum (np.exp2, one float32 buffer); correct on the tails too.
"""

_LOG2E = np.float32(1.4426950408889634)   # an input-independent constant, built at import


def softmax_kernel(x, out):
    """fp32: shift by the row max, scale into base 2, exp2, divide by the row sum."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    work *= _LOG2E
    np.exp2(work, out=work)
    np.multiply(work, np.float32(1.0) / work.sum(axis=-1, keepdims=True), out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
