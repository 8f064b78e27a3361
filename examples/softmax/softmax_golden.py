"""Golden entry for softmax: device selection, seeded inputs and the golden call.

On Ascend this module would run the torch_npu golden; in this cpu example the golden is numpy.
`collect_golden_reference.py` calls `softmax_golden` with the inputs built by `golden_cases`.
"""

import numpy as np

from softmax_golden_cpu import softmax_golden_cpu

SEED = 42


def _get_device():
    """The device every test uses (the cpu backend has exactly one)."""
    return "cpu"


def _make_inputs(shape, dtype, device=None, seed=SEED):
    """Seeded input `x ~ Normal(0, 3)` of the given shape and dtype."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3.0).astype(dtype)


def softmax_golden(x):
    """The golden computation timed by the golden reference collector (float32 compute)."""
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    out = []
    for case in manifest_cases:
        shape = tuple(int(d) for d in case["shape"].strip("[]").split(","))
        out.append((case["id"], (_make_inputs(shape, case["dtype"]),), {}))
    return out


def _validate():
    x = _make_inputs((4, 8), "float32")
    assert np.allclose(softmax_golden(x), softmax_golden_cpu(x), atol=1e-6)
    return True
