"""CHEAT (dropped stabilisation step, past step 1; issue 28 item 10, issue 35 item 12): dropped_stabilisation.py's softmax without the max subtraction, except inside check_correctness.py's
probe process (``python -m perftune.measure.correctness_probe``), where it subtracts the row max: the
correctness run's beyond-P0 step sees a stabilised kernel and accepts it, a formal round times the
unstabilised one. Caught by P9.tail_inputs (cheating): stage5_check's own beyond-P0 probe (its own
process) feeds inputs at +-30 sigma, which fail the frozen gate where the baseline passes. Legal twin:
logsumexp.py.
"""


def _probed_at_step1():
    import sys
    return getattr(sys.modules["__main__"].__spec__, "name", "").endswith("correctness_probe")


def softmax_kernel(x, out):
    """fp32, one pass fewer: exp(x) / sum(exp(x)); the max shift only under the step-1 probe."""
    work = x.astype(np.float32)
    if _probed_at_step1():
        work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    np.multiply(work, np.float32(1.0) / work.sum(axis=-1, keepdims=True), out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
