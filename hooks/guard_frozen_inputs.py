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
- Edit targets are judged as given and after resolving symlinks, with names compared
  case-insensitively (a link to the state file, `.Orchestrator_State.JSON`: the state file).
- Bash: the command is cut into simple commands at ; & | && || and newlines (outside quotes), also
  inside `bash -c`/`sh -c`/`eval` strings, `$(...)` and after `env`/`sudo` prefixes. A simple
  command naming `.orchestrator_state.json` (any case, or through a glob or `$VAR` when it writes)
  is blocked unless it runs orchestrator_state.py; one that writes a script-owned file
  (`PERFORMANCE_CASES.json`, `FROZEN_INPUTS.json`, `GOLDEN_PERF_REPORT.*`) is blocked unless it
  runs the owning script. Inside a subagent (the event carries `agent_id`): orchestrator_state.py
  with any action other than `show` is blocked (SA-2), and so is every command that changes the
  session environment (SA-1): pip/uv/conda/mamba install, activate and the like, `python -m pip`,
  `source …set_env.sh` or an `activate` script, `export`/`unset` of ASCEND_*, TILE_FWK_*,
  PYTHONPATH, LD_LIBRARY_PATH. Shell edits a hook cannot see (a python one-liner building the
  name) are caught by the frozen-input hashes every script re-checks at start
  (scripts/perftune/contract/frozen_inputs.py).
- hooks.json runs this file as `python3 … || exit 2` behind a `command -v python3` test, so a
  missing interpreter or a crash blocks too (Claude Code only blocks on exit 2).

usage:  python3 hooks/guard_frozen_inputs.py < event.json
example event: {"hook_event_name": "PreToolUse", "tool_name": "Edit", "cwd": "/repo",
                "tool_input": {"file_path": "custom/softmax/SPEC.md", "old_string": "a", "new_string": "b"}}
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import sys
from pathlib import Path

STATE_FILE = ".orchestrator_state.json"
MANIFEST = "PERFORMANCE_CASES.json"
SCRIPT_OWNED = {
    MANIFEST: "freeze_cases.py",
    "GOLDEN_PERF_REPORT.json": "collect_golden_reference.py",
    "GOLDEN_PERF_REPORT.md": "collect_golden_reference.py",
    "FROZEN_INPUTS.json": "freeze_cases.py",
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
    """Why an edit of ``path`` must be blocked, or None to allow it.

    Both the path as given and its symlink-resolved target are judged, and names compare
    case-insensitively (a link to the state file, or `.Orchestrator_State.json` on a
    case-insensitive file system, is the state file)."""
    candidates = [path]
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        resolved = path
    if resolved != path:
        candidates.append(resolved)
    for candidate in candidates:
        reason = _name_verdict(candidate, path if candidate == path else f"{path} -> {candidate}")
        if reason:
            return reason
    return None


def _name_verdict(candidate: Path, shown) -> str | None:
    name = candidate.name.casefold()
    if name == STATE_FILE.casefold():
        return (f"{shown}: {STATE_FILE} is written only by orchestrator_state.py, never by a tool "
                "edit (OR-1, SA-2); report the result and let the orchestrator run the action")
    if CHECK_FILE.match(name):
        return (f"{shown}: a stage check verdict is written only by validate_stage.py or stage5_check.py "
                "(complete_stage trusts it); run the check instead")
    owned = {key.casefold(): owner for key, owner in SCRIPT_OWNED.items()}
    if name in owned:
        return (f"{shown}: written only by {owned[name]} and frozen once written (S5-1); "
                "a wrong frozen input is stage5_contract_blocked, not something to edit")
    if any(fnmatch.fnmatchcase(name, pattern.casefold()) for pattern in FROZEN_ONCE_MANIFEST):
        op_dir = frozen_op_dir(candidate)
        if op_dir is not None:
            return (f"{shown}: frozen Stage 5 input ({op_dir / MANIFEST} exists, S5-1); only "
                    "test_<op>.py and the as-built records may change in Stage 5")
    return None


_STATE_ACTION = re.compile(r"orchestrator_state\.py\s+([A-Za-z_]+)")
_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|`[^`]*`|\$\w+")
_WRITES = re.compile(r"(?<![0-9&])>(?!&)|\b(tee|cp|mv|rm|ln|install|truncate|dd|touch|chmod|rsync|patch|unlink)\b"
                     r"|\bsed\b.*\s(-i|--in-place)|\bperl\b.*\s-\w*i|\bpython3?\b.*\s-c\b|\bopen\(")
_WRAPPERS = {"sudo", "exec", "command", "nohup", "time", "nice", "builtin", "xargs"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
_ENV_VARS = re.compile(r"^(ASCEND_\w*|TILE_FWK_\w*|PYTHONPATH|LD_LIBRARY_PATH)$")
_PKG_TOOLS = {"pip", "pip3", "uv", "conda", "mamba", "micromamba", "poetry", "pipx"}
_PKG_ACTIONS = {"install", "uninstall", "activate", "deactivate", "create", "add", "remove", "sync", "update",
                "upgrade", "env", "venv", "download"}
_PIP_READ_ONLY = {"list", "show", "freeze", "check", "--version", "-V", "help", "--help"}
SCRIPT_OWNED_BASH = {STATE_FILE: "orchestrator_state.py", **SCRIPT_OWNED}


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, posix=True)
    except ValueError:  # unbalanced quotes: fall back to whitespace words (still inspected)
        return segment.split()


def _command_words(words: list[str]) -> list[str]:
    """The words from the real command on: skips VAR=value prefixes, env and wrapper words."""
    index = 0
    while index < len(words):
        word = words[index]
        if re.match(r"^\w+=", word) or word in _WRAPPERS:
            index += 1
        elif word == "env":
            index += 1
            while index < len(words) and (words[index].startswith("-") or re.match(r"^\w+=", words[index])):
                index += 1
        else:
            break
    return words[index:]


def _split(command: str) -> list[str]:
    """``command`` cut at ; & | && || and newlines that are outside quotes."""
    parts, current, quote, index = [], [], None, 0
    while index < len(command):
        char = command[index]
        if quote:
            if char == "\\" and quote == '"' and index + 1 < len(command):
                current.append(command[index:index + 2])
                index += 2
                continue
            quote = None if char == quote else quote
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in ";&|\n":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


def segments(command: str, depth: int = 0) -> list[str]:
    """Every simple command in ``command``, also those inside bash -c / sh -c / eval strings."""
    out = []
    for segment in (s.strip() for s in _split(command)):
        if not segment:
            continue
        out.append(segment)
        words = _command_words(_words(segment))
        if depth < 4 and words and Path(words[0]).name in _SHELLS and "-c" in words[1:]:
            inner = words[words.index("-c") + 1:]
            if inner:
                out.extend(segments(inner[0], depth + 1))
        elif depth < 4 and words and words[0] == "eval":
            out.extend(segments(" ".join(words[1:]), depth + 1))
        for sub in re.findall(r"\$\(([^)]*)\)|`([^`]*)`", segment):
            out.extend(segments(sub[0] or sub[1], depth + 1))
    return out


def names_file(segment: str, name: str, *, fuzzy: bool) -> bool:
    """Whether a word of ``segment`` names ``name`` — case-insensitively, and (fuzzy) also through a
    glob or a shell variable that could expand to it (``.orch*``, ``${D}state.json``)."""
    folded = name.casefold()
    for word in _words(segment) or [segment]:
        low = word.casefold()
        if folded in low:
            return True
        if fuzzy:
            base = _EXPANSION.sub("*", low.rstrip("/").rsplit("/", 1)[-1])
            if any(ch in base for ch in "*?[") and base.strip("*") and fnmatch.fnmatchcase(folded, base):
                return True
    return False


def env_change(segment: str) -> str | None:
    """What in ``segment`` changes the session environment (SA-1), or None."""
    words = _command_words(_words(segment))
    if not words:
        return None
    head = words[0] if words[0] in (".", "source") else Path(words[0]).name
    if head in _PKG_TOOLS and any(w in _PKG_ACTIONS for w in words[1:3]):
        return f"{head} {' '.join(words[1:3])}"
    if re.match(r"^python(3(\.\d+)?)?$", head) and "-m" in words:
        module = words[words.index("-m") + 1:words.index("-m") + 3]
        if module and module[0] in ("pip", "venv", "ensurepip") and not (module[1:] and module[1] in _PIP_READ_ONLY):
            return f"python -m {' '.join(module)}"
    if head in ("source", ".") and len(words) > 1 and re.search(r"(set_env\.sh|activate)$", words[1]):
        return f"{head} {words[1]}"
    if head in ("export", "unset", "declare", "typeset"):
        for word in words[1:]:
            if _ENV_VARS.match(word.split("=", 1)[0]):
                return f"{head} {word.split('=', 1)[0]}"
    return None


def bash_verdict(command: str, in_subagent: bool) -> str | None:
    """Why a Bash command must be blocked, or None to allow it."""
    for segment in segments(command):
        runs_state_script = "orchestrator_state.py" in segment
        writes = bool(_WRITES.search(segment))
        if not runs_state_script and names_file(segment, STATE_FILE, fuzzy=writes):
            return (f"the command touches {STATE_FILE} ({segment!r}); use orchestrator_state.py "
                    "(orchestrator only, OR-1) — subagents never read or write the state (SA-2)")
        for name, owner in SCRIPT_OWNED_BASH.items():
            if name != STATE_FILE and writes and owner not in segment and names_file(segment, name, fuzzy=True):
                return (f"the command writes {name} ({segment!r}); only {owner} writes it and it is frozen "
                        "once written (S5-1)")
        if in_subagent:
            if runs_state_script:
                actions = _STATE_ACTION.findall(segment)
                if not actions or any(action != "show" for action in actions):
                    return "subagents never change the pipeline state (SA-2); report to the orchestrator"
            change = env_change(segment)
            if change:
                return (f"SA-1: subagents never change the session environment ({change}); report a "
                        "missing tool or variable as env_error with the raw output")
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
