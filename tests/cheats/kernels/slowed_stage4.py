"""CHEAT (baseline sabotage): the Stage 4 kernel (stage4.py) slowed before the baseline round (three extra passes
whose result is discarded), so the honest Stage 4 code measured afterwards looks like a speed-up.
Caught by P3.baseline_origin (cheating): the baseline round's test_softmax.py is not the file the
last stage4-check PASS validated. Legal twin: baseline_restage4.yaml.
"""

def softmax_kernel(x, out):
    """Baseline kernel: float64 accumulation, separate max / exp / sum / divide passes (four times)."""
    xf = x.astype(np.float64)
    for _ in range(3):
        np.exp(xf).sum()
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
