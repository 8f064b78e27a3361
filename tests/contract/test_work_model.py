"""The necessary-work model: SPEC.md section → frozen manifest field → per-case counts (exact numbers)."""

import json

import pytest

from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script
from perftune.contract import work_model
from perftune.errors import ContractError

LINEAR = """# SPEC
## Necessary work
| dim | value |
|---|---|
| m | x[0] |
| k | x[1] |
| n | w[1] |

| operation | class | count | per |
|---|---|---|---|
| multiply-add | arithmetic | 2*k | m*n |
| bias | arithmetic | 1 | m*n |
| rsqrt | transcendental | 1 | m |

| tensor | direction | elements | dtype |
|---|---|---|---|
| x | read | m*k | |
| w | read | k*n | |
| b | read | n | float32 |
| y | write | m*n | |
## Next
"""


def test_named_shapes_per_output_and_per_row_work_and_per_tensor_dtypes():
    model = work_model.parse_section(LINEAR, "SPEC.md")
    assert model["source"] == "SPEC.md#Necessary work" and len(model["operations"]) == 3
    work = work_model.case_work(model, "c", "x:[4,8],w:[8,16],b:[16]", "x:float16,w:float16,b:float16")
    assert work["dims"] == {"m": 4, "k": 8, "n": 16}
    assert work["arithmetic_ops"] == 2 * 8 * 4 * 16 + 4 * 16 and work["transcendental_ops"] == 4
    assert work["bytes"] == (4 * 8 + 8 * 16 + 4 * 16) * 2 + 16 * 4  # y: the dtype all groups share
    with pytest.raises(ContractError, match="tensors.y .* no item size"):
        work_model.case_work(model, "c", "x:[4,8],w:[8,16],b:[16]", "x:float16,w:float32")


def test_the_example_declares_its_model_and_freeze_puts_it_in_the_manifest(op_dir):
    obj = freeze_example(op_dir)
    model = obj["work_model"]
    assert model == work_model.parse_section((EXAMPLE / "SPEC.md").read_text(), str(op_dir / "SPEC.md"))
    work = work_model.case_work(model, "c", "[64,4096]", "float16")
    assert work["transcendental_ops"] == 64 * 4096 and work["arithmetic_ops"] == 4 * 64 * 4096 + 64
    assert work["bytes"] == 2 * 64 * 4096 * 2


@pytest.mark.parametrize("old, new, needle", [
    ("| cols | shape[1] |", "| cols | shape[2] |", "is not an axis of the case shape"),
    ("| exp | transcendental |", "| exp | magic |", "class 'magic' is unknown"),
    ("| 1 | rows |", "| 1 | rows + __import__('os') |", "is not a dim or an arithmetic operation"),
    ("| x | read |", "| x | reads |", "direction 'reads' is unknown"),
])
def test_freeze_refuses_a_broken_work_model_naming_the_field(op_dir, old, new, needle):
    spec = op_dir / "SPEC.md"
    assert old in spec.read_text()
    spec.write_text(spec.read_text().replace(old, new, 1))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel")
    assert_one_line_error(proc, 2, "SPEC.md", needle)
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()


def test_a_spec_without_the_section_freezes_without_a_model_and_evaluation_never_runs_python():
    assert work_model.parse_section("# SPEC\n## 3. Performance\n", "SPEC.md") is None
    with pytest.raises(ContractError, match="not a dim"):
        work_model.evaluate("open('x')", {"rows": 2.0}, "w", "SPEC.md")
    assert work_model.evaluate("(rows + 2) ** 2 // 3", {"rows": 2.0}, "w", "s") == 5.0
    assert json.dumps(work_model.shape_groups("[4,8]")) == '{"shape": [4, 8]}'
