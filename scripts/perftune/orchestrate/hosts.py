"""Per-host rendering of agents and commands: each host gets its own documented file format.

The plugin's sources are written in Claude Code's format (agents/*.md, commands/*.md with YAML
frontmatter, skills/<name>/SKILL.md). Other hosts reject or ignore parts of it, so
``scripts/install.py`` translates frontmatter and file names here. The conventions and their
sources are listed in docs/hosts.md; in short:

- claude:   the sources as they are (agents/, commands/, skills/ under .claude).
- opencode: agents with ``mode: subagent``, a hex colour, ``permission`` instead of a tool list and
  no ``model: inherit``; commands keep ``$ARGUMENTS``; a JS plugin holds the hard gates.
- copilot:  ``.github/agents/<name>.agent.md`` (tool aliases), ``.github/prompts/<name>.prompt.md``
  with ``${input:arguments}``; the payload lives outside .github (in .copilot/, ignored by git).
- cursor:   ``.cursor/agents`` subagents (``readonly`` for the verifier), plain-markdown commands.
- trae, codearts: agents and skills only (no documented command folder); prompt-only.
Skills use the shared Agent Skills format (SKILL.md) everywhere and are copied unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ..errors import ContractError

# Claude Code colour names -> hex (OpenCode accepts ^#[0-9a-fA-F]{6}$ or a theme colour name).
HEX_COLOURS = {"red": "#E06C75", "green": "#98C379", "yellow": "#E5C07B", "blue": "#61AFEF",
               "magenta": "#C678DD", "cyan": "#56B6C2", "purple": "#C678DD", "orange": "#D19A66",
               "pink": "#FF79C6"}
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
ARGUMENTS = "$ARGUMENTS"


@dataclass(frozen=True)
class Layout:
    """Where one host reads things, relative to the project (or home) directory."""
    payload: tuple[str, str]          # (project, global) folder holding <plugin>/ and the manifest
    discovery: tuple[str, str]        # (project, global) folder holding agents/commands/skills
    agent: str | None                 # file pattern for an agent, {name}
    command: str | None               # file pattern for a command, {name}; None: not installed
    command_global: bool = True       # commands also installed at global level
    plugin: str | None = None         # file pattern of the hook plugin, {name}
    ignore_payload: bool = False      # write a .gitignore '*' into the payload folder


LAYOUTS: dict[str, Layout] = {
    "claude": Layout((".claude", ".claude"), (".claude", ".claude"), "agents/{name}.md", "commands/{name}.md"),
    "opencode": Layout((".opencode", ".config/opencode"), (".opencode", ".config/opencode"),
                       "agents/{name}.md", "commands/{name}.md", plugin="plugins/{name}.js"),
    "cursor": Layout((".cursor", ".cursor"), (".cursor", ".cursor"), "agents/{name}.md", "commands/{name}.md"),
    "trae": Layout((".trae", ".trae"), (".trae", ".trae"), "agents/{name}.md", None),
    "copilot": Layout((".copilot", ".copilot"), (".github", ".copilot"), "agents/{name}.agent.md",
                      "prompts/{name}.prompt.md", command_global=False, ignore_payload=True),
    "codearts": Layout((".codeartsdoer", ".codeartsdoer"), (".codeartsdoer", ".codeartsdoer"),
                       "agents/{name}.md", None),
}

_FRONTMATTER = re.compile(r"\A---\n(?P<head>.*?)\n---\n(?P<body>.*)\Z", re.S)


def split(text: str, source: str) -> tuple[dict, str]:
    """(frontmatter mapping, body) of a markdown file with YAML frontmatter."""
    match = _FRONTMATTER.match(text)
    if match is None:
        raise ContractError(source, "frontmatter", "missing '---' block", "start the file with YAML frontmatter")
    try:
        head = yaml.safe_load(match.group("head"))
    except yaml.YAMLError as exc:
        raise ContractError(source, "frontmatter", f"not YAML ({str(exc).splitlines()[0]})", "fix the YAML") from None
    if not isinstance(head, dict):
        raise ContractError(source, "frontmatter", "not a mapping", "use key: value lines")
    return head, match.group("body")


def join(head: dict, body: str) -> str:
    dumped = yaml.safe_dump(head, sort_keys=False, allow_unicode=True, width=100000).rstrip("\n")
    return f"---\n{dumped}\n---\n{body}"


def short_description(description: str) -> str:
    """The description without Claude Code's <example> blocks, on one line."""
    text = re.sub(r"<example>.*?</example>", "", str(description), flags=re.S)
    return " ".join(text.split())


def _tools(head: dict) -> list[str]:
    raw = head.get("tools") or ""
    return [t.strip() for t in (raw.split(",") if isinstance(raw, str) else raw) if str(t).strip()]


def _read_only(head: dict) -> bool:
    tools = _tools(head)
    return bool(tools) and not any(tool in tools for tool in EDIT_TOOLS)


def render_agent(host: str, name: str, text: str) -> str:
    head, body = split(text, f"agents/{name}.md")
    if host == "claude":
        return text
    description = short_description(head.get("description", ""))
    if host == "opencode":
        out = {"description": description, "mode": "subagent"}
        colour = str(head.get("color", "")).lower()
        if colour in HEX_COLOURS:
            out["color"] = HEX_COLOURS[colour]
        if _read_only(head):
            out["permission"] = {"edit": "deny"}
        return join(out, body)
    if host == "copilot":
        out = {"name": name, "description": description}
        if _read_only(head):
            out["tools"] = ["read", "search", "execute"]
        return join(out, body)
    if host == "cursor":
        out = {"name": name, "description": description, "model": "inherit"}
        if _read_only(head):
            out["readonly"] = True
        return join(out, body)
    return join({"name": name, "description": description}, body)


def render_command(host: str, name: str, text: str) -> str:
    head, body = split(text, f"commands/{name}.md")
    if host == "claude":
        return text
    description = str(head.get("description", ""))
    if host == "opencode":
        return join({"description": description}, body)
    if host == "copilot":
        out = {"description": description, "agent": "agent"}
        if head.get("argument-hint"):
            out["argument-hint"] = str(head["argument-hint"])
        return join(out, body.replace(ARGUMENTS, "${input:arguments}"))
    # cursor: commands are plain markdown; the text typed after the command follows the prompt.
    return f"<!-- {description} -->\n" + body.replace(ARGUMENTS, "(the text typed after the command)")
