"""The precision gate must be able to fail (issue 28 item 8): zeros, a constant and the input itself
are measured against the gate on every P0 case at freeze; a gate accepting one is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import assert_one_line_error, freeze_example, run_script
from perftune.contract import null_outputs

STRICT = {"atol": 1e-6, "rtol": 1e-5, "min_matched": 0.999}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_strict_gate_rejects_every_null_output_and_a_loose_one_accepts_zeros():
    x = np.random.default_rng(42).standard_normal((64, 4096))
    ref = softmax(x)
    assert null_outputs.accepted(ref, [x], STRICT) == []
    assert null_outputs.accepted(ref, [x], {"atol": 5e-2, "rtol": 0.0, "min_matched": 0.9}) == ["zeros", "constant"]


def test_an_identity_like_reference_is_accepted_as_the_input_and_a_constant_output_as_a_constant():
    x = np.random.default_rng(42).standard_normal((8, 8))
    assert null_outputs.accepted(x + 1e-9, [x], STRICT) == ["input"]
    assert null_outputs.accepted(np.full((8, 8), 0.5), [x], STRICT) == ["constant"]


def test_freeze_refuses_a_spec_gate_under_which_zeros_pass(op_dir):
    spec = op_dir / "SPEC.md"
    spec.write_text(spec.read_text().replace("`|y - ref| <= 1e-6 + 1e-5 * |ref|`", "`|y - ref| <= 5e-2 + 0 * |ref|`"))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel")
    assert_one_line_error(proc, 2, "SPEC.md", "precision gate float32", "zeros")
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()


def test_the_example_gates_can_fail_and_freeze(op_dir):
    manifest = freeze_example(op_dir)
    assert manifest["precision_gate"]["dtypes"]["float32"]["atol"] == 1e-6
    assert null_outputs.run(op_dir, manifest) == []


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_frozen_gate_loosened_by_hand_is_found_in_a_child_process(op_dir, dtype):
    manifest = freeze_example(op_dir)
    manifest["precision_gate"]["dtypes"][dtype].update(atol=0.5, rtol=0.0)
    found = null_outputs.run(op_dir, manifest)
    assert found and {d for _, d, _ in found} == {dtype} and all("zeros" in names for *_, names in found), found
    json.dumps(found)
