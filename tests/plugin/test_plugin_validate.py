"""The real Claude Code CLI accepts the plugin: `claude plugin validate --strict` and `plugin details`.

The CLI is installed once per machine with npm into the git-ignored `.tools/claude` folder (a
session fixture). Without npm the test fails with a clear message: the validation is part of the
product's acceptance, never skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT


TOOLS = ROOT / ".tools" / "claude"
CLI = TOOLS / "node_modules" / ".bin" / "claude"
PLUGIN = "pypto-pro-op-orchestrator"
ENV = {**os.environ, "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "CI": "1", "NO_COLOR": "1"}


@pytest.fixture(scope="session")
def claude_cli() -> Path:
    if not CLI.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not on PATH: install Node.js + npm so the suite can fetch "
                        "@anthropic-ai/claude-code into .tools/claude for `claude plugin validate`")
        TOOLS.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([npm, "install", "--prefix", str(TOOLS), "--no-audit", "--no-fund",
                               "--loglevel=error", "@anthropic-ai/claude-code"],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not CLI.exists():
            pytest.fail(f"npm install @anthropic-ai/claude-code into {TOOLS} failed: "
                        f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return CLI


def claude(cli: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json", "plugin"])
def test_claude_plugin_validate_strict_passes(claude_cli, target):
    proc = claude(claude_cli, "plugin", "validate", "--strict", target)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Validation passed" in output and "warning" not in output.lower(), output


def test_plugin_details_lists_every_component_within_the_always_on_budget(claude_cli):
    proc = claude(claude_cli, "--plugin-dir", ".", "plugin", "details", PLUGIN)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    names = [p.stem for p in (ROOT / "agents").glob("*.md")] + \
            [p.parent.name for p in (ROOT / "skills").glob("*/SKILL.md")] + \
            [p.stem for p in (ROOT / "commands").glob("*.md")]
    for name in names:
        assert re.search(rf"\b{re.escape(name)}\b", output), (name, output)
    assert re.search(r"Agents \(6\)", output) and re.search(r"Hooks \(2\)\s+PreToolUse, PostToolUse", output), output
    cost = re.search(r"Always-on:\s+~([\d,]+) tok", output)
    assert cost, output
    tokens = int(cost.group(1).replace(",", ""))
    print(f"\nclaude plugin details: always-on ~{tokens} tokens")
    assert tokens <= 800


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_marketplace_install_from_this_checkout_copies_the_plugin_alone(claude_cli, tmp_path):
    """README's persistent install, from this checkout (with whatever .venv/.tools/demo_work it has)."""
    home = tmp_path / "home"
    env = {**ENV, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    for args in (("plugin", "marketplace", "add", str(ROOT)),
                 ("plugin", "install", f"{PLUGIN}@pypto-pro-op-orchestrator-marketplace")):
        proc = subprocess.run([str(claude_cli), *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    cache = home / ".claude" / "plugins" / "cache"
    [installed] = list(cache.glob(f"*/{PLUGIN}/*"))
    size = folder_bytes(cache)
    print(f"\nplugin cache after marketplace install: {size / 1e6:.2f} MB")
    assert size <= 10 * 1024 * 1024
    for rel in ("hooks/hooks.json", "hooks/guard_frozen_inputs.py", "scripts/stage5_check.py",
                "skills/pypto-pro-op-perf-tune/SKILL.md", "examples/softmax/SPEC.md", ".claude-plugin/plugin.json"):
        assert (installed / rel).is_file() and not (installed / rel).is_symlink(), rel
    assert not any((installed / name).exists() for name in (".venv", ".tools", "demo_work", ".git"))
