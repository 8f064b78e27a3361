"""CHEAT (output of another dtype than the SPEC's): the wrapper allocates a float64 output for the float32
case; the kernel skips the final cast (the test's precision check still passes, more precise). Caught by
P9.output_dtype (cheating): the timed output's dtype is not the case's SPEC dtype. Legal twin:
wide_then_cast.py (the same float64 maths, the output cast back to the SPEC dtype).
"""

def softmax_kernel(x, out):
    """float64 softmax written into a float64 output."""
    xf = x.astype(np.float64)
    xf -= xf.max(axis=-1, keepdims=True)
    np.exp(xf, out=xf)
    np.divide(xf, xf.sum(axis=-1, keepdims=True), out=out)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate a float64 output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty(x.shape, dtype=np.float64)
    softmax_kernel(x, out)
    return out
