"""Hooks as Claude Code runs them: recorded hook-input JSON on stdin, exit 2 + stderr blocks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, freeze_example

HOOKS = ROOT / "hooks"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
GUARD = HOOKS / "guard_frozen_inputs.py"
POST = HOOKS / "stage4_gates_after_edit.py"


def event_text(name: str, op_dir: Path) -> str:
    """A recorded event with its path placeholders pointed at ``op_dir``."""
    text = (FIXTURES / name).read_text()
    for key, value in (("{cwd}", op_dir.parent), ("{op_dir}", op_dir), ("{op_rel}", op_dir.name)):
        text = text.replace(key, json.dumps(str(value))[1:-1])
    json.loads(text)
    return text


def run_hook(script: Path, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script)], input=stdin, capture_output=True,
                          text=True, timeout=200)


def guard(name: str, op_dir: Path) -> subprocess.CompletedProcess:
    return run_hook(GUARD, event_text(name, op_dir))


def assert_blocked(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("blocked: ") and "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


def assert_allowed(proc: subprocess.CompletedProcess) -> None:
    assert (proc.returncode, proc.stderr) == (0, "")


# -- PreToolUse guard ----------------------------------------------------------------------------

def test_subagent_edit_of_state_file_is_blocked(op_dir):
    assert_blocked(guard("pre_edit_state_file_subagent.json", op_dir), "orchestrator_state.py", "SA-2")


def test_tool_write_of_manifest_is_blocked_even_before_freezing(op_dir):
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()
    assert_blocked(guard("pre_write_manifest.json", op_dir), "freeze_cases.py")


def test_spec_edit_allowed_before_freeze_and_blocked_after(op_dir):
    assert_allowed(guard("pre_edit_spec_relative.json", op_dir))
    freeze_example(op_dir)
    assert_blocked(guard("pre_edit_spec_relative.json", op_dir), "SPEC.md", "PERFORMANCE_CASES.json")


def test_frozen_golden_and_nested_kb_selection_are_blocked(op_dir):
    assert_allowed(guard("pre_edit_golden.json", op_dir))
    assert_allowed(guard("pre_write_kb_selection_nested.json", op_dir))
    freeze_example(op_dir)
    assert_blocked(guard("pre_edit_golden.json", op_dir), "softmax_golden_cpu.py")
    assert_blocked(guard("pre_write_kb_selection_nested.json", op_dir), "KB_SELECTION.json")


def test_a_stage_check_verdict_is_never_written_by_a_tool(op_dir):
    assert_blocked(guard("pre_write_stage_check.json", op_dir), "stage4_check.json", "validate_stage.py")


def test_normal_edits_stay_allowed_after_freeze(op_dir):
    freeze_example(op_dir)
    assert_allowed(guard("pre_multiedit_test.json", op_dir))
    assert_allowed(guard("pre_read_spec.json", op_dir))


def test_bash_write_to_state_file_is_blocked(op_dir):
    assert_blocked(guard("pre_bash_state_redirect.json", op_dir), ".orchestrator_state.json")


def test_state_script_is_for_the_main_thread_only(op_dir):
    assert_blocked(guard("pre_bash_state_script_subagent.json", op_dir), "SA-2")
    assert_allowed(guard("pre_bash_state_script_main.json", op_dir))


def test_subagent_may_show_state_through_the_script(op_dir):
    event = json.loads(event_text("pre_bash_state_script_subagent.json", op_dir))
    event["tool_input"]["command"] = f"python orchestrator_state.py show --op-dir {op_dir}"
    assert_allowed(run_hook(GUARD, json.dumps(event)))


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_name": "Edit", "tool_input": 7}'])
def test_guard_fails_closed_on_unreadable_input(stdin):
    proc = run_hook(GUARD, stdin)
    assert proc.returncode == 2 and "blocked:" in proc.stderr and "Traceback" not in proc.stderr


# -- PostToolUse Stage 4 gates -------------------------------------------------------------------

def test_gates_pass_silently_after_a_clean_edit(op_dir):
    proc = run_hook(POST, event_text("post_edit_test.json", op_dir))
    assert (proc.returncode, proc.stderr) == (0, "")


def test_gate_violation_is_reported_to_the_model(op_dir):
    test_file = op_dir / "test_softmax.py"
    source = test_file.read_text()
    assert source.count("    softmax_kernel(x, out)\n") == 1
    test_file.write_text(source.replace("    softmax_kernel(x, out)\n",
                                        "    softmax_kernel(x, out)\n    softmax_kernel(x, out)\n"))
    proc = run_hook(POST, event_text("post_edit_test.json", op_dir))
    assert proc.returncode == 2, proc.stderr
    assert "FAIL single_launch [cheating]" in proc.stderr
    assert "primary failure_category: cheating" in proc.stderr


def test_other_files_do_not_trigger_the_gates(op_dir):
    (op_dir / "test_softmax.py").write_text("broken(")      # would fail if the gates ran
    proc = run_hook(POST, event_text("post_write_spec.json", op_dir))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_missing_gate_script_is_said_not_crashed(op_dir, tmp_path):
    plugin = tmp_path / "plugin"
    (plugin / "hooks").mkdir(parents=True)
    shutil.copy(POST, plugin / "hooks" / POST.name)
    proc = run_hook(plugin / "hooks" / POST.name, event_text("post_edit_test.json", op_dir))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "NOT run" in proc.stderr and "stage4_gates.py is missing" in proc.stderr


# -- hooks.json ----------------------------------------------------------------------------------

def test_hooks_json_wraps_events_and_points_at_existing_scripts():
    config = json.loads((HOOKS / "hooks.json").read_text())
    assert set(config) == {"description", "hooks"} and config["description"]
    assert set(config["hooks"]) == {"PreToolUse", "PostToolUse"}
    pre = config["hooks"]["PreToolUse"][0]
    assert {"Edit", "Write", "MultiEdit"} <= set(pre["matcher"].split("|"))
    assert config["hooks"]["PostToolUse"][0]["matcher"] == "Edit|Write|MultiEdit"
    for entries in config["hooks"].values():
        for entry in entries:
            for hook in entry["hooks"]:
                assert hook["type"] == "command" and hook["timeout"] > 0
                rel = hook["command"].split("${CLAUDE_PLUGIN_ROOT}/", 1)[1].split('"')[0]
                assert (ROOT / rel).is_file(), rel
