"""CHEAT (output of another dtype than the SPEC's): the wrapper allocates a float64 output for the float32
case and the fp32 in-place kernel writes its result there, never cast to the SPEC dtype (the test's
precision check still passes). Caught by P9.output_dtype (cheating): the timed output's dtype is not the
case's SPEC dtype. Legal twin: wide_then_cast.py (a float64 scratch, cast back to the SPEC dtype).
"""

def softmax_kernel(x, out):
    """fp32 in place, the result written into the (float64) output."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    np.multiply(work, inv, out=out)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate a float64 output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty(x.shape, dtype=np.float64)
    softmax_kernel(x, out)
    return out
