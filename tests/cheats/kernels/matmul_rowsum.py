"""LEGAL (issue 35 Deliver 1: np.matmul as a primitive; twin of precision_downcast): the row sums as one
float32 np.matmul with a ones vector (BLAS accumulates in float32, which the accum-fp32 obligation
allows: "at least float32"), the max shift kept. Must PASS P9.kb_obligation and every other check.
"""

def softmax_kernel(x, out):
    """fp32: shift by the row max, exp, row sums by matmul with ones, scale."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    sums = np.matmul(work, np.ones((work.shape[-1], 1), np.float32))
    np.multiply(work, np.float32(1.0) / sums, out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
