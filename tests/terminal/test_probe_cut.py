"""The cpu scalar probe keeps the loop structure of the real call: rows stay, the work axes the work model
names become 1, never an axis because its size equals another (#27 Deliver 7: linear with n = m = 128 once
kept w[1, 128] and out[128, 128] and timed real work); a cpu residual is never wait_bound."""

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

LINEAR = {"dims": [{"dim": "m", "value": "x[0]"}, {"dim": "k", "value": "x[1]"}, {"dim": "n", "value": "w[1]"}],
          "tensors": [{"tensor": "x", "elements": "m*k"}, {"tensor": "w", "elements": "k*n"},
                      {"tensor": "b", "elements": "n"}, {"tensor": "y", "elements": "m*n"}]}
SOFTMAX = {"dims": [{"dim": "rows", "value": "shape[0]"}, {"dim": "cols", "value": "shape[1]"},
                    {"dim": "elements", "value": "rows*cols"}],
           "tensors": [{"tensor": "x", "elements": "elements"}, {"tensor": "y", "elements": "elements"}]}


def linear_kernel(x, w, b, act, out):
    np.matmul(x, w, out=out)
    out += b


def softmax_kernel(x, out):
    out[...] = np.exp(x - x.max(axis=1, keepdims=True))


def test_linear_with_n_equal_m_cuts_every_work_axis_and_stays_callable():
    m = n = k = 128
    args = (np.ones((m, k), np.float32), np.ones((k, n), np.float32), np.ones(n, np.float32), "relu",
            np.empty((m, n), np.float32))
    cut, leading = probe.cut_arguments(linear_kernel, args, {}, LINEAR)
    assert leading == "m"
    assert [list(cut[a].shape) for a in ("x", "w", "b", "out")] == [[128, 1], [1, 1], [1], [128, 1]]
    overhead, shapes = probe.fixed_overhead_us(linear_kernel, args, {}, LINEAR)
    assert overhead > 0 and shapes == [[128, 1], [1, 1], [1], [128, 1]]


def test_softmax_keeps_rows_and_cuts_columns_even_when_both_are_equal():
    args = (np.ones((64, 64), np.float32), np.empty((64, 64), np.float32))
    cut, leading = probe.cut_arguments(softmax_kernel, args, {}, SOFTMAX)
    assert leading == "rows" and [list(cut[a].shape) for a in ("x", "out")] == [[64, 1], [64, 1]]


def test_a_cpu_residual_is_never_labelled_wait_bound():
    from perftune.terminal import roofline
    assert roofline.classify(0.05, 1.0, 0.1)[0] == "wait_bound"
    status, why = roofline.classify(0.05, 1.0, 0.1, waits_observable=False)
    assert status == "unattributed_residual" and "never wait_bound" in why
    assert roofline.classify(0.5, 3.0, 0.1, waits_observable=False)[0] == "compute_bound"
    assert roofline.classify(0.05, 1.0, 0.9, waits_observable=False)[0] == "scalar_bound"
