"""Hooks as Claude Code runs them: recorded hook-input JSON on stdin, exit 2 + stderr blocks."""

from __future__ import annotations

import json
import os
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


# -- hooks that hold (#16.7) ---------------------------------------------------------------------

def bash_event(command: str, cwd: Path, subagent: bool) -> str:
    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(cwd),
             "tool_input": {"command": command}}
    if subagent:
        event["agent_id"] = "agent-1"
    return json.dumps(event)


@pytest.mark.parametrize("command", [
    "pip install numpy", "python3 -m pip install --user scipy", "uv pip install torch",
    "conda activate py311", "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
    ". .venv/bin/activate", "export ASCEND_RT_VISIBLE_DEVICES=3", "export PYTHONPATH=/x",
    "export LD_LIBRARY_PATH=/opt/lib:$LD_LIBRARY_PATH", "export TILE_FWK_DEVICE_ID=1",
    "bash -c 'pip install numpy'", "sh -c \"export PYTHONPATH=/x; python3 t.py\"",
    "env FOO=1 pip install numpy", "ls; conda install -y numpy", "true && source set_env.sh"])
def test_subagent_environment_changes_are_blocked_with_sa1(tmp_path, command):
    assert_blocked(run_hook(GUARD, bash_event(command, tmp_path, subagent=True)), "SA-1")


@pytest.mark.parametrize("command", [
    "python3 -m pip list", "export FOO=1", "python3 /p/scripts/check_correctness.py --op-dir x --json 2>&1 | tail -3",
    "PYTHONPATH=. python3 -c 'print(1)'", "pip show numpy"])
def test_subagent_ordinary_commands_stay_allowed(tmp_path, command):
    assert_allowed(run_hook(GUARD, bash_event(command, tmp_path, subagent=True)))


def test_the_orchestrator_may_set_up_the_environment(tmp_path):
    assert_allowed(run_hook(GUARD, bash_event("pip install numpy", tmp_path, subagent=False)))


@pytest.mark.parametrize("command", [
    "python3 /p/scripts/orchestrator_state.py show --op-dir x; echo {} > x/.orchestrator_state.json",
    "cat > custom/x/.orch*.json", "F=.orchestrator_; echo {} > custom/x/${F}state.json",
    "bash -c 'echo {} > custom/x/.ORCHESTRATOR_STATE.JSON'", "echo $(cat custom/x/.orchestrator_state.json)",
    "cp /tmp/m.json custom/x/PERFORMANCE_CASES.json", "sed -i s/42/7/ custom/x/performance_cases.JSON",
    "rm custom/x/FROZEN_INPUTS.json"])
def test_shell_evasions_of_the_state_file_and_manifest_are_blocked(tmp_path, command):
    assert_blocked(run_hook(GUARD, bash_event(command, tmp_path, subagent=False)))


@pytest.mark.parametrize("command", ["ls docs/perf/*.json", "cat custom/x/PERFORMANCE_CASES.json",
                                     "python3 /p/scripts/freeze_cases.py freeze --op-dir x > log.txt"])
def test_reading_and_the_owning_scripts_stay_allowed(tmp_path, command):
    assert_allowed(run_hook(GUARD, bash_event(command, tmp_path, subagent=False)))


def edit_event(path: Path) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": str(path.parent),
                       "tool_input": {"file_path": str(path), "content": "{}"}})


def test_a_symlink_to_the_state_file_or_manifest_is_the_file_itself(op_dir):
    freeze_example(op_dir)
    (op_dir / ".orchestrator_state.json").write_text("{}")
    for target in (".orchestrator_state.json", "PERFORMANCE_CASES.json", "SPEC.md"):
        link = op_dir / f"innocent_{target.lower()}.txt"
        link.symlink_to(op_dir / target)
        assert_blocked(run_hook(GUARD, edit_event(link)), target)


def test_case_variants_of_protected_names_are_blocked(op_dir):
    freeze_example(op_dir)
    for name in (".Orchestrator_State.JSON", "performance_cases.json", "spec.md"):
        assert_blocked(run_hook(GUARD, edit_event(op_dir / name)))


def hook_commands() -> list[str]:
    config = json.loads((HOOKS / "hooks.json").read_text())
    return [h["command"] for entries in config["hooks"].values() for e in entries for h in e["hooks"]]


@pytest.mark.parametrize("index", [0, 1])
def test_hooks_fail_closed_without_their_interpreter(tmp_path, op_dir, index):
    """The command as Claude Code runs it (through sh), with no python3 on PATH: exit 2, a reason."""
    command = hook_commands()[index]
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {"PATH": str(empty_bin), "CLAUDE_PLUGIN_ROOT": str(ROOT)}
    proc = subprocess.run(["/bin/sh", "-c", command], input=event_text("post_edit_test.json", op_dir),
                          capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 2 and "python3 is not on PATH" in proc.stderr, (proc.returncode, proc.stderr)


def test_hook_commands_block_when_the_script_crashes(tmp_path):
    """Any non-zero exit of the guard becomes 2 (Claude Code only blocks on 2)."""
    fake = tmp_path / "plugin" / "hooks"
    fake.mkdir(parents=True)
    (fake / "guard_frozen_inputs.py").write_text("raise SystemExit(1)\n")
    env = {**os.environ, "CLAUDE_PLUGIN_ROOT": str(tmp_path / "plugin")}
    proc = subprocess.run(["/bin/sh", "-c", hook_commands()[0]], input="{}", capture_output=True, text=True,
                          env=env, timeout=30)
    assert proc.returncode == 2
