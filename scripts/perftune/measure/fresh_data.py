"""New data of the same shape, dtype and type as a tensor the op received (issue 28).

Used by the correctness probe (``probe_runner``: caching probes with the recorded seeds) and by the
cpu runner's ``--fresh-seed`` mode (``stage5_check`` P10 re-measures on data drawn with a seed chosen
at check time). Floating tensors get ``Normal(mean, std)`` of the original values (the frozen
distribution's first two moments; a non-finite or zero spread becomes 1), other dtypes a permutation
of the original values; numpy arrays stay numpy arrays, torch tensors stay torch tensors of the same
dtype and device; anything else is returned unchanged.
"""

from __future__ import annotations

from typing import Any

from . import attestation


def _moments(numpy, wide) -> tuple[float, float]:
    finite = wide[numpy.isfinite(wide)]
    if not finite.size:
        return 0.0, 1.0
    mean, std = float(finite.mean()), float(finite.std())
    return mean, std if std > 0 and numpy.isfinite(std) else 1.0


def _fresh_array(numpy, array, seed: int, floating: bool):
    rng = numpy.random.default_rng(seed)
    if floating:
        mean, std = _moments(numpy, array.astype(numpy.float64))
        return rng.standard_normal(array.shape) * std + mean
    return rng.permutation(array.reshape(-1)).reshape(array.shape)


def fresh_like(value: Any, seed: int) -> Any:
    """``value`` with new values drawn with ``seed`` (rules in the module docstring)."""
    import numpy
    array = attestation._host_array(value)
    if array is None:
        return value
    if isinstance(value, numpy.ndarray):
        floating = bool(numpy.issubdtype(array.dtype, numpy.floating))
        return _fresh_array(numpy, array, seed, floating).astype(array.dtype)
    import torch
    floating = bool(value.is_floating_point())
    host = value.detach().to("cpu", torch.float64).numpy() if floating else value.detach().cpu().numpy()
    new = numpy.ascontiguousarray(_fresh_array(numpy, host, seed, floating))
    return torch.from_numpy(new).to(device=value.device, dtype=value.dtype)


def tail_like(value: Any, seed: int, sigmas: float, share: float = 0.02) -> Any:
    """:func:`fresh_like` data with ``share`` of every row's elements (last axis; at least one each
    side) at mean +- (1 to 1.1) x ``sigmas`` x std of the original values, half above, half below
    (clipped to half the dtype's range): the frozen distribution's far tails, where a kernel without
    its stabilisation step overflows; ``share`` is above the 0.1 % a precision gate may leave unmatched."""
    import numpy
    array = attestation._host_array(value)
    fresh = fresh_like(value, seed)
    if array is None or not array.size or not numpy.issubdtype(array.dtype, numpy.floating):
        return fresh
    mean, std = _moments(numpy, array.astype(numpy.float64))
    limit = float(numpy.finfo(array.dtype).max) / 2
    host = attestation._host_array(fresh).astype(numpy.float64)
    rows = host.reshape(-1, host.shape[-1] if host.ndim else 1)
    rng = numpy.random.default_rng(seed + 1)
    each = max(1, int(rows.shape[1] * share / 2))
    for row in rows:
        picked = rng.permutation(rows.shape[1])[:2 * each]
        signs = numpy.where(numpy.arange(picked.size) < each, 1.0, -1.0)
        row[picked] = numpy.clip(mean + signs * sigmas * std * rng.uniform(1.0, 1.1, picked.size), -limit, limit)
    new = rows.reshape(host.shape).astype(array.dtype)
    if isinstance(value, numpy.ndarray):
        return new
    import torch
    return torch.from_numpy(numpy.ascontiguousarray(new)).to(device=value.device, dtype=value.dtype)
