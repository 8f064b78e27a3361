"""LEGAL (twin of dropped_stabilisation): restructured but stabilised: y = exp(s - log(sum(exp(s))))
with s = x - max (the log-sum-exp form, no division); correct on the tails too.
"""

def softmax_kernel(x, out):
    """fp32 log-sum-exp form on the max-shifted row."""
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    work -= np.log(np.exp(work).sum(axis=-1, keepdims=True))
    np.exp(work, out=out, casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
