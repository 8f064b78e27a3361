"""SKILL.md's procedure commands as templates, and how a run fills them in (pure but for reading).

A step is a fenced block of SKILL.md opened by ```` ```bash step=<key> ```` holding one command line. Placeholders are the UPPER_CASE words of :data:`NAMES`; :func:`fill` replaces
them from the values the earlier steps' JSON produced (``DIR``, ``RUN_ID``, ``BEST_ROUND``, ...):

- a token that is exactly a placeholder: a string replaces it, a list expands to several
  arguments;
- a placeholder inside a token (``DIR/docs/perf/versions/BEST_VERSION``, ``terminal_evidence_BEST_ROUND.json``)
  is replaced as text;
- ``None`` (or an empty list) for one of :data:`OPTIONAL` drops its token together with the ``--flag``
  before it (SKILL: "leave out a flag without a value"; step-values.md names these);
- ``${CLAUDE_PLUGIN_ROOT}`` is the plugin root; ``python`` is the running interpreter.
A placeholder the values do not name, or ``None`` for one that is not optional, is refused with an error
naming the step and the placeholder: a step is never run (or printed) with a value quietly missing.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ContractError

ROOT = Path(__file__).resolve().parents[3]
SKILL_MD = ROOT / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md"
_BLOCK = re.compile(r"^[ \t]*```bash step=([a-z0-9_]+)[ \t]*\n(.*?)\n[ \t]*```", re.M | re.S)
NAMES = ("DIR", "TARGET_IDS", "SELECTION_MODE", "BACKEND", "OP_NAME", "DEVICE", "WARMUP", "REPEATS",
         "NOISE_BAND", "GOLDEN_FILE", "GOLDEN_FUNCTION", "GOLDEN_FACTORY", "SOURCES_DIR",
         "RUN_ID", "BASELINE_ROUND", "BASELINE_COLLECTION", "BEST_VERSION", "BEST_ROUND", "BEST_COLLECTION",
         "ITEM_ID", "TITLE", "HYPOTHESIS", "METRIC", "STATUS", "REASON_CODE", "APPLICABILITY", "GROUNDS",
         "NOTE", "CODE_REF", "QUICK_ID", "FORMAL_IDS", "RELATION", "VERSION_ID", "ROUND", "COMPLIANCE",
         "SCOPE", "EXAMINED", "FINDINGS", "FINAL_ROUND", "CONFIRM_PARTNER", "CONFIRM_ROUND",
         "OVERLAP_ITEM", "SEARCH_ARGS")
# the placeholders whose flag a step leaves out when the value does not exist (step-values.md)
OPTIONAL = frozenset({"SOURCES_DIR", "REASON_CODE", "APPLICABILITY", "GROUNDS", "QUICK_ID", "FORMAL_IDS",
                      "RELATION", "FINDINGS", "CONFIRM_PARTNER"})
# a name is delimited by anything but an upper-case letter or digit, so ``terminal_evidence_BEST_ROUND.json``
# holds BEST_ROUND (``\b`` would not split ``_BEST_ROUND``: #27 Found 7); longest names first
_PLACEHOLDER = re.compile(r"(?<![A-Z0-9])(?:" + "|".join(sorted(NAMES, key=len, reverse=True)) + r")(?![A-Z0-9_])")


@dataclass(frozen=True)
class Skill:
    path: Path
    commands: dict[str, str]
    order: tuple[str, ...]

    def command(self, key: str) -> str:
        if key not in self.commands:
            raise ContractError(self.path, f"step {key}", "has no 'bash step=' command block",
                                "the demo runs only what SKILL.md says; add the step there")
        return self.commands[key]


def parse(text: str, source: str | Path = SKILL_MD) -> Skill:
    """Every ``bash step=<key>`` block, in document order; a key appears once."""
    commands: dict[str, str] = {}
    for match in _BLOCK.finditer(text):
        key, body = match.group(1), match.group(2).strip()
        if key in commands:
            raise ContractError(source, f"step {key}", "has two command blocks", "keep one block per step")
        if "\n" in body:
            raise ContractError(source, f"step {key}", "holds more than one line", "one command per step block")
        commands[key] = body
    return Skill(Path(source), commands, tuple(commands))


def load(path: Path = SKILL_MD) -> Skill:
    return parse(path.read_text(encoding="utf-8"), path)


def placeholders(command: str) -> list[str]:
    return sorted(set(_PLACEHOLDER.findall(command)))


def step_values(values: dict[str, Any], judgement: dict[str, Any], op_dir: str) -> dict[str, Any]:
    """The values of one perf_next step (``decide/next_step.py``): the evidence's ``values``, the
    agent's ``judgement``, ``DIR``; a placeholder none of them names stays missing (:func:`fill` refuses it)."""
    return {**values, **judgement, "DIR": op_dir}


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, (list, tuple)) and not value)


def fill(command: str, values: dict[str, Any], source: str | Path = SKILL_MD, key: str = "-") -> list[str]:
    """argv of ``command`` with its placeholders filled (rules in the module docstring)."""
    names = placeholders(command)
    missing = [p for p in names if p not in values]
    if missing:
        raise ContractError(source, f"step {key}", f"placeholders without a value: {missing}",
                            "the step's values (perf_next) or the agent's judgement must name each")
    empty = [p for p in names if p not in OPTIONAL and _absent(values[p])]
    if empty:
        raise ContractError(source, f"step {key}", f"no value for {empty} (only {sorted(OPTIONAL)} may be "
                            "left out)", "run the step that produces it first, or give the value")
    argv: list[str] = []
    for token in shlex.split(command.replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))):
        inside = placeholders(token)
        if any(_absent(values[p]) for p in inside):   # an optional value that does not exist: no flag
            if argv and argv[-1].startswith("--"):
                argv.pop()
            continue
        if token in values:
            value = values[token]
            argv += [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
            continue
        argv.append(_PLACEHOLDER.sub(lambda m: str(values[m.group(0)]), token))
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv
