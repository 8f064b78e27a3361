#!/usr/bin/env python3
"""PostToolUse hook: after an edit of test_<op>.py, run the Stage 4 static gates and report.

Reads the Claude Code hook event (JSON) on stdin. Only Edit/Write/MultiEdit of a file named
`test_<op>.py` whose directory holds a `SPEC.md` (an operator directory) triggers the check:
`python3 scripts/stage4_gates.py --op-dir DIR --op <op> --json` of this plugin.
- gates pass (exit 0): silent, exit 0;
- a gate FAILs or is blocked, or the gates cannot run (script missing, contract error, timeout):
  the summary goes to stderr with exit 2, which Claude Code feeds back to the model (the edit has
  already happened; nothing is undone). The hook never claims the gates ran when they did not.
- any other file or tool: exit 0 without output.

usage:  python3 hooks/stage4_gates_after_edit.py < event.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

GATES_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "stage4_gates.py"
EDIT_TOOLS = ("Edit", "Write", "MultiEdit")
TEST_NAME = re.compile(r"^test_(?P<op>[A-Za-z0-9_]+)\.py$")
TIMEOUT_S = 150


def watched_test(event: dict) -> tuple[Path, str] | None:
    """(operator dir, op name) when the event edits an operator's test_<op>.py, else None."""
    if event.get("tool_name") not in EDIT_TOOLS:
        return None
    raw = (event.get("tool_input") or {}).get("file_path")
    if not raw:
        return None
    path = Path(raw)
    path = path if path.is_absolute() else Path(event.get("cwd") or ".") / path
    match = TEST_NAME.match(path.name)
    if match is None or not (path.parent / "SPEC.md").is_file():
        return None
    return path.parent, match.group("op")


def summarise(report: dict) -> str:
    """One line per FAIL or blocked gate, from the stage4_gates.py JSON."""
    lines = [f"Stage 4 static gates {report.get('status', '?')} for {report.get('operator', '?')}"
             f" (primary failure_category: {report.get('primary_failure_category')})"]
    for gate in report.get("gates", []):
        if gate.get("status") in ("FAIL", "blocked"):
            lines.append(f"  {gate['status']} {gate.get('id')} [{gate.get('category')}]: {gate.get('reason')}")
    return "\n".join(lines)


def run_gates(op_dir: Path, op: str, gates_script: Path = GATES_SCRIPT) -> tuple[int, str]:
    """(hook exit code, message) for one operator directory."""
    if not gates_script.is_file():
        return 2, (f"Stage 4 static gates NOT run: {gates_script} is missing from the plugin; "
                   "treat the gates as unchecked")
    try:
        proc = subprocess.run([sys.executable, str(gates_script), "--op-dir", str(op_dir), "--op", op,
                               "--json"], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 2, f"Stage 4 static gates NOT run: timed out after {TIMEOUT_S} s on {op_dir}"
    if proc.returncode == 0:
        return 0, ""
    try:
        return 2, summarise(json.loads(proc.stdout))
    except (ValueError, RecursionError, AttributeError, KeyError, TypeError):
        detail = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        return 2, f"Stage 4 static gates could not run (exit {proc.returncode}): {detail}"


def main() -> int:
    try:
        event = json.loads(sys.stdin.read() or "null")
    except (ValueError, RecursionError) as exc:
        print(f"Stage 4 static gates NOT run: hook input is not usable JSON ({type(exc).__name__})",
              file=sys.stderr)
        return 2
    target = watched_test(event) if isinstance(event, dict) else None
    if target is None:
        return 0
    code, message = run_gates(*target)
    if message:
        print(message, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
