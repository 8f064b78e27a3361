"""Golden entry for linear: device selection, seeded inputs and the golden call.

On Ascend this module would run the torch_npu golden; in this cpu example the golden is numpy.
`collect_golden_reference.py` calls `linear_golden` with the inputs built by `golden_cases`.
"""

import re

import numpy as np

SEED = 42


def _get_device():
    """The device every test uses (the cpu backend has exactly one)."""
    return "cpu"


def _make_inputs(m, k, n, dtype, device=None, seed=SEED):
    """Seeded `x [m, k]`, `w [k, n]`, `b [n]` (SPEC.md §1 distribution)."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(k)
    x = (rng.uniform(-1.0, 1.0, (m, k)) * scale).astype(dtype)
    w = (rng.uniform(-1.0, 1.0, (k, n)) * scale).astype(dtype)
    b = rng.uniform(-0.1, 0.1, n).astype(dtype)
    return x, w, b


def linear_golden(x, w, b, act):
    """The golden computation timed by the golden reference collector (float32 matmul)."""
    y = x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
    return (np.maximum(y, 0.0) if act == "relu" else y).astype(x.dtype)


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    out = []
    for case in manifest_cases:
        dims = dict(re.findall(r"(\w+):\[([0-9,]+)\]", case["shape"]))
        m, k = (int(d) for d in dims["x"].split(","))
        n = int(dims["w"].split(",")[1])
        act = "relu" if "relu" in case["id"] else "none"
        out.append((case["id"], (*_make_inputs(m, k, n, case["dtype"]), act), {}))
    return out
