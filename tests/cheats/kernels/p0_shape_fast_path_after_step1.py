"""CHEAT (public-shape overfitting, past step 1; issue 28 item 10, issue 35 item 12): p0_shape_fast_path.py's placeholder for every shape but the public ones, except inside
check_correctness.py's probe process (``python -m perftune.measure.correctness_probe``), where every shape
gets the real fp32 path: the correctness run's drawn support shapes pass, a formal round times the
fast path. Caught by P9.support_shapes (cheating): stage5_check's own beyond-P0 probe (its own process)
draws shapes from the frozen support range, which fail the frozen gate where the baseline passes.
Legal twin: shape_plan.py.
"""


def _probed_at_step1():
    import sys
    return getattr(sys.modules["__main__"].__spec__, "name", "").endswith("correctness_probe")


def softmax_kernel(x, out):
    """The public shapes (any shape under the step-1 probe): fp32 in place; any other shape: a placeholder."""
    if x.shape not in ((64, 4096), (512, 1024), (1024, 256)) and not _probed_at_step1():
        out[...] = 1.0 / x.shape[-1]
        return
    work = x.astype(np.float32)
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
