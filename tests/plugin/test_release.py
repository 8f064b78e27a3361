"""One plugin version, and a test that fails when shipped files change without a version bump.

Claude Code's `plugin update` only refreshes its cached copy when the version changes; the record
in .claude-plugin/release.json (version + sha256 of everything under plugin/) makes a forgotten
bump a failing test instead of a stale install.
"""

from __future__ import annotations

import json
import os

from conftest import ROOT, run_script
from perftune.orchestrate import release


def test_versions_agree_and_the_shipped_files_match_the_recorded_hash():
    proc = run_script("plugin_version.py", "check", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["problems"] == [], \
        "plugin files changed without a version bump: run `python3 scripts/plugin_version.py bump patch`\n" \
        + "\n".join(result["problems"])


def test_the_marketplace_ships_the_plugin_folder_and_it_holds_every_component():
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["source"] for p in market["plugins"]] == ["./plugin"]
    shipped = {rel.split("/", 1)[0] for rel, _ in release.shipped_files(ROOT)}
    assert {"agents", "commands", "hooks", "skills", "scripts", "schemas", "references", "examples",
            "platforms", "docs", ".claude-plugin"} == shipped
    assert not any(part in (".venv", ".tools", "demo_work", ".git") for rel, _ in release.shipped_files(ROOT)
                   for part in rel.split("/"))


def make_root(tmp_path):
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "plugin.json").write_text('{"name": "x", "version": "1.2.3"}\n')
    (tmp_path / ".claude-plugin" / "marketplace.json").write_text('{"metadata": {"version": "1.2.3"}}\n')
    (tmp_path / "plugin.json").write_text('{"version": "1.2.3"}\n')
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "1.2.3"\n')
    (tmp_path / "scripts" / "perftune").mkdir(parents=True)
    (tmp_path / "scripts" / "perftune" / "__init__.py").write_text('__version__ = "1.2.3"\n')
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.md").write_text("one\n")
    (tmp_path / "plugin").mkdir()
    os.symlink("../agents", tmp_path / "plugin" / "agents")
    return tmp_path


def test_a_change_without_a_bump_fails_and_a_bump_records_it(tmp_path):
    root = make_root(tmp_path)
    assert release.check(root)["problems"]            # never stamped
    assert release.bump(root, "patch")["version"] == "1.2.4"
    assert release.check(root)["problems"] == []
    (root / "agents" / "a.md").write_text("two\n")
    [problem] = release.check(root)["problems"]
    assert "changed since '1.2.4'" in problem and "bump" in problem
    assert release.bump(root, "minor")["version"] == "1.3.0"
    assert release.check(root)["problems"] == []
    (root / "plugin.json").write_text('{"version": "9.9.9"}\n')
    assert any(p.startswith("plugin.json: version '9.9.9'") for p in release.check(root)["problems"])
