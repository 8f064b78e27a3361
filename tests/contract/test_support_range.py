"""SPEC.md's support range: section -> frozen manifest field -> drawn shapes (exact values)."""

import pytest

from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script
from perftune.contract import manifest, support_range
from perftune.contract.work_model import shape_groups

LINEAR = """## 6. Support range
| dim | positions | min | max | multiple |
|---|---|---|---|---|
| m | x[0] | 1 | 64 | 1 |
| k | x[1] w[0] | 8 | 256 | 8 |
| n | w[1] b[0] | 2 | 512 | 2 |

dtypes: fp32, float16
## 7. Next
"""


def test_the_example_range_is_frozen_and_shared_sizes_stay_equal_in_every_drawn_shape(op_dir):
    obj = freeze_example(op_dir)
    assert obj["support_range"] == {"dtypes": ["float32", "float16"], "dims": [
        {"dim": "rows", "positions": ["shape[0]"], "min": 1, "max": 4096, "multiple": 1},
        {"dim": "cols", "positions": ["shape[1]"], "min": 1, "max": 8192, "multiple": 1}], "tail_sigmas": 30.0}
    frozen = support_range.from_spec(LINEAR, "SPEC.md", ["x:[4,8],w:[8,16],b:[16]"], manifest.canonical_dtype)
    assert frozen["dtypes"] == ["float32", "float16"] and frozen["dims"][1]["positions"] == ["x[1]", "w[0]"]
    shapes = support_range.draw(frozen, "x:[4,8],w:[8,16],b:[16]", 7, 3, {"x:[4,8],w:[8,16],b:[16]"})
    assert len(shapes) == 3 and shapes == support_range.draw(frozen, "x:[4,8],w:[8,16],b:[16]", 7, 3, set())
    for shape in shapes:
        groups = shape_groups(shape)
        assert groups["x"][1] == groups["w"][0] and groups["w"][1] == groups["b"][0], shape
        assert groups["x"][1] % 8 == 0 and groups["w"][1] % 2 == 0 and 1 <= groups["x"][0] <= 64
        assert support_range.outside(frozen, shape) is None
        assert sum(a * b for a, b in [groups["x"], groups["w"]]) + groups["b"][0] <= support_range.MAX_ELEMENTS
    assert support_range.outside(frozen, "x:[4,9],w:[8,16],b:[16]") == "dimension k is 9 and 8"


@pytest.mark.parametrize("old, new, needle", [
    ("| cols | shape[1] | 1 | 8192 | 1 |", "| cols | shape[1] | 1 | 1024 | 1 |",
     "P0 shape [64,4096]: cols=4096 is outside"),
    ("| cols | shape[1] | 1 | 8192 | 1 |", "", "position shape[1] is set by no dimension"),
    ("| rows | shape[0] | 1 | 4096 | 1 |", "| rows | rows | 1 | 4096 | 1 |", "are not like shape[0]"),
    ("| rows | shape[0] | 1 | 4096 | 1 |", "| rows | shape[0] | 9 | 4 | 1 |", "needs 1 <= min <= max"),
    ("dtypes: float32, float16", "dtypes: float77", "Support range.dtypes"),
    ("dtypes: float32, float16", "", "no 'dtypes:' line"),
    ("tails: 30 sigma", "tails: far", "Support range.tails: 'far' is not 'N sigma'"),
    ("tails: 30 sigma", "tails: 0 sigma", "Support range.tails"),
])
def test_freeze_refuses_a_broken_support_range_naming_the_field(op_dir, old, new, needle):
    spec = op_dir / "SPEC.md"
    assert old in spec.read_text()
    spec.write_text(spec.read_text().replace(old + "\n", new + "\n" if new else "", 1))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel")
    assert_one_line_error(proc, 2, "SPEC.md", needle)
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()


def test_without_the_section_nothing_is_frozen_and_every_example_declares_one(op_dir):
    spec = op_dir / "SPEC.md"
    spec.write_text(spec.read_text().split("## 6. Support range")[0])
    assert "support_range" not in freeze_example(op_dir)
    for name in ("softmax", "linear", "pypto_softmax", "pypto_matmul", "pypto_attention"):
        text = (EXAMPLE.parent / name / "SPEC.md").read_text()
        assert support_range.section_lines(text) is not None, name
