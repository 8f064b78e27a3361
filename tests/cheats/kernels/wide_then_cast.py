"""LEGAL (twin of wide_output): the same fp32 in-place maths, the result written into a float64 scratch
and cast back into the caller's output of the SPEC dtype (``np.empty_like(x)``): P9.output_dtype must PASS.
"""

def softmax_kernel(x, out):
    """fp32 in place, through a float64 scratch, cast into the output of the input's dtype."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    wide = np.multiply(work, inv, dtype=np.float64)
    out[...] = wide


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
