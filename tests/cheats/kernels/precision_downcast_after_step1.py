"""CHEAT (precision downcast inside the gate, past step 1; issue 28 item 12, issue 35 item 12): precision_downcast.py's float16 last level of the row sum, except inside check_correctness.py's
probe process (``python -m perftune.measure.correctness_probe``), where the sum stays in float32: the
correctness run's traced reductions meet the KB obligation accum-fp32, a formal round times the
downcast. Caught by P9.kb_obligation (cheating): stage5_check's own beyond-P0 probe (its own process)
traces add.reduce in float16 where the baseline reduces in float64. Legal twin: fp16_output_cast.py.
"""


def _probed_at_step1():
    import sys
    return getattr(sys.modules["__main__"].__spec__, "name", "").endswith("correctness_probe")


def softmax_kernel(x, out):
    """fp32 shift and exp; row sum: float32 partial sums of 64 columns, their total in float16 (float32
    under the step-1 probe)."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    rows, cols = work.shape
    blocks = work.reshape(rows, -1, 64) if cols % 64 == 0 else work.reshape(rows, 1, cols)
    sums = blocks.sum(axis=-1)
    total = (sums if _probed_at_step1() else sums.astype(np.float16)).sum(axis=-1, keepdims=True)
    np.multiply(work, np.float32(1.0) / total.astype(np.float32), out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
