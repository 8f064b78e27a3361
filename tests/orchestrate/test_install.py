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
                "commands/pypto-pro-op.md", "references/orchestration.md",
                f"{NAME}/scripts/freeze_cases.py", f"{NAME}/schemas/performance_cases.schema.json",
                f"{NAME}/hooks/guard_frozen_inputs.py",
                f"{NAME}/skills/pypto-pro-op-perf-tune/references/templates/row_strip_pipeline.py.tmpl"):
        assert (root / rel).is_file(), rel
    assert not list(root.rglob("__pycache__"))
    for md in root.rglob("*.md"):
        assert "${CLAUDE_PLUGIN_ROOT}" not in md.read_text(), md
    skill = (root / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md").read_text()
    assert f"python {brand.as_posix()}/scripts/check_correctness.py --op-dir DIR --json" in skill
    for record in manifest["files"]:
        assert sha256_file(root / record["path"]) == record["sha256"], record


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
    [record] = [f for f in manifest["files"] if f["path"] == "agents/pypto-pro-op-coder.md"]
    assert re.fullmatch(r"agents/pypto-pro-op-coder\.md\.bak\.\d{8}T\d{6}Z", record["backup"])
    assert (tmp_path / ".claude" / record["backup"]).read_text() == "my own coder agent\n"
    assert sum(1 for f in manifest["files"] if f["backup"]) == 1
    result = uninstall(tmp_path)
    assert result["restored"] == ["agents/pypto-pro-op-coder.md"] and result["kept_modified"] == []
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
    edited = tmp_path / ".claude" / "references" / "orchestration.md"
    edited.write_text("local notes\n")
    result = uninstall(tmp_path)
    assert result["kept_modified"] == ["references/orchestration.md"]
    assert tree_digest(tmp_path) == {".claude/references/orchestration.md": b"local notes\n"}


@pytest.mark.parametrize("host,level,folder", [
    ("opencode", "project", ".opencode"), ("opencode", "global", ".config/opencode"),
    ("cursor", "project", ".cursor"), ("trae", "project", ".trae"),
    ("copilot", "project", ".github"), ("copilot", "global", ".copilot"),
    ("codearts", "global", ".codeartsdoer"), ("claude", "global", ".claude")])
def test_every_host_and_level_has_its_config_root(tmp_path, host, level, folder):
    manifest = install(tmp_path, host, "--level", level)
    assert manifest["brand_dir"] == (tmp_path / folder / NAME).as_posix()
    assert manifest["level"] == level and manifest["tool"] == host
    assert (tmp_path / folder / "agents" / "pypto-pro-op-verifier.md").is_file()
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
    mirrored = {t for t in targets if not t.startswith(f"{NAME}/")}
    assert mirrored and all(t.split("/", 1)[0] in installer.DISCOVERY for t in mirrored)
    assert {f"{NAME}/{t}" for t in mirrored} <= set(targets)
    assert all(item.render == item.target.endswith((".md", ".json")) for item in items)


def test_text_output_is_one_summary_line(tmp_path):
    proc = run_script("install.py", "--host", "trae", "--dest", tmp_path)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert proc.stdout.startswith(f"installed {NAME} ")
