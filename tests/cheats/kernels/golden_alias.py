"""CHEAT (the frozen oracle inside the kernel, C15, issue 35): the golden module's own function imported
under an alias computes the output; every gate and probe passes because it is the oracle. Caught by
P9.reference_call (cheating), at check_correctness.py already (verify/early.py). Legal twin:
scipy_softmax.py (a library routine named like the operation is an implementation).
"""

from softmax_golden import softmax_golden as _rows


def softmax_kernel(x, out):
    """The oracle's function under another name."""
    out[...] = _rows(x)


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
