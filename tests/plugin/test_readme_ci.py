"""README gives exactly two set-up commands, and .ci/run runs the README's test command."""

import re
import tomllib

from conftest import ROOT


def _setup_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up: the two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


def test_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2
    assert all("\n" not in c.strip() for c in commands)
    assert "scripts/demo.py" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci
    assert _setup_commands()[1].strip() in ci.splitlines()


def test_ci_installs_the_extras_it_tests_with_torch_pinned_to_the_cpu_build():
    """CI runs the pypto-sim backend for real; torch is pinned exactly (a range pulls a multi-GB CUDA build)."""
    command = _setup_commands()[1].strip()
    assert "'.[test,pypto-sim,autotune]'" in command
    chinese = (ROOT / "README.zh-CN.md").read_text()
    assert command in chinese.splitlines()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    torch = [r for r in extras["pypto-sim"] if r.startswith("torch")]
    assert torch == ["torch==2.13.0"] and "pypto==0.2.0" in extras["pypto-sim"]


def _table_scripts(name: str, heading: str) -> set[str]:
    """The script names in the script column (the second) of every table row of a README section."""
    text = (ROOT / name).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ") and line.count("|") >= 3]
    return {s for row in rows for s in re.findall(r"`([a-z0-9_]+\.py)", row)}


def test_the_readme_script_tables_name_every_cli_in_scripts():
    """#38 Deliver 4: the README's (and README.zh-CN.md's) script tables list exactly the CLIs of scripts/."""
    clis = {p.name for p in (ROOT / "scripts").glob("*.py")}
    assert len(clis) >= 25
    assert _table_scripts("README.md", "## The Stage 5 flow and its scripts") == clis
    assert _table_scripts("README.zh-CN.md", "## 第 5 阶段流程") == clis
