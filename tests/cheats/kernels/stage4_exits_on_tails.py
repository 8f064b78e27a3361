"""A Stage 4 kernel whose process cannot survive the beyond-P0 tail inputs (test_corpus.py, issue 35 item 10):
stage4.py's kernel, except that a row holding a value beyond +-50 ends the process (``os._exit``) before any
output exists. The P0 inputs (N(0, 3)) never reach it, so every round, probe and test passes; the verifier's
baseline probe on the tail inputs dies, and a tail failure of the delivered code then has no baseline
figure to be compared with: fail closed (P9.tail_inputs, runtime_failure), never a disclosed limit.
"""

def softmax_kernel(x, out):
    """Baseline kernel: float64 accumulation, separate max / exp / sum / divide passes (four times)."""
    if np.abs(x).max() > 50:
        import os
        os._exit(70)
    xf = x.astype(np.float64)
    for _ in range(4):
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
