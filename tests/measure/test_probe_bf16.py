"""The correctness probe on bfloat16 torch tensors (numpy has none): the numpy reference and the
gate see the exact float32 widening, never a TypeError."""

from __future__ import annotations

import numpy as np
import torch

from perftune.measure import probe_runner


def reference(x):
    return np.asarray(x, dtype=np.float64) * 2.0


def test_a_bf16_output_and_input_reach_the_numpy_reference_widened_exactly():
    x = torch.linspace(-3, 3, 64).reshape(8, 8).to(torch.bfloat16)
    gate = {"atol": 1e-2, "rtol": 1e-2, "min_matched": 0.999}
    call = ((np.zeros((8, 8), np.float32),), {}, {("arg", 0): 0})
    good = probe_runner._figures(x * 2, reference, call, [x], gate)
    assert good["matched_ratio"] == 1.0 and good["meets_frozen_gate"] is True and good["max_abs_error"] == 0.0
    wrong = probe_runner._figures(x * 3, reference, call, [x], gate)
    assert wrong["meets_frozen_gate"] is False
    assert probe_runner._host(x).dtype == np.float32 and np.array_equal(probe_runner._host(x), x.float().numpy())
