"""stage4_gates.py end to end on realistic PyPTO-Pro deliveries: one good, one per violation.

Each violation must FAIL exactly its gate with the documented category; every other gate stays PASS
or not_applicable, and delivery import safety is `blocked` (env_error) because this machine has no
torch/pypto_pro. Exit codes: 1 on any FAIL, 3 when the environment is the only problem, 2 on usage.
"""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_script, tree_digest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stage4"

# violation folder -> (the one gate that FAILs, its category, a line that must be cited as evidence)
VIOLATIONS = {
    "two_jit": ("single_jit", "cheating", "@pl.jit -> rmsnorm_kernel_single_buffer"),
    "kernel_called_twice": ("single_launch", "cheating", "rmsnorm_kernel(x[half:]"),
    "kernel_in_for_loop": ("single_launch", "cheating", "rmsnorm_kernel(x[start:stop]"),
    "kernel_in_comprehension": ("single_launch", "cheating", "[rmsnorm_kernel(xs"),
    "kernel_via_helper_in_loop": ("single_launch", "cheating", "rmsnorm_kernel(x, gamma, out, x.shape[0]"),
    "test_calls_kernel": ("tests_call_wrapper", "signature_mismatch", "rmsnorm_kernel(x, gamma, out, 1, 8192"),
    "assert_close": ("precision_standard", "incomplete_structure", "torch.testing.assert_close("),
    "atol_override": ("precision_standard", "incomplete_structure", "atol_override=2e-2"),
    "import_pypto_frontend": ("pro_import", "import_violation", "import pypto.frontend"),
    "missing_get_device": ("device", "incomplete_structure", "no call of _get_device()"),
    "hard_coded_device": ("device", "incomplete_structure", "torch.npu.set_device(1)"),
    "only_three_tests": ("test_count", "incomplete_structure", "def test_rows1_h8192_bf16"),
    "missing_golden_cpu_import": ("golden_cpu_import", "incomplete_structure", "no import of rmsnorm_golden_cpu"),
    "golden_imports_pypto": ("golden_purity", "golden_failure", "import pypto_pro.language as pl"),
    "wrapper_missing": ("wrapper_exists", "signature_mismatch", "no module-level def rmsnorm_wrapper"),
    "wrapper_signature": ("wrapper_signature", "signature_mismatch", "['x', 'weight', 'eps']"),
}


def delivery(tmp_path: Path, violation: str | None = None) -> Path:
    """The good rmsnorm delivery in tmp_path/rmsnorm, with one violation's files laid over it."""
    op = tmp_path / "rmsnorm"
    op.mkdir(parents=True)
    for folder in ["good"] + ([f"violations/{violation}"] if violation else []):
        for path in (FIXTURES / folder).iterdir():          # test files are stored as *.py.fixture
            shutil.copyfile(path, op / path.name.removesuffix(".fixture"))
    return op


def gates_json(op: Path, *extra: str) -> tuple[int, dict]:
    proc = run_script("stage4_gates.py", "--op-dir", op, "--json", *extra)
    assert proc.stderr == "", proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_every_violation_folder_is_listed():
    assert sorted(p.name for p in (FIXTURES / "violations").iterdir()) == sorted(VIOLATIONS)


def test_good_delivery_passes_every_static_gate_and_is_blocked_only_by_the_environment(tmp_path):
    op = delivery(tmp_path)
    before = tree_digest(op)
    code, out = gates_json(op)
    assert code == 3 and out["exit_code"] == 3 and out["status"] == "blocked"
    status = {g["id"]: g["status"] for g in out["gates"]}
    assert status.pop("delivery_import") == "blocked"
    assert set(status.values()) == {"PASS"} and len(status) == 12
    blocked = next(g for g in out["gates"] if g["id"] == "delivery_import")
    # the first absent import: torch, or pypto_pro (not on PyPI) where the pypto-sim extra brought torch
    line, module, text = ((6, "torch", "import torch") if importlib.util.find_spec("torch") is None
                          else (8, "pypto_pro", "import pypto_pro.language as pl"))
    assert blocked["category"] == "env_error" and f"No module named '{module}'" in blocked["reason"]
    assert blocked["evidence"] == [{"file": "test_rmsnorm.py", "line": line, "text": text}]
    assert out["failed_gates"] == [] and out["blocked_gates"] == ["delivery_import"]
    assert out["categories"] == ["env_error"] and out["primary_failure_category"] == "env_error"
    assert sorted(out["inputs"]) == ["rmsnorm_golden.py", "rmsnorm_golden_cpu.py", "test_rmsnorm.py"]
    assert out["inputs"]["test_rmsnorm.py"]["path"] == "test_rmsnorm.py"
    assert tree_digest(op) == before            # the gates never write into the operator directory


def test_good_delivery_text_verdict_names_the_blocked_gate(tmp_path):
    proc = run_script("stage4_gates.py", "--op-dir", delivery(tmp_path))
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.splitlines()[-1] == ("Stage 4 static gates BLOCKED by the environment (env_error): "
                                            "delivery_import. No gate failed.")
    assert "PASS            single_jit          one @pl.jit kernel: rmsnorm_kernel" in proc.stdout


