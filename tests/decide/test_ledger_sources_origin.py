"""One source of truth for the ledger's preset sources: recorded at init (never absolute), read by the checks."""

import json
import shutil
import sys
import subprocess

import pytest

from conftest import ROOT, assert_one_line_error, freeze_example, run_script
import perf_next
from perftune.demo import skill

REFS = "skills/pypto-pro-op-perf-tune/references"


@pytest.fixture
def plugin_ledger(op_dir):
    shutil.rmtree(op_dir / "sources")  # the SKILL's way: the plugin's own references
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", op_dir, "--sources-dir", ROOT / REFS, "--json")
    assert proc.returncode == 0, proc.stderr
    return op_dir


def moved_plugin(tmp_path):
    """A copy of the plugin at another path (what a re-install or a moved checkout does)."""
    copy = tmp_path / "elsewhere" / "plugin"
    for folder in ("scripts", "schemas", "skills"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def check(plugin, op):
    proc = subprocess.run([sys.executable, str(plugin / "scripts/ledger_check.py"), "--op-dir", str(op), "--json"],
                          capture_output=True, text=True, timeout=120)
    return proc


def codes(proc):
    return {p["code"] for p in json.loads(proc.stdout)["problems"]}


def test_init_records_a_plugin_relative_origin_and_no_absolute_path(plugin_ledger):
    text = (plugin_ledger / "docs/perf/ledger.json").read_text()
    led = json.loads(text)
    assert led["sources_origin"] == {"base": "plugin", "path": REFS}
    assert str(ROOT) not in text and '"/' not in text
    assert led["sources"]["general_method"]["index"]["path"] == f"plugin:{REFS}/general-methods/INDEX.md"
    proc = run_script("ledger_check.py", "--op-dir", plugin_ledger, "--json")
    assert proc.returncode == 1 and codes(proc) == {"non_terminal", "sweep_missing"}  # open items only


def test_a_moved_plugin_with_identical_content_still_verifies(plugin_ledger, tmp_path):
    here = run_script("ledger_check.py", "--op-dir", plugin_ledger, "--json")
    there = check(moved_plugin(tmp_path), plugin_ledger)
    assert there.returncode == 1 and json.loads(there.stdout)["problems"] == json.loads(here.stdout)["problems"]


def test_changed_or_missing_sources_are_named_with_their_real_cause(plugin_ledger, tmp_path):
    plugin = moved_plugin(tmp_path)
    method = plugin / REFS / "general-methods/general-01.md"
    method.write_text(method.read_text() + "\nedited\n")
    proc = check(plugin, plugin_ledger)
    changed = [p for p in json.loads(proc.stdout)["problems"] if p["code"] == "source_changed"]
    assert [p["item_id"] for p in changed] == ["general-01"]
    assert "general-01.md" in changed[0]["message"] and "content" in changed[0]["message"]
    (plugin / REFS / "templates/INDEX.md").unlink()
    assert_one_line_error(check(plugin, plugin_ledger), 2, "template INDEX is missing",
                          f"plugin:{REFS}", "sources_origin")


def test_op_sources_stay_op_relative_and_a_folder_outside_both_is_refused(op_dir, tmp_path):
    freeze_example(op_dir)
    outside = tmp_path / "outside"
    shutil.copytree(op_dir / "sources", outside)
    assert_one_line_error(run_script("ledger.py", "init", "--op-dir", op_dir, "--sources-dir", outside), 2,
                          "--sources-dir", "neither inside")
    assert run_script("ledger.py", "init", "--op-dir", op_dir).returncode == 0
    led = json.loads((op_dir / "docs/perf/ledger.json").read_text())
    assert led["sources_origin"] == {"base": "op", "path": "sources"}
    moved = tmp_path / "moved" / "softmax"
    shutil.copytree(op_dir, moved)
    assert codes(run_script("ledger_check.py", "--op-dir", moved, "--json")) == {"non_terminal", "sweep_missing"}


def test_without_sources_dir_or_own_sources_the_plugin_references_are_enumerated(op_dir):
    """The scaffold's sources/README.md promise: no own INDEX, no flag → the plugin's presets; perf_next
    prints the init command without a ``--sources-dir`` (no literal ``${CLAUDE_PLUGIN_ROOT}`` a shell
    would get in quotes)."""
    shutil.rmtree(op_dir / "sources")
    (op_dir / "sources").mkdir()
    (op_dir / "sources" / "README.md").write_text("optional\n")
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    led = json.loads((op_dir / "docs/perf/ledger.json").read_text())
    assert led["sources_origin"] == {"base": "plugin", "path": REFS}
    assert led["sources"]["general_method"]["index"]["path"] == f"plugin:{REFS}/general-methods/INDEX.md"
    from perftune.contract import manifest, protocol
    from perftune.decide import next_step
    st = next_step.State(op_dir, man=manifest.load_manifest(op_dir / protocol.MANIFEST_NAME), code_sha="s",
                         rounds=[{"name": "round_001", "id": "c1", "sha": "s", "partner": None}], ledger=None,
                         files={protocol.GOLDEN_REPORT_NAME: 1.0, "docs/perf/platform_cpu.json": 1.0})
    [init, _] = next_step.prepare(st)
    command = perf_next.render(init["key"], init["values"], init["needs"], str(op_dir), skill.load())
    assert init["key"] == "ledger_init" and command.endswith(f"ledger.py init --op-dir {op_dir} --json")
