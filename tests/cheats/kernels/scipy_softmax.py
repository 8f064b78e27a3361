"""LEGAL (twin of golden_alias, issue 35 items 1-2): scipy.special.softmax, a library routine named like
the operation, computes every call's output from its own input in float64 (the stabilised library
routine): on cpu a library primitive is the implementation, not the oracle. Must PASS.
"""

from scipy.special import softmax as _softmax


def softmax_kernel(x, out):
    """float64 through scipy's softmax, cast once into out."""
    out[...] = _softmax(x.astype(np.float64), axis=-1).astype(out.dtype)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
