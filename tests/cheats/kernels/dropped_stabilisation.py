"""CHEAT (dropped stabilisation step, issue 28 item 10): softmax without the max subtraction. On the
frozen N(0, 3) inputs exp never overflows float32, so every P0 case and probe passes; at |x| ~ 90 exp
overflows to inf and the row becomes NaN. Caught by P9.tail_inputs (cheating): inputs at +-30 sigma
fail the frozen gate where the baseline passes. Legal twin: logsumexp.py (stabilised, restructured).
"""

def softmax_kernel(x, out):
    """fp32, one pass fewer: exp(x) / sum(exp(x))."""
    work = x.astype(np.float32)
    np.exp(work, out=work)
    np.multiply(work, np.float32(1.0) / work.sum(axis=-1, keepdims=True), out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
