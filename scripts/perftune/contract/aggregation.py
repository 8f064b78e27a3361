"""The frozen aggregation methods (``protocol.AGGREGATIONS``): how a case's samples become one number.

Owned by the contract because the method is frozen with the manifest; the measurement layer uses it
for a round's per-case estimate and :mod:`perftune.decide.stats` for every resampled estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import protocol


def aggregate_rows(values: np.ndarray, method: str) -> np.ndarray:
    """Aggregate along the last axis (vectorised form of :func:`aggregate`)."""
    if method not in protocol.AGGREGATIONS:
        raise ValueError(f"unknown aggregation {method!r}")
    n = values.shape[-1]
    if n == 0:
        raise ValueError("cannot aggregate an empty sample")
    ordered = np.sort(values, axis=-1)  # sorting short rows beats np.median's partition here
    if method == "median" or n < 3:
        return 0.5 * (ordered[..., (n - 1) // 2] + ordered[..., n // 2])
    return ordered[..., 1:-1].mean(axis=-1)


def aggregate(samples: Sequence[float] | np.ndarray, method: str) -> float:
    """``trimmed_mean``: drop one min and one max when n >= 3 (else the median); ``median``."""
    return float(aggregate_rows(np.asarray(samples, dtype=float), method))
