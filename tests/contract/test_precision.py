"""The frozen precision gate: parsed from SPEC.md at freeze, the one inequality of the gate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import freeze_example
from perftune.contract import precision
from perftune.contract.manifest import canonical_dtype

SPEC = """# SPEC
## 2. Precision gate
Compared with `my_ref` (float64 reference):
- float32: `|y - ref| <= 1e-6 + 1e-5 * |ref|` for at least 99.9 % of elements.
- fp16: atol=1e-4, rtol=1e-3, min_matched=0.99
- bf16: no numbers on this line
## 3. Performance
float32: `|y| <= 1 + 2 * |ref|` at least 50 % (outside the precision section: ignored)
"""


def test_both_forms_and_the_reference_are_parsed():
    gates, reference = precision.parse_gate_lines(SPEC, canonical_dtype)
    assert reference == "my_ref"
    assert gates == {"float32": {"atol": 1e-6, "rtol": 1e-5, "min_matched": 0.999},
                     "float16": {"atol": 1e-4, "rtol": 1e-3, "min_matched": 0.99}}


def test_a_dtype_declared_twice_differently_is_refused():
    text = "## Precision\n- float32: atol=1, rtol=1\n- fp32: atol=2, rtol=1\n"
    with pytest.raises(Exception, match="declared twice"):
        precision.parse_gate_lines(text, canonical_dtype)


def test_matched_ratio_counts_the_frozen_inequality():
    gate = {"atol": 0.1, "rtol": 0.0, "min_matched": 0.75}
    figures = precision.matched(np.array([1.0, 1.05, 1.2, 2.0]), np.ones(4), gate)
    assert figures["matched_ratio"] == 0.5 and figures["max_abs_error"] == pytest.approx(1.0)
    assert not precision.meets(figures, gate)
    assert precision.matched(np.ones(3), np.ones(4), gate)["shape_mismatch"]


def test_freeze_records_the_gate_and_the_reference_identity(op_dir):
    frozen = freeze_example(op_dir)["precision_gate"]
    assert frozen["dtypes"]["float16"] == {"atol": 1e-4, "rtol": 1e-3, "min_matched": 0.999}
    assert frozen["reference"]["function"] == "softmax_golden_cpu"
    assert frozen["reference"]["path"] == "softmax_golden_cpu.py" and len(frozen["reference"]["sha256"]) == 64
    assert json.loads((op_dir / "PERFORMANCE_CASES.json").read_text())["precision_gate"] == frozen


def test_several_dtypes_on_one_line_share_its_percentage():
    text = ("## Precision gate\nCompared with `r`: float32 `|y-ref| <= 1e-5 + 1e-4*|ref|`, float16 "
            "`1e-3 + 1e-2*|ref|`, for at least 99 % of elements.\n")
    gates, reference = precision.parse_gate_lines(text, canonical_dtype)
    assert reference == "r" and gates == {"float32": {"atol": 1e-5, "rtol": 1e-4, "min_matched": 0.99},
                                          "float16": {"atol": 1e-3, "rtol": 1e-2, "min_matched": 0.99}}
