"""orchestrator_state.py end to end: the real script on a real operator directory, racing callers."""

import hashlib
import json
import os
import subprocess
import sys

from conftest import SCRIPTS, assert_one_line_error, run_script
from perftune.contract import schemas

ACTOR = ("--actor", "pypto-pro-op-orchestrator")


def cli(op_dir, action, *flags, actor=ACTOR):
    return run_script("orchestrator_state.py", action, "--op-dir", op_dir, *actor, *flags)


def ok(op_dir, action, *flags):
    proc = cli(op_dir, action, *flags, "--json")
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    schemas.validate(obj["state"], "orchestrator_state")
    return obj["state"]


def state_file(op_dir):
    return op_dir / ".orchestrator_state.json"


def complete(op_dir, stage):
    """The real order: the stage check PASSes for the current files, then complete_stage."""
    proc = run_script("validate_stage.py", stage, "--op-dir", op_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ok(op_dir, "complete_stage", "--stage", stage)


def test_help_explains_itself():
    proc = run_script("orchestrator_state.py", "--help")
    assert proc.returncode == 0 and "example:" in proc.stdout and "rollback_to_stage" in proc.stdout


def test_l1_walk_spec_freeze_and_refusals_through_the_cli(op_dir):
    st = ok(op_dir, "init")
    assert st["operator_name"] == "softmax" and st["stage_status"]["1"] == "in_progress"
    assert_one_line_error(cli(op_dir, "complete_stage", "--stage", "1"), 2, "guard:complete_stage.check_pass",
                          "docs/stages/stage1_check.json does not exist")
    st = complete(op_dir, "1")
    assert st["artifact_hashes"]["spec_md"] == hashlib.sha256((op_dir / "SPEC.md").read_bytes()).hexdigest()
    st = ok(op_dir, "record_artifact_hash", "--name", "golden_py")
    golden = hashlib.sha256((op_dir / "softmax_golden.py").read_bytes()).hexdigest()
    assert st["artifact_hashes"]["golden_py"] == golden
    complete(op_dir, "2")
    (op_dir / "SPEC.md").write_text((op_dir / "SPEC.md").read_text() + "\nextra P0 case\n")
    before = state_file(op_dir).read_bytes()
    proc = cli(op_dir, "complete_stage", "--stage", "3")
    assert_one_line_error(proc, 2, "guard:complete_stage.spec_unchanged", ".orchestrator_state.json",
                          "rollback_to_stage 1")
    assert state_file(op_dir).read_bytes() == before
    st = ok(op_dir, "rollback_to_stage", "--target-stage", "1", "--reason", "SPEC changed")
    for stage in ("1", "2", "3"):
        st = complete(op_dir, stage)
    st = ok(op_dir, "plan_stage4", "--module-count", "2", "--is-fusion", "true", "--max-cycles", "4")
    assert st["stage4_path"] == "L1"
    for k in ("1", "2"):
        ok(op_dir, "start_module", "--module", k)
        ok(op_dir, "submit_for_verify", "--module", k)
        if k == "2":
            ok(op_dir, "fail_module", "--module", k, "--failure-category", "precision_failure",
               "--failing-module-boundary", "2", "--last-error", "max_abs_error=0.3")
            ok(op_dir, "submit_for_verify", "--module", k)
        st = ok(op_dir, "complete_module", "--module", k)
    assert st["stage4_modules"]["modules_verified"] == ["1", "12"]
    st = complete(op_dir, "4")
    assert st["current_stage"] == 5 and st["stage_status"]["5"] == "pending"
    assert_one_line_error(cli(op_dir, "start_stage", "--stage", "5"), 2, "guard:start_stage.entry_confirmed")
    st = ok(op_dir, "confirm_stage5_entry", "--authorization", "requested", "--evidence",
            "optimise r64_c4096_fp32 please", "--target-case-ids", "r64_c4096_fp32", "--selection-mode", "user_selected")
    assert st["stage5_entry"]["target_case_ids"] == ["r64_c4096_fp32"]
    ok(op_dir, "start_stage", "--stage", "5")
    assert_one_line_error(cli(op_dir, "rollback_to_stage", "--target-stage", "3", "--reason", "x"), 2,
                          "guard:rollback_to_stage.stage5_not_started")
    assert_one_line_error(cli(op_dir, "complete_stage", "--stage", "5"), 2, "guard:complete_stage.check_pass",
                          "docs/perf/stage5_check.json does not exist")
    show = run_script("orchestrator_state.py", "show", "--op-dir", op_dir)
    assert show.returncode == 0 and "5     in_progress" in show.stdout and "rollback 3->1" in show.stdout
    assert "stage 5 entry: requested" in show.stdout


def test_only_the_orchestrator_may_write(op_dir):
    proc = cli(op_dir, "init", actor=("--actor", "pypto-pro-op-coder"))
    assert_one_line_error(proc, 2, "guard:actor.orchestrator_only", "pypto-pro-op-coder")
    assert not state_file(op_dir).exists()
    assert_one_line_error(cli(op_dir, "init", actor=()), 2, "--actor")


def test_bad_input_is_one_line_and_leaves_the_file(op_dir):
    assert_one_line_error(run_script("orchestrator_state.py", "show", "--op-dir", op_dir), 2, "no state file")
    ok(op_dir, "init")
    assert_one_line_error(cli(op_dir, "plan_stage4", "--module-count", "1", "--is-fusion", "maybe"), 2,
                          "--is-fusion")
    assert_one_line_error(cli(op_dir, "fail_stage", "--stage", "1", "--reason", ""), 2, "guard:fail_stage.reason")
    text = state_file(op_dir).read_text()
    state_file(op_dir).write_text(text.replace('"2.2"', '"2.1"'))
    assert_one_line_error(cli(op_dir, "start_stage", "--stage", "1"), 2, "schema_version")
    state_file(op_dir).write_text(text[:40])
    assert_one_line_error(cli(op_dir, "start_stage", "--stage", "1"), 2, "malformed JSON")
    assert state_file(op_dir).read_text() == text[:40]
    assert_one_line_error(cli(op_dir.parent / "nope", "init"), 2, "operator directory does not exist")


def race(op_dir, argv_list):
    """Start every command at once; return the finished processes."""
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    procs = [subprocess.Popen([sys.executable, str(SCRIPTS / "orchestrator_state.py"), *argv, "--op-dir",
                               str(op_dir), *ACTOR], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for argv in argv_list]
    return [(p, *p.communicate(timeout=120)) for p in procs]


def test_concurrent_callers_lose_nothing_and_respect_guards(op_dir):
    ok(op_dir, "init")
    for stage in ("1", "2", "3"):
        complete(op_dir, stage)
    ok(op_dir, "plan_stage4", "--module-count", "2", "--is-fusion", "true", "--max-cycles", "10")
    starts = race(op_dir, [["start_module", "--module", "1"]] * 6)
    assert sorted(p.returncode for p, _, _ in starts) == [0] + [2] * 5
    assert all("guard:start_module." in err for p, _, err in starts if p.returncode)
    fails = race(op_dir, [["fail_module", "--module", "1", "--failure-category", "runtime_failure"]] * 12)
    codes = sorted(p.returncode for p, _, _ in fails)
    assert codes == [0] * 10 + [2] * 2, [err for _, _, err in fails]
    assert all("guard:fail_module.is_active" in err for p, _, err in fails if p.returncode)
    st = json.loads(state_file(op_dir).read_text())
    schemas.validate(st, "orchestrator_state")
    mods = st["stage4_modules"]
    assert mods["module_retry_count"]["1"] == 10 and mods["module_status"]["1"] == "blocked"
    assert sorted(p.name for p in op_dir.iterdir() if p.name.startswith(".orchestrator_state")) == [
        ".orchestrator_state.json", ".orchestrator_state.json.lock"]
