#!/usr/bin/env python3
"""PreToolUse hook: keep the state file and the frozen Stage 5 inputs out of reach of tool edits.

Reads the Claude Code hook event (JSON) on stdin. Exit 0 allows the call; exit 2 blocks it and the
one-line reason on stderr goes back to the model (Claude Code hook semantics: any other exit code
would *not* block, so every unexpected failure here also exits 2 — the gate fails closed).

Rules (owners: references/orchestration.md OR-1/SA-2, skill pypto-pro-op-perf-tune S5-1):
- Edit/Write/MultiEdit/NotebookEdit of `.orchestrator_state.json`: always blocked; only
  scripts/orchestrator_state.py writes it.
- Same tools on `PERFORMANCE_CASES.json` or `GOLDEN_PERF_REPORT.json/.md`: always blocked; they
  are written only by freeze_cases.py and collect_golden_reference.py and are frozen once written.
- Same tools on a stage check verdict `stage<N>_check.json` (N = 1..5): always blocked; only
  validate_stage.py and stage5_check.py write them, and complete_stage trusts them.
- Same tools on `SPEC.md`, `KB_SELECTION.json`, `module_interfaces.yaml` or `*_golden*.py`:
  blocked once a `PERFORMANCE_CASES.json` exists in the operator directory (the nearest ancestor
  directory of the file that holds one, up to four levels up).
- Bash: a command naming `.orchestrator_state.json` is blocked unless it runs orchestrator_state.py;
  inside a subagent (the event carries `agent_id`) running orchestrator_state.py with any action
  other than `show` is blocked too (SA-2). Shell writes to other frozen files are not parsed here;
  the verifier's hash checks catch them.

usage:  python3 hooks/guard_frozen_inputs.py < event.json
example event: {"hook_event_name": "PreToolUse", "tool_name": "Edit", "cwd": "/repo",
                "tool_input": {"file_path": "custom/softmax/SPEC.md", "old_string": "a", "new_string": "b"}}
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from pathlib import Path

STATE_FILE = ".orchestrator_state.json"
MANIFEST = "PERFORMANCE_CASES.json"
SCRIPT_OWNED = {
    MANIFEST: "freeze_cases.py",
    "GOLDEN_PERF_REPORT.json": "collect_golden_reference.py",
    "GOLDEN_PERF_REPORT.md": "collect_golden_reference.py",
}
CHECK_FILE = re.compile(r"^stage[1-5]_check\.json$")   # verdicts: validate_stage.py / stage5_check.py only
FROZEN_ONCE_MANIFEST = ("SPEC.md", "KB_SELECTION.json", "module_interfaces.yaml", "*_golden*.py")
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
ANCESTOR_LEVELS = 4


def target_path(event: dict) -> Path | None:
    """The file an edit tool is about to write, absolute (relative paths resolve against cwd)."""
    tool_input = event.get("tool_input") or {}
    raw = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not raw:
        return None
    path = Path(raw)
    return path if path.is_absolute() else Path(event.get("cwd") or ".") / path


def frozen_op_dir(path: Path) -> Path | None:
    """The nearest ancestor (up to ANCESTOR_LEVELS) holding a frozen manifest, if any."""
    for level, parent in enumerate(path.parents):
        if level >= ANCESTOR_LEVELS:
            break
        if (parent / MANIFEST).is_file():
            return parent
    return None


def edit_verdict(path: Path) -> str | None:
    """Why an edit of ``path`` must be blocked, or None to allow it."""
    name = path.name
    if name == STATE_FILE:
        return (f"{path}: {STATE_FILE} is written only by orchestrator_state.py, never by a tool "
                "edit (OR-1, SA-2); report the result and let the orchestrator run the action")
    if CHECK_FILE.match(name):
        return (f"{path}: a stage check verdict is written only by validate_stage.py or stage5_check.py "
                "(complete_stage trusts it); run the check instead")
    if name in SCRIPT_OWNED:
        return (f"{path}: written only by {SCRIPT_OWNED[name]} and frozen once written (S5-1); "
                "a wrong frozen input is stage5_contract_blocked, not something to edit")
    if any(fnmatch.fnmatch(name, pattern) for pattern in FROZEN_ONCE_MANIFEST):
        op_dir = frozen_op_dir(path)
        if op_dir is not None:
            return (f"{path}: frozen Stage 5 input ({op_dir / MANIFEST} exists, S5-1); only "
                    "test_<op>.py and the as-built records may change in Stage 5")
    return None


_STATE_ACTION = re.compile(r"orchestrator_state\.py\s+([A-Za-z_]+)")


def bash_verdict(command: str, in_subagent: bool) -> str | None:
    """Why a Bash command must be blocked, or None to allow it."""
    runs_script = "orchestrator_state.py" in command
    if STATE_FILE in command and not runs_script:
        return (f"the command touches {STATE_FILE}; use orchestrator_state.py (orchestrator only, "
                "OR-1) — subagents never read or write the state (SA-2)")
    if in_subagent and runs_script:
        actions = _STATE_ACTION.findall(command)
        if not actions or any(action != "show" for action in actions):
            return "subagents never change the pipeline state (SA-2); report to the orchestrator"
    return None


def decide(event: dict) -> str | None:
    """The block reason for one PreToolUse event, or None to allow it (pure apart from is_file)."""
    tool = event.get("tool_name", "")
    if tool in EDIT_TOOLS:
        path = target_path(event)
        return edit_verdict(path) if path is not None else None
    if tool == "Bash":
        command = (event.get("tool_input") or {}).get("command") or ""
        return bash_verdict(command, in_subagent=bool(event.get("agent_id")))
    return None


def main() -> int:
    try:
        event = json.loads(sys.stdin.read() or "null")
        if not isinstance(event, dict):
            raise ValueError("hook input is not a JSON object")
        reason = decide(event)
    except Exception as exc:  # fail closed: a broken gate must not let edits through
        print(f"blocked: guard_frozen_inputs could not decide ({exc}); check the hook input",
              file=sys.stderr)
        return 2
    if reason is None:
        return 0
    print(f"blocked: {reason}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
