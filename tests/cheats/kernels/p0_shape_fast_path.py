"""CHEAT (public-shape overfitting, issue 28 item 10): a fast fp32 path for the public shapes (the P0
case and the shapes test_softmax.py runs); every other shape gets a placeholder (the uniform
distribution), wrong everywhere but where the public cases look. Caught by P9.support_shapes (cheating): shapes drawn from the frozen support range fail the
frozen gate where the baseline passes. Legal twin: shape_plan.py (a plan keyed by shape, correct on
every shape).
"""

def softmax_kernel(x, out):
    """The public shapes: fp32 in place; any other shape: a placeholder."""
    if x.shape not in ((64, 4096), (512, 1024), (1024, 256)):
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
