"""The real OpenCode client (`opencode-ai`, pinned) loads an `install.py --host opencode` project.

- `opencode agent list`: the six agents as subagents, no configuration error;
- `opencode debug skill`: every skill of the plugin;
- the installed plugin (hooks/opencode/pypto-guard.js) is loaded by the client and blocks a tool
  write of `.orchestrator_state.json` while an ordinary write goes through. The tool call comes from
  a scripted OpenAI-compatible endpoint on localhost (tests/plugin/fake_llm.py): no network, no key.
- the plugin module under node: it fails closed when its interpreter is missing and reads the file
  names of a patch.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from npm_clients import OPENCODE_VERSION, TOOLS, isolated_env, npm_client

NAME = "pypto-pro-op-orchestrator"
AGENTS = sorted(p.stem for p in (ROOT / "agents").glob("*.md"))
SKILLS = sorted(p.parent.name for p in (ROOT / "skills").glob("*/SKILL.md"))
FAKE_LLM = Path(__file__).with_name("fake_llm.py")
HOME = TOOLS / "opencode" / "home"   # the client's own npm installs stay cached between sessions


@pytest.fixture(scope="session")
def opencode() -> Path:
    return npm_client("opencode", "opencode", f"opencode-ai@{OPENCODE_VERSION}")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("oc")
    project = root / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "install.py"), "--host", "opencode",
                           "--dest", str(project)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return project


def run(cli: Path, project: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**isolated_env(HOME), "PWD": str(project)}   # OpenCode reads $PWD
    return subprocess.run([str(cli), *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_agent_list_shows_the_six_subagents_without_a_config_error(opencode, project):
    proc = run(opencode, project, "agent", "list")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "invalid" not in output.lower() and "Error" not in output, output
    listed = re.findall(r"^(pypto-pro-op-[a-z]+) \((\w+)\)$", output, re.M)
    assert sorted(listed) == [(name, "subagent") for name in AGENTS], output


def test_debug_skill_lists_every_skill(opencode, project):
    proc = run(opencode, project, "debug", "skill")
    assert proc.returncode == 0, proc.stderr
    names = {skill["name"] for skill in json.loads(proc.stdout)}
    assert set(SKILLS) <= names, names


def tool_turn(opencode: Path, project: Path, calls: list) -> tuple[subprocess.CompletedProcess, list]:
    """One `opencode run` whose model asks for exactly ``calls``; returns the run and the requests."""
    log = project.parent / "llm_requests.jsonl"
    server = subprocess.Popen([sys.executable, str(FAKE_LLM), str(log), json.dumps(calls)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        config = {"$schema": "https://opencode.ai/config.json", "model": "fake/m", "small_model": "fake/m",
                  "share": "disabled", "autoupdate": False,
                  "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                        "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "x"},
                                        "models": {"m": {"name": "m", "tool_call": True}}}}}
        (project / "opencode.json").write_text(json.dumps(config))
        proc = run(opencode, project, "run", "do the step", timeout=180)
    finally:
        server.terminate()
        server.wait(timeout=10)
        (project / "opencode.json").unlink()
    requests = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, requests


def test_installed_plugin_blocks_a_tool_write_of_the_state_file_and_lets_others_through(opencode, project):
    state, notes = project / ".orchestrator_state.json", project / "notes.txt"
    proc, requests = tool_turn(opencode, project, [
        {"name": "write", "arguments": {"filePath": str(state), "content": "{}"}},
        {"name": "write", "arguments": {"filePath": str(notes), "content": "hello\n"}}])
    output = proc.stdout + proc.stderr
    assert not state.exists(), output
    assert notes.read_text() == "hello\n", output
    seen = "\n".join(str(m.get("content")) for r in requests for m in r.get("messages", [])
                     if m.get("role") == "tool") + output
    assert "blocked:" in seen and "orchestrator_state.py" in seen, seen
    notes.unlink()


NODE_CHECK = r"""
const mod = await import(process.argv[1]);
const hooks = await mod.default({ directory: process.argv[2], client: undefined });
const out = {};
try { await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s" }, { args: { command: "ls" } }); out.bash = "allowed"; }
catch (e) { out.bash = String(e.message); }
out.patch = mod.hookEvents("apply_patch", { patchText: "*** Begin Patch\n*** Update File: a/SPEC.md\n@@\n*** Add File: b.py\n*** End Patch" }, ".");
console.log(JSON.stringify(out));
"""


def test_plugin_module_fails_closed_without_its_interpreter_and_reads_patches(project):
    node = shutil.which("node")
    assert node, "node is not on PATH"
    plugin = project / ".opencode" / "plugins" / f"{NAME}.js"
    env = {**isolated_env(HOME), "PYPTO_PYTHON": "/nonexistent/python3"}
    proc = subprocess.run([node, "--input-type=module", "-e", NODE_CHECK, str(plugin), str(project)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["bash"].startswith("blocked: the guard could not run"), out
    assert [e["tool_input"]["file_path"] for e in out["patch"]] == ["a/SPEC.md", "b.py"]
