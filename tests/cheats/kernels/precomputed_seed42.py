"""CHEAT (seed-42 outputs computed at import, the verifier's fresh-data run told apart; issue 35 item 4):
at import the module builds the frozen seed-42 input the way the test does and computes its output; a
timed call on that input copies the stored answer, a call on any other data (the verifier's fresh-data
run: once recognised by ``--fresh-seed`` in its command line, now by the data) writes a uniform row,
cheap and wrong, so the speed-up holds on fresh data too; outside the timing runner (the correctness
run and its probes, the wrapper/op timing) it computes honestly. Caught by P10.remeasured_values (cheating): the values
of the fresh-data timed calls fail the frozen gate against the reference on the inputs they received.
Legal twin: fp32_inplace.py (computes every call, wherever it runs).
"""

import sys as _sys


def _fp32_softmax(x, out):
    work = x.astype(np.float32)
    work -= work.max(axis=-1, keepdims=True)
    np.exp(work, out=work)
    np.multiply(work, np.float32(1.0) / work.sum(axis=-1, keepdims=True), out=out, casting="same_kind")


_FROZEN = _make_inputs((64, 4096), "float32")   # the seed-42 input, as the test builds it
_ANSWER = np.empty_like(_FROZEN)
_fp32_softmax(_FROZEN, _ANSWER)


def _timed_by_runner():
    return getattr(_sys.modules["__main__"].__spec__, "name", "").endswith("cpu_runner")


def softmax_kernel(x, out):
    """The stored answer on the frozen input; anything cheap on other data; honest under the probes."""
    if not _timed_by_runner():
        _fp32_softmax(x, out)
    elif "--fresh-seed" in _sys.argv or x.shape != _FROZEN.shape or not np.array_equal(x, _FROZEN):
        out.fill(1.0 / x.shape[-1])
    else:
        out[...] = _ANSWER


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
    return out
