"""Golden entry for pypto_matmul: seeded inputs and the golden call (numpy; never imports pypto).

Frozen in Stage 5 with the rest of the golden files. `collect_golden_reference.py` calls
`pypto_matmul_golden` with the inputs built by `golden_cases`.
"""

import re

import numpy as np

from pypto_matmul_golden_cpu import pypto_matmul_golden_cpu

SEED = 42


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def make_inputs(m, k, n, dtype, seed=SEED):
    """Seeded inputs `a [m,k]`, `b [k,n]`, both `Normal(0, 1)` in the case dtype (numpy)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return a, b


def pypto_matmul_golden(a, b):
    """The golden computation timed by the golden reference collector (float32 accumulation)."""
    return a.astype(np.float32) @ b.astype(np.float32)


def case_dims(shape):
    """(m, k, n) of a case shape `a:[m,k] b:[k,n]`."""
    groups = dict(re.findall(r"(\w+):\[([0-9,]+)\]", shape))
    m, k = (int(d) for d in groups["a"].split(","))
    return m, k, int(groups["b"].split(",")[1])


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    return [(case["id"], make_inputs(*case_dims(case["shape"]), case["dtype"]), {}) for case in manifest_cases]


def _validate():
    a, b = make_inputs(4, 8, 3, "float16")
    assert np.allclose(pypto_matmul_golden(a, b), pypto_matmul_golden_cpu(a, b), atol=1e-5)
    return True
