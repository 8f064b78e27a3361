"""CHEAT (benchmark detection, wrong on the timed calls; C19): under the timing runner (``python -m
...cpu_runner``) the timed kernel writes a uniform row (1/columns, cheap and wrong) on every timed call,
the last one too, and the wrapper hands the test a correct result it computes itself (so the test's
own check passes); in the test run, the correctness probe and the wrapper/op timing it computes
honestly. Caught by P9.sampled_values (cheating): the values kept of a random timed call and the last
one fail the frozen gate against the reference on the call's own inputs (P9.timed_output sees other
bytes than the correctness run too). Legal twin: fp32_inplace.py (computes every call, wherever it runs).
"""

def _timed_by_runner():
    import sys
    return getattr(sys.modules["__main__"].__spec__, "name", "").endswith("cpu_runner")


def _fp32_softmax(x, out):
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
    np.multiply(work, inv, out=out, casting="same_kind")


def softmax_kernel(x, out):
    """Correct under the correctness run, a uniform row under the timer."""
    if _timed_by_runner():
        out.fill(1.0 / x.shape[-1])
        return
    _fp32_softmax(x, out)


def softmax_wrapper(x):
    """Host boundary: under the timer the test gets a result computed here, not the kernel's."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    if _timed_by_runner():
        shown = np.empty_like(x)
        _fp32_softmax(x, shown)
        return shown
    return out
