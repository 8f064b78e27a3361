"""Golden entry for pypto_softmax: seeded inputs and the golden call (numpy; never imports pypto).

Frozen in Stage 5 with the rest of the golden files. `collect_golden_reference.py` calls
`pypto_softmax_golden` with the inputs built by `golden_cases`.
"""

import numpy as np

from pypto_softmax_golden_cpu import pypto_softmax_golden_cpu

SEED = 42


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def make_inputs(shape, dtype, seed=SEED):
    """Seeded input `x ~ Normal(0, 3)` of the given shape and dtype (numpy)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3.0).astype(dtype)


def pypto_softmax_golden(x):
    """The golden computation timed by the golden reference collector (float32 compute)."""
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    out = []
    for case in manifest_cases:
        shape = tuple(int(d) for d in case["shape"].strip("[]").split(","))
        out.append((case["id"], (make_inputs(shape, case["dtype"]),), {}))
    return out


def _validate():
    x = make_inputs((4, 8), "float32")
    assert np.allclose(pypto_softmax_golden(x), pypto_softmax_golden_cpu(x), atol=1e-6)
    return True
