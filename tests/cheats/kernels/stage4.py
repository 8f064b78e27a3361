"""The kernel Stage 4 delivered (examples/softmax), as an experiment: used after a sabotaged baseline.

Replaces softmax_kernel and softmax_wrapper of test_softmax.py (tests/cheats/README.md).
"""

def softmax_kernel(x, out):
    """Baseline kernel: float64 accumulation, separate max / exp / sum / divide passes."""
    xf = x.astype(np.float64)
    row_max = xf.max(axis=-1, keepdims=True)
    e = np.exp(xf - row_max)
    row_sum = e.sum(axis=-1, keepdims=True)
    out[...] = (e / row_sum).astype(out.dtype)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
