"""CPU float64 reference for linear (the precision oracle; never timed)."""

import numpy as np


def linear_golden_cpu(x, w, b, act):
    """act(x @ w + b) computed in float64, returned as float64."""
    y = np.asarray(x, np.float64) @ np.asarray(w, np.float64) + np.asarray(b, np.float64)
    return np.maximum(y, 0.0) if act == "relu" else y
