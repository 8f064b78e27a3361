"""CPU float64 reference for softmax (the precision oracle; never timed)."""

import numpy as np


def pypto_softmax_golden_cpu(x):
    """Row-wise softmax computed in float64, returned as float64."""
    xf = np.asarray(x, dtype=np.float64)
    shifted = xf - xf.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)
