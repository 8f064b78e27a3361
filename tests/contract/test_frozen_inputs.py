"""Frozen-input hashes (#16.7): recorded at freeze, re-checked by every script that loads the manifest,
so a shell edit of a frozen file is caught at the next script call, naming the file."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error, freeze_example, run_script


def test_freeze_records_the_hash_of_every_frozen_input(op_dir):
    freeze_example(op_dir)
    record = json.loads((op_dir / "FROZEN_INPUTS.json").read_text())
    assert {"PERFORMANCE_CASES.json", "SPEC.md", "softmax_golden.py", "softmax_golden_cpu.py"} <= set(record["files"])
    assert "test_softmax.py" not in record["files"]


@pytest.mark.parametrize("name,edit", [
    ("SPEC.md", lambda text: text.replace("4096", "2048", 1)),
    ("softmax_golden_cpu.py", lambda text: text + "\n# tweak\n"),
    ("PERFORMANCE_CASES.json", lambda text: text.replace('"threshold": 1.1', '"threshold": 1.01'))])
def test_a_shell_edit_of_a_frozen_input_stops_the_next_script_naming_the_file(op_dir, name, edit):
    freeze_example(op_dir)
    path = op_dir / name
    changed = edit(path.read_text())
    assert changed != path.read_text()
    path.write_text(changed)                               # what `sed -i` would do
    for args in (("freeze_cases.py", "validate", "--op-dir", op_dir),
                 ("collect_perf.py", "preflight", "--op-dir", op_dir)):
        proc = run_script(*args)
        assert_one_line_error(proc, 2, name, "changed after freeze")


def test_a_deleted_frozen_input_is_named(op_dir):
    freeze_example(op_dir)
    (op_dir / "softmax_golden.py").unlink()
    assert_one_line_error(run_script("freeze_cases.py", "show", "--op-dir", op_dir), 2, "softmax_golden.py", "missing")


def test_an_unchanged_tree_passes(op_dir):
    freeze_example(op_dir)
    assert run_script("freeze_cases.py", "validate", "--op-dir", op_dir).returncode == 0
