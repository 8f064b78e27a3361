"""The kernel Stage 4 delivers in the corpus's small softmax (cheat_pipeline.small_softmax plants it
before Stage 4's check), and the experiment that restores it after a sabotaged baseline.

examples/softmax's float64 kernel with its passes run four times: a deliberately slow baseline, so
every planted candidate wins by several times under any load and the frozen rule's decision, not
the machine's noise, decides whether the cheat is delivered (README.md).
Replaces softmax_kernel and softmax_wrapper of test_softmax.py (tests/cheats/README.md).
"""

def softmax_kernel(x, out):
    """Baseline kernel: float64 accumulation, separate max / exp / sum / divide passes (four times)."""
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
