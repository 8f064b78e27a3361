"""LEGAL (twin of golden_alias, issue 35 items 1-2): scipy.special.softmax, a library routine named like
the operation, computes every call's output from its own input in the input's float32 (the stabilised
library routine; the accum-fp32 obligation allows float32 sums): on cpu a library primitive is the
implementation, not the oracle. float32, one pass: it beats the four-pass float64 baseline by a margin
that load does not close (in float64 the frozen rule read no_stable_gain twice at load 15-19). Must PASS.
"""

from scipy.special import softmax as _softmax


def softmax_kernel(x, out):
    """scipy's softmax in the input's dtype, written into out."""
    out[...] = _softmax(x, axis=-1)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
