"""Commands grant only what they run: scoped `Bash(...)` patterns (Claude Code permission syntax),
one interpreter name (`python3`) in commands and hooks, and /perf-demo passes `$ARGUMENTS` on."""

from __future__ import annotations

import fnmatch
import re

import pytest
import yaml

from conftest import ROOT

COMMANDS = sorted((ROOT / "commands").glob("*.md"))
RUNS = re.compile(r"^\s*(python3? \$\{CLAUDE_PLUGIN_ROOT\}/scripts/\S+\.py.*)$", re.M)


def frontmatter(path):
    return yaml.safe_load(path.read_text().split("---\n")[1])


def bash_patterns(path):
    tools = [t.strip() for t in re.split(r",\s*(?![^()]*\))", frontmatter(path)["allowed-tools"])]
    assert "Bash" not in tools, f"{path.name}: unscoped Bash"
    return [t[5:-1] for t in tools if t.startswith("Bash(")]


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.name)
def test_every_script_a_command_runs_is_granted_and_nothing_more(path):
    patterns = bash_patterns(path)
    body = path.read_text().split("---\n", 2)[2]
    runs = RUNS.findall(body)
    for line in runs:
        concrete = line.replace("${CLAUDE_PLUGIN_ROOT}", "/home/u/.claude/plugins/cache/m/p/0.2.0") \
                       .replace("$ARGUMENTS", "--workdir /tmp/w --keep")
        assert any(fnmatch.fnmatchcase(concrete, p) for p in patterns), (path.name, concrete, patterns)
    scripts = {re.search(r"scripts/(\w+\.py)", line).group(1) for line in runs}
    for pattern in patterns:
        named = re.search(r"scripts/(\w+\.py)", pattern)
        assert named is None or named.group(1) in scripts or path.name == "pypto-pro-op.md", (path.name, pattern)


PROMPTS_AND_DOCS = sorted({*COMMANDS, *(ROOT / "agents").glob("*.md"), *(ROOT / "skills").rglob("*.md"),
                           *(ROOT / "references").glob("*.md"), *(ROOT / "docs").glob("*.md"),
                           ROOT / "README.md", ROOT / "README.zh-CN.md", *(ROOT / "hooks").rglob("*.json"),
                           *(ROOT / "hooks").rglob("*.js"), *(ROOT / "scripts").glob("*.py")})
SHELL_PYTHON = re.compile(r"(?<![\w/.-])python (?=\$\{CLAUDE_PLUGIN_ROOT\}|scripts/|benchmarks/|-m |custom/|<path>)")


@pytest.mark.parametrize("path", PROMPTS_AND_DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_one_interpreter_name(path):
    """Every command line shown or run says `python3` (stock Debian/Ubuntu have no `python`)."""
    bad = [line.strip() for line in path.read_text().splitlines() if SHELL_PYTHON.search(line)]
    assert not bad, bad


def test_perf_demo_passes_its_arguments_to_the_demo():
    body = (ROOT / "commands" / "perf-demo.md").read_text()
    [line] = [l for l in RUNS.findall(body) if "demo.py" in l]
    assert line.rstrip().endswith("$ARGUMENTS"), line
    assert "--workdir demo_work" in body
