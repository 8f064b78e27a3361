"""freeze_cases.py: one definition of the cpu Op Name, checked at freeze; re-freeze only before any round."""

import json
import shutil

import pytest

from conftest import EXAMPLE, assert_one_line_error, run_script, tree_digest

BASE = ["--target-case-ids", "r64_c4096_fp32", "--selection-mode", "user_selected", "--backend", "cpu",
        "--repeats", "1", "--warmup", "0"]


def freeze(op, name, *extra):
    return run_script("freeze_cases.py", "freeze", "--op-dir", op, *BASE, "--op-name", name, *extra, "--json")


@pytest.mark.parametrize("name, needle", [
    ("softmax_kernl", "is not a top-level function"),
    ("softmax_wrapper", "is the wrapper SPEC.md declares"),
    ("_assert_precision", "not by the wrapper softmax_wrapper()"),
    ("_run_case", "call sites"),
    ("test_r64_c4096_fp32", "is a test function"),
])
def test_a_wrong_cpu_op_name_is_refused_at_freeze_naming_the_kernel(op_dir, name, needle):
    before = tree_digest(op_dir)
    proc = freeze(op_dir, name)
    assert_one_line_error(proc, 2, "test_softmax.py", "--op-name", needle, "candidates: ['softmax_kernel']")
    assert tree_digest(op_dir) == before


def test_without_a_declared_wrapper_a_kernel_called_in_a_loop_or_never_is_refused(op_dir):
    spec = op_dir / "SPEC.md"
    spec.write_text(spec.read_text().replace("wrapper: softmax_wrapper\n", ""))
    test = op_dir / "test_softmax.py"
    text = test.read_text()
    test.write_text(text.replace("    softmax_kernel(x, out)\n", "    for _ in range(2):\n        softmax_kernel(x, out)\n"))
    assert_one_line_error(freeze(op_dir, "softmax_kernel"), 2, "inside a loop")
    test.write_text(text.replace("    softmax_kernel(x, out)\n", "    pass\n"))
    assert_one_line_error(freeze(op_dir, "softmax_kernel"), 2, "0 call sites")


def test_the_kernel_passes_and_the_facts_are_reported(op_dir):
    proc = freeze(op_dir, "softmax_kernel")
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)["op_name_check"]
    assert facts["launched_by"] == "softmax_wrapper" and facts["wrapper_declared_in_spec"] is True
    assert len(facts["tests_checked"]) == 4 and "launches exactly once" in facts["definition"]


def test_help_skill_and_docs_carry_the_same_definition():
    from perftune.contract import op_name
    definition = op_name.DEFINITION
    helptext = " ".join(run_script("freeze_cases.py", "freeze", "--help").stdout.split())
    assert definition in helptext
    root = EXAMPLE.parents[1]
    for page in ("skills/pypto-pro-op-perf-tune/SKILL.md", "docs/operator-format.md"):
        assert definition in " ".join((root / page).read_text().split()), page


def test_refreeze_before_any_round_is_recorded_and_refused_after_one(op_dir):
    first = freeze(op_dir, "softmax_kernel")
    assert first.returncode == 0, first.stderr
    old_sha = json.loads(first.stdout)["manifest"]["sha256"]
    again = freeze(op_dir, "softmax_kernel")
    assert_one_line_error(again, 2, "never overwritten", "--replace")
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "r64_c4096_fp16", "--selection-mode", "user_selected", "--backend", "cpu", "--op-name",
                      "softmax_kernel", "--repeats", "1", "--warmup", "0", "--replace", "add the fp16 target", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    entry = out["replaced"]
    assert entry["replaced"]["sha256"] == old_sha and entry["replaced_by_sha256"] == out["manifest"]["sha256"]
    assert entry["reason"] == "add the fp16 target"
    history = json.loads((op_dir / "docs/perf/manifest_history.json").read_text())
    assert history["entries"] == [entry]
    archived = op_dir / entry["archived"][0]["moved_to"]
    assert json.loads(archived.read_text())["optimization_target"]["case_ids"] == ["r64_c4096_fp32"]
    round_dir = op_dir / "docs/perf/round_001"  # any round binds to the manifest hash
    round_dir.mkdir()
    before = tree_digest(op_dir)
    late = freeze(op_dir, "softmax_kernel", "--replace", "too late")
    assert_one_line_error(late, 2, "--replace", "round_001")
    assert tree_digest(op_dir) == before


def test_replace_without_a_manifest_is_refused(tmp_path):
    op = tmp_path / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "docs", "__pycache__"))
    assert_one_line_error(freeze(op, "softmax_kernel", "--replace", "x"), 2, "no frozen manifest")


def test_every_step_before_the_freeze_works_without_a_manifest(op_dir):
    assert run_script("check_correctness.py", "--op-dir", op_dir).returncode == 0
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "r64_c4096_fp32",
                      "--backend", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "softmax_kernel" in {row["exact_op_name"] for row in json.loads(proc.stdout)["rows"]}
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "r64_c4096_fp32")
    assert_one_line_error(proc, 2, "--backend", "no manifest is frozen yet")


def test_msprof_freezes_the_runner_function_that_launches_the_device_op(op_dir):
    """msprof: the Op Name is the device name; the launcher is resolved by the same rule and frozen."""
    msprof = [a if a != "cpu" else "msprof" for a in BASE]
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, *msprof, "--op-name",
                      "pypto_softmax_kernel_mix_aic_0", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"]["launcher"]["function"] == "softmax_kernel"


def test_msprof_launcher_among_several_is_the_one_the_device_name_contains_else_refused(op_dir):
    test = op_dir / "test_softmax.py"
    test.write_text(test.read_text().replace("    out = np.empty_like(x)\n    softmax_kernel(x, out)\n",
                                             "    out = _alloc(x)\n    softmax_kernel(x, out)\n")
                    + "\n\ndef _alloc(x):\n    return np.empty_like(x)\n")
    msprof = [a if a != "cpu" else "msprof" for a in BASE]
    before = tree_digest(op_dir)
    refused = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, *msprof, "--op-name", "pypto_op_mix_aic_0")
    assert_one_line_error(refused, 2, "launcher", "2 functions", "_alloc", "softmax_kernel")
    assert tree_digest(op_dir) == before
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, *msprof, "--op-name",
                      "pypto_softmax_kernel_mix_aic_0", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"]["launcher"]["function"] == "softmax_kernel"
