"""scripts/install.py into temp dirs: copies and renders, backs up instead of overwriting, uninstalls."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, run_script, tree_digest
from perftune.orchestrate import install as installer
from perftune.fsio import sha256_file

NAME = "pypto-pro-op-orchestrator"
META = json.loads((ROOT / "plugin.json").read_text())


def install(dest: Path, host: str = "claude", *extra: str):
    proc = run_script("install.py", "--host", host, "--dest", dest, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def uninstall(dest: Path, host: str = "claude", *extra: str):
    proc = run_script("install.py", "--host", host, "--dest", dest, "--uninstall", "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_project_install_copies_renders_and_records(tmp_path):
    manifest = install(tmp_path)
    root = tmp_path / ".claude"
    brand = root / NAME
    assert manifest["brand_dir"] == brand.as_posix() and manifest["tool"] == "claude"
    assert manifest["installed_agents"] == sorted(Path(a).stem for a in META["agents"])
    assert manifest["installed_skills"] == ["pypto-docs-search", "pypto-pro-environment-check", "pypto-pro-golden-generate",
                                           "pypto-pro-op-design", "pypto-pro-op-develop", "pypto-pro-op-perf-tune",
                                           "pypto-pro-op-plan"]
    on_disk = json.loads((root / "cannbot-manifest.json").read_text())
    assert on_disk == manifest and len(manifest["files"]) == len({f["path"] for f in manifest["files"]})
    for rel in ("agents/pypto-pro-op-optimizer.md", "skills/pypto-pro-op-perf-tune/SKILL.md",
                "commands/pypto-pro-op.md", f"{NAME}/references/orchestration.md",
                f"{NAME}/examples/softmax/SPEC.md", f"{NAME}/platforms/atlas-a2-910b.json",
                f"{NAME}/scripts/freeze_cases.py", f"{NAME}/schemas/performance_cases.schema.json",
                f"{NAME}/hooks/guard_frozen_inputs.py",
                f"{NAME}/skills/pypto-pro-op-perf-tune/references/templates/row_strip_pipeline.py.tmpl"):
        assert (root / rel).is_file(), rel
    assert not list(root.rglob("__pycache__"))
    for md in root.rglob("*.md"):
        assert "${CLAUDE_PLUGIN_ROOT}" not in md.read_text(), md
    skill = (root / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md").read_text()
    assert re.search(rf"python3? {re.escape(brand.as_posix())}/scripts/check_correctness.py --op-dir DIR --json", skill)
    for record in manifest["files"]:
        assert sha256_file(tmp_path / record["path"]) == record["sha256"], record


def test_installed_scripts_run_from_the_install_root(tmp_path):
    install(tmp_path)
    script = tmp_path / ".claude" / NAME / "scripts" / "freeze_cases.py"
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "PERFORMANCE_CASES.json" in proc.stdout


def test_existing_files_are_backed_up_and_restored(tmp_path):
    agent = tmp_path / ".claude" / "agents" / "pypto-pro-op-coder.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("my own coder agent\n")
    (tmp_path / ".claude" / "settings.json").write_text("{}\n")
    before = tree_digest(tmp_path)
    manifest = install(tmp_path)
    [record] = [f for f in manifest["files"] if f["path"] == ".claude/agents/pypto-pro-op-coder.md"]
    assert re.fullmatch(r"\.claude/agents/pypto-pro-op-coder\.md\.bak\.\d{8}T\d{6}Z", record["backup"])
    assert (tmp_path / record["backup"]).read_text() == "my own coder agent\n"
    assert sum(1 for f in manifest["files"] if f["backup"]) == 1
    result = uninstall(tmp_path)
    assert result["restored"] == [".claude/agents/pypto-pro-op-coder.md"] and result["kept_modified"] == []
    assert tree_digest(tmp_path) == before


def test_reinstall_is_an_update_not_a_pile_of_backups(tmp_path):
    first = install(tmp_path)
    second = install(tmp_path)
    assert [f["path"] for f in first["files"]] == [f["path"] for f in second["files"]]
    assert not any(f["backup"] for f in second["files"])
    assert not list(tmp_path.rglob("*.bak.*"))
    uninstall(tmp_path)
    assert tree_digest(tmp_path) == {}


def test_files_edited_after_install_are_kept_on_uninstall(tmp_path):
    install(tmp_path)
    edited = tmp_path / ".claude" / "agents" / "pypto-pro-op-planner.md"
    edited.write_text("local notes\n")
    result = uninstall(tmp_path)
    assert result["kept_modified"] == [".claude/agents/pypto-pro-op-planner.md"]
    assert tree_digest(tmp_path) == {".claude/agents/pypto-pro-op-planner.md": b"local notes\n"}


@pytest.mark.parametrize("host,level,folder,agent", [
    ("opencode", "project", ".opencode", ".opencode/agents/pypto-pro-op-verifier.md"),
    ("opencode", "global", ".config/opencode", ".config/opencode/agents/pypto-pro-op-verifier.md"),
    ("cursor", "project", ".cursor", ".cursor/agents/pypto-pro-op-verifier.md"),
    ("trae", "project", ".trae", ".trae/agents/pypto-pro-op-verifier.md"),
    ("copilot", "project", ".copilot", ".github/agents/pypto-pro-op-verifier.agent.md"),
    ("copilot", "global", ".copilot", ".copilot/agents/pypto-pro-op-verifier.agent.md"),
    ("codearts", "global", ".codeartsdoer", ".codeartsdoer/agents/pypto-pro-op-verifier.md"),
    ("claude", "global", ".claude", ".claude/agents/pypto-pro-op-verifier.md")])
def test_every_host_and_level_has_its_config_root(tmp_path, host, level, folder, agent):
    manifest = install(tmp_path, host, "--level", level)
    assert manifest["brand_dir"] == (tmp_path / folder / NAME).as_posix()
    assert manifest["level"] == level and manifest["tool"] == host
    assert (tmp_path / agent).is_file()
    uninstall(tmp_path, host, "--level", level)
    assert tree_digest(tmp_path) == {}


def test_uninstall_without_install_is_a_one_line_error(tmp_path):
    proc = run_script("install.py", "--host", "cursor", "--dest", tmp_path, "--uninstall")
    assert_one_line_error(proc, 2, "cannbot-manifest.json", "nothing installed here")


def test_unknown_host_is_a_usage_error(tmp_path):
    proc = run_script("install.py", "--host", "vim", "--dest", tmp_path)
    assert_one_line_error(proc, 2, "--host")
    assert tree_digest(tmp_path) == {}


def test_a_foreign_manifest_is_never_taken_over(tmp_path):
    root = tmp_path / ".opencode"
    root.mkdir()
    (root / "cannbot-manifest.json").write_text(json.dumps({"name": "other-team", "files": []}))
    before = tree_digest(tmp_path)
    proc = run_script("install.py", "--host", "opencode", "--dest", tmp_path)
    assert_one_line_error(proc, 2, "other-team")
    assert tree_digest(tmp_path) == before


def test_plan_covers_plugin_json_and_mirrors_discovery_folders():
    items = installer.plan(ROOT, META)
    targets = [item.target for item in items]
    assert targets == sorted(targets) and len(targets) == len(set(targets))
    payload = {t.removeprefix(f".claude/{NAME}/") for t in targets if t.startswith(f".claude/{NAME}/")}
    mirrored = {t.removeprefix(".claude/") for t in targets if not t.startswith(f".claude/{NAME}/")}
    assert mirrored and all(t.split("/", 1)[0] in ("agents", "commands", "skills") for t in mirrored)
    assert mirrored <= payload
    assert {t.split("/", 1)[0] for t in payload} == set(installer.PAYLOAD_GROUPS)
    assert all((item.kind != "raw") == item.target.endswith((".md", ".json")) for item in items)


def test_text_output_is_one_summary_line(tmp_path):
    proc = run_script("install.py", "--host", "trae", "--dest", tmp_path)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert proc.stdout.startswith(f"installed {NAME} ")


def test_copilot_keeps_github_to_its_discovery_files_and_uses_prompt_files(tmp_path):
    install(tmp_path, "copilot")
    github = sorted(p.relative_to(tmp_path / ".github").as_posix() for p in (tmp_path / ".github").rglob("*")
                    if p.is_file())
    assert {p.split("/", 1)[0] for p in github} == {"agents", "prompts", "skills"}
    assert "prompts/perf-demo.prompt.md" in github and "agents/pypto-pro-op-coder.agent.md" in github
    prompt = (tmp_path / ".github" / "prompts" / "perf-demo.prompt.md").read_text()
    assert "${input:arguments}" in prompt and "$ARGUMENTS" not in prompt and "allowed-tools" not in prompt
    verifier = (tmp_path / ".github" / "agents" / "pypto-pro-op-verifier.agent.md").read_text()
    assert "model: inherit" not in verifier and "<example>" not in verifier
    assert (tmp_path / ".copilot" / ".gitignore").read_text().endswith("*\n")
    proc = subprocess.run(["git", "init", "-q", str(tmp_path)], capture_output=True)
    assert proc.returncode == 0
    ignored = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                             capture_output=True, text=True).stdout
    assert ".copilot/" not in ignored and ".github/prompts/perf-demo.prompt.md" in ignored


@pytest.mark.parametrize("host", ["cursor", "trae", "codearts"])
def test_other_hosts_get_their_own_agent_frontmatter(tmp_path, host):
    manifest = install(tmp_path, host)
    discovery = Path(manifest["discovery_dir"])
    text = (discovery / "agents" / "pypto-pro-op-verifier.md").read_text()
    head = text.split("---\n")[1]
    assert "name: pypto-pro-op-verifier" in head and "tools:" not in head and "color:" not in head
    assert ("readonly: true" in head) == (host == "cursor")
    assert (discovery / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md").is_file()
    commands = discovery / "commands" / "perf-demo.md"
    assert commands.is_file() == (host == "cursor")


# a path a prompt cites: a markdown link, or a path under the install root (``${CLAUDE_PLUGIN_ROOT}/...`` rendered)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# the repository's measurement folder is not shipped: docs/benchmarks.md shows its figures on the repository only
NOT_SHIPPED = ("../benchmarks/",)


def _cited(text: str, root: str) -> list[str]:
    links = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:|#", t) and not t.startswith(NOT_SHIPPED)]
    under = re.findall(re.escape(root) + r"/[^\s`'\")\]<>|]+", text)
    return [p.split("#", 1)[0].rstrip(".,;:") for p in links + under]


@pytest.mark.parametrize("host", sorted(installer.HOSTS))
def test_every_path_an_installed_file_cites_is_installed(tmp_path, host):
    """#38 Deliver 2: whatever a prompt, skill or shipped doc names (docs/stage-artefacts.md, statistics.md, a
    script, a reference) exists in the installed copy, on every host; no citation of the plugin's docs is bare
    (an agent's working directory is the project, not the plugin)."""
    manifest = install(tmp_path, host)
    root = manifest["brand_dir"]
    broken, bare, seen = [], [], 0
    for record in manifest["files"]:
        path = tmp_path / record["path"]
        if path.suffix != ".md":
            continue
        text = path.read_text()
        for target in _cited(text, root):
            if any(c in target for c in "<*{") or re.search(r"[A-Z]{2,}_[A-Z]", target):
                continue     # a pattern (`scripts/<name>.py`) or a placeholder, not a file name
            seen += 1
            if not (Path(target) if target.startswith("/") else path.parent / target).exists():
                broken.append(f"{record['path']}: {target}")
        if not re.search(f"{NAME}/(docs|examples)/", record["path"]):   # a prompt (docs and examples cite the repo)
            bare += [f"{record['path']}: {m}" for m in re.findall(r"(?<![/\w.{}-])docs/[a-z0-9-]+\.md", text)]
    assert seen > 100 and broken == [] and bare == [], (broken, bare)
