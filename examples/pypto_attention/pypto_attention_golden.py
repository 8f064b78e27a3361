"""Golden entry for pypto_attention: seeded inputs and the golden call (numpy; never imports pypto).

Frozen in Stage 5 with the rest of the golden files. `collect_golden_reference.py` calls
`pypto_attention_golden` with the inputs built by `golden_cases`.
"""

import re

import numpy as np

from pypto_attention_golden_cpu import pypto_attention_golden_cpu

SEED = 42


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def make_inputs(shape, dtype, seed=SEED):
    """Seeded `q, k, v` of one shape `[b, h, s, d]`, each `Normal(0, 1)` in the case dtype (numpy)."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


def pypto_attention_golden(q, k, v):
    """The golden computation timed by the golden reference collector (float32 compute)."""
    qf, kf, vf = (x.astype(np.float32) for x in (q, k, v))
    scores = qf @ np.swapaxes(kf, -1, -2) / np.float32(np.sqrt(qf.shape[-1]))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ vf).astype(q.dtype)


def case_shape(shape):
    """The `[b, h, s, d]` shared by q, k and v of a case shape `q:[...] k:[...] v:[...]`."""
    groups = dict(re.findall(r"(\w+):\[([0-9,]+)\]", shape))
    return tuple(int(d) for d in groups["q"].split(","))


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    return [(case["id"], make_inputs(case_shape(case["shape"]), case["dtype"]), {}) for case in manifest_cases]


def _validate():
    q, k, v = make_inputs((1, 2, 8, 4), "float32")
    assert np.allclose(pypto_attention_golden(q, k, v), pypto_attention_golden_cpu(q, k, v), atol=1e-5)
    return True
