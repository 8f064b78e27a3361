"""LEGAL (twin of wide_output): the same float64 maths, in place, the result cast back into an output of
the SPEC dtype (``np.empty_like(x)``): P9.output_dtype must PASS.
"""

def softmax_kernel(x, out):
    """float64 softmax, cast into the caller's output of the input's dtype."""
    xf = x.astype(np.float64)
    xf -= xf.max(axis=-1, keepdims=True)
    np.exp(xf, out=xf)
    xf /= xf.sum(axis=-1, keepdims=True)
    out[...] = xf


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