@pytest.mark.parametrize("violation", sorted(VIOLATIONS))
def test_each_violation_fails_exactly_its_gate(tmp_path, violation):
    gate_id, category, cited = VIOLATIONS[violation]
    code, out = gates_json(delivery(tmp_path, violation))
    assert code == 1 and out["status"] == "FAIL"
    assert out["failed_gates"] == [gate_id] and out["blocked_gates"] == ["delivery_import"]
    gate = next(g for g in out["gates"] if g["id"] == gate_id)
    assert gate["category"] == category and out["primary_failure_category"] == category
    assert any(cited in e["text"] for e in gate["evidence"]), gate["evidence"]
    others = {g["status"] for g in out["gates"] if g["id"] not in (gate_id, "delivery_import")}
    assert others <= {"PASS", "not_applicable"}


def test_evidence_cites_the_exact_lines(tmp_path):
    _, out = gates_json(delivery(tmp_path, "kernel_called_twice"))
    gate = next(g for g in out["gates"] if g["id"] == "single_launch")
    assert [e["line"] for e in gate["evidence"]] == [46, 47]
    assert gate["reason"].startswith("2 direct launch(es) from rmsnorm_wrapper and 0 inside")
    _, out = gates_json(delivery(tmp_path / "b", "two_jit"))
    gate = next(g for g in out["gates"] if g["id"] == "single_jit")
    assert [e["line"] for e in gate["evidence"]] == [20, 38]


def test_missing_wrapper_makes_dependent_gates_not_applicable(tmp_path):
    _, out = gates_json(delivery(tmp_path, "wrapper_missing"))
    status = {g["id"]: (g["status"], g["reason"]) for g in out["gates"]}
    for gate_id in ("wrapper_signature", "single_launch", "tests_call_wrapper"):
        assert status[gate_id] == ("not_applicable", "no rmsnorm_wrapper (see gate wrapper_exists)")


def test_text_verdict_on_failure_lists_gate_category_and_evidence(tmp_path):
    proc = run_script("stage4_gates.py", "--op-dir", delivery(tmp_path, "kernel_in_for_loop"))
    assert proc.returncode == 1
    assert "    test_rmsnorm.py:47: rmsnorm_kernel(x[start:stop]" in proc.stdout
    assert proc.stdout.splitlines()[-1] == ("Stage 4 static gates FAILED. Failed gates: single_launch. "
                                            "failure_category: cheating")


def test_several_failures_choose_the_primary_by_priority(tmp_path):
    op = delivery(tmp_path, "assert_close")
    shutil.copyfile(FIXTURES / "violations" / "golden_imports_pypto" / "rmsnorm_golden.py", op / "rmsnorm_golden.py")
    code, out = gates_json(op)
    assert code == 1 and out["failed_gates"] == ["precision_standard", "golden_purity"]
    assert out["categories"] == ["incomplete_structure", "golden_failure", "env_error"]
    assert out["primary_failure_category"] == "golden_failure"


def test_missing_golden_cpu_file_fails_files_and_import(tmp_path):
    op = delivery(tmp_path)
    (op / "rmsnorm_golden_cpu.py").unlink()
    code, out = gates_json(op)
    by_id = {g["id"]: g for g in out["gates"]}
    assert code == 1 and by_id["files"]["category"] == "missing_file"
    assert by_id["files"]["evidence"] == [{"file": "rmsnorm_golden_cpu.py", "line": None, "text": "missing"}]
    assert by_id["wrapper_signature"]["status"] == "not_applicable"


def test_syntax_error_is_a_failure_not_a_crash(tmp_path):
    op = delivery(tmp_path)
    broken_line = len((op / "test_rmsnorm.py").read_text().splitlines()) + 2
    with open(op / "test_rmsnorm.py", "a") as handle:
        handle.write("\ndef broken(:\n")
    code, out = gates_json(op)
    by_id = {g["id"]: g for g in out["gates"]}
    assert code == 1 and by_id["files"]["category"] == "runtime_failure"
    assert by_id["files"]["evidence"][0]["line"] == broken_line
    assert by_id["delivery_import"]["category"] == "delivery_import_unsafe"
    assert by_id["delivery_import"]["evidence"][-1]["line"] == broken_line
    assert by_id["single_launch"]["status"] == "not_applicable"
    assert by_id["golden_purity"]["status"] == "PASS"


def test_usage_and_contract_errors_are_one_line_exit_2(tmp_path):
    assert_one_line_error(run_script("stage4_gates.py", "--op-dir", tmp_path / "nope"), 2, "operator directory not found")
    (tmp_path / "rmsnorm").mkdir()
    assert_one_line_error(run_script("stage4_gates.py", "--op-dir", tmp_path / "rmsnorm"), 2,
                          "test_rmsnorm.py", "Stage 4 test file is missing")
    op = delivery(tmp_path / "x")
    assert_one_line_error(run_script("stage4_gates.py", "--op-dir", op, "--op", "rms-norm"), 2, "--op")
    assert_one_line_error(run_script("stage4_gates.py"), 2, "--op-dir")


def test_help_explains_itself():
    proc = run_script("stage4_gates.py", "--help")
    assert proc.returncode == 0
    for needle in ("--op-dir", "--op", "--import-timeout", "--json", "example:", "exit codes", "blocked"):
        assert needle in proc.stdout
