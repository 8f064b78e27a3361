"""freeze_cases.py end to end on the example operator, and every refusal through the CLI."""

import json

import pytest

from conftest import assert_one_line_error, freeze_example, run_script, tree_digest
from perftune.contract import schemas


def test_help_explains_itself():
    proc = run_script("freeze_cases.py", "--help")
    assert proc.returncode == 0 and "PERFORMANCE_CASES.json" in proc.stdout and "example:" in proc.stdout


def test_freeze_validate_show(op_dir):
    obj = freeze_example(op_dir)
    assert [c["id"] for c in obj["cases"]] == ["r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16",
                                               "r1024_c256_fp16"]
    assert obj["cases"][2]["dtype"] == "float16" and obj["protocol"]["seed"] == 42
    assert obj["user_target"] == {"metric": "speedup", "threshold": 1.1}
    schemas.validate(obj, "performance_cases")
    proc = run_script("freeze_cases.py", "validate", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["manifest"]["path"] == "PERFORMANCE_CASES.json" and len(report["manifest"]["sha256"]) == 64
    assert run_script("freeze_cases.py", "show", "--op-dir", op_dir).returncode == 0


def test_refuses_to_overwrite_a_frozen_manifest(op_dir):
    freeze_example(op_dir)
    before = tree_digest(op_dir)
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel")
    assert_one_line_error(proc, 2, "PERFORMANCE_CASES.json", "never overwritten")
    assert tree_digest(op_dir) == before


BASE = ["--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel"]


@pytest.mark.parametrize("args, needle", [
    (["--target-case-ids", "nope"], "unknown case ids"),
    (["--target-case-ids", "r64_c4096_fp32", "r64_c4096_fp32"], "duplicate"),
    (["--target-case-ids", "r64_c4096_fp32", "--seed", "0"], "--seed"),
    (["--target-case-ids", "r64_c4096_fp32", "--repeats", "0"], "--repeats"),
    (["--target-case-ids", "r64_c4096_fp32", "--backend", "gpu"], "invalid choice"),
])
def test_refusals_are_one_line_exit_2_and_write_nothing(op_dir, args, needle):
    before = tree_digest(op_dir)
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, *BASE, *args)
    assert_one_line_error(proc, 2, needle)
    assert tree_digest(op_dir) == before


def test_refuses_p0_case_without_test(op_dir):
    test = op_dir / "test_softmax.py"
    test.write_text(test.read_text().replace("def test_r1024_c256_fp16", "def helper_r1024_c256_fp16"))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32", *BASE)
    assert_one_line_error(proc, 2, "r1024_c256_fp16", "no test function")
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()


def test_refuses_duplicate_spec_ids(op_dir):
    spec = op_dir / "SPEC.md"
    spec.write_text(spec.read_text().replace("| r512_c1024_fp32 |", "| r64_c4096_fp32 |"))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32", *BASE)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_validate_detects_edit_and_corruption(op_dir):
    freeze_example(op_dir)
    path = op_dir / "PERFORMANCE_CASES.json"
    obj = json.loads(path.read_text())
    obj["protocol"]["seed"] = 7
    path.write_text(json.dumps(obj))
    assert_one_line_error(run_script("freeze_cases.py", "validate", "--op-dir", op_dir), 2, "seed")
    path.write_text("{not json")
    assert_one_line_error(run_script("freeze_cases.py", "validate", "--op-dir", op_dir), 2, "malformed JSON")


@pytest.mark.parametrize("backend, example, op_name, expected", [
    ("cpu", "softmax", "softmax_kernel", (3, 10)),
    ("pypto-sim", "pypto_softmax", "pypto_softmax_kernel", (0, 2)),   # docs/pypto-sim-backend.md
])
def test_without_warmup_and_repeats_the_freeze_takes_the_backends_own_defaults(tmp_path, backend, example,
                                                                                op_name, expected):
    import shutil
    from conftest import ROOT
    op = tmp_path / example
    shutil.copytree(ROOT / "examples" / example, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "all_p0",
                      "--selection-mode", "all_p0_no_questions", "--backend", backend, "--op-name", op_name)
    assert proc.returncode == 0, proc.stderr
    frozen = json.loads((op / "PERFORMANCE_CASES.json").read_text())["protocol"]
    assert (frozen["warmup"], frozen["repeats"]) == expected
    helptext = run_script("freeze_cases.py", "freeze", "--help").stdout
    assert "pypto-sim 0" in helptext and "pypto-sim 2" in helptext
