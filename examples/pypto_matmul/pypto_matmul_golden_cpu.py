"""CPU float64 reference for the matmul (the precision oracle; never timed)."""

import numpy as np


def pypto_matmul_golden_cpu(a, b):
    """`a @ b` computed in float64 from the float16 inputs, returned as float64."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)
