"""The cpu scalar probe keeps the loop structure of the real call: rows stay, other sizes become 1."""

from __future__ import annotations

import numpy as np

from perftune.terminal import probe


def rowloop(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


def vectorised(x, out):
    np.multiply(x, 2.0, out=out)


def linear(x, w, b, out):
    out[...] = x @ w + b


def test_the_cut_keeps_the_leading_size_and_keeps_the_arguments_compatible():
    x, out = np.ones((64, 4096), np.float32), np.empty((64, 4096), np.float32)
    _, shapes = probe.fixed_overhead_us(vectorised, (x, out), {})
    assert shapes == [[64, 1], [64, 1]]
    args = (np.ones((64, 256)), np.ones((256, 512)), np.ones(512), np.empty((64, 512)))
    _, shapes = probe.fixed_overhead_us(linear, args, {})
    assert shapes == [[64, 1], [1, 1], [1], [64, 1]]  # x[m,1] @ w[1,1] + b[1] fits out[m,1]


def test_a_python_row_loop_shows_its_per_row_cost_which_a_one_element_cut_would_hide():
    x, out = np.ones((2048, 64)), np.empty((2048, 64))
    loop_us, _ = probe.fixed_overhead_us(rowloop, (x, out), {})
    vector_us, _ = probe.fixed_overhead_us(vectorised, (x, out), {})
    assert loop_us > 20 * vector_us  # ~2048 interpreter steps against one ufunc call
