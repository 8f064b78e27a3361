"""CPU float64 reference for scaled dot-product attention (the precision oracle; never timed)."""

import numpy as np


def pypto_attention_golden_cpu(q, k, v):
    """softmax(q @ k^T / sqrt(d)) @ v over the last two axes, computed in float64, returned as float64."""
    qf, kf, vf = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    scores = qf @ np.swapaxes(kf, -1, -2) / np.sqrt(qf.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ vf
