"""Missing Python packages are an environment error (#16.8): one line naming `env_error`, exit 3.

The scripts run under a bare interpreter (a venv without packages, as on a stock Debian/Ubuntu
`python3`); every script either works without the packages (its `--help`) or says which package is
missing and exits 3 — never a traceback with exit 1 ("a check ran and failed"). Every JSON read goes
through fsio's guarded loader: a manifest nested thousands of levels deep is a one-line error.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, SCRIPTS, assert_one_line_error, freeze_example, run_script

CLIS = sorted(p.name for p in SCRIPTS.glob("*.py"))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0, "the bare venv unexpectedly has numpy"
    return python


def bare(python, script, *args, stdin=None):
    return subprocess.run([str(python), str(SCRIPTS / script), *map(str, args)], capture_output=True,
                          text=True, timeout=120, input=stdin)


@pytest.mark.parametrize("script", CLIS)
def test_every_script_without_its_packages_is_an_env_error_or_works(bare_python, script):
    proc = bare(bare_python, script, "--help")
    if proc.returncode != 0:
        assert_one_line_error(proc, 3, "import: env_error", "pip install")


def test_a_real_command_without_packages_names_the_missing_package(bare_python, op_dir):
    freeze_example(op_dir)
    proc = bare(bare_python, "collect_perf.py", "preflight", "--op-dir", op_dir)
    assert_one_line_error(proc, 3, "env_error")
    assert any(name in proc.stderr for name in ("numpy", "pandas", "jsonschema", "yaml", "matplotlib"))


def test_the_stage4_hook_reports_the_missing_package_as_env_error(bare_python, op_dir):
    event = {"hook_event_name": "PostToolUse", "tool_name": "Edit", "cwd": str(op_dir),
             "tool_input": {"file_path": str(op_dir / "test_softmax.py")}}
    proc = subprocess.run([str(bare_python), str(ROOT / "hooks" / "stage4_gates_after_edit.py")],
                          input=json.dumps(event), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "env_error" in proc.stderr and "numpy" in proc.stderr, proc.stderr


def test_a_manifest_nested_thousands_of_levels_deep_is_one_line(op_dir):
    (op_dir / "PERFORMANCE_CASES.json").write_text("[" * 100000 + "]" * 100000)
    proc = run_script("freeze_cases.py", "validate", "--op-dir", op_dir)
    assert_one_line_error(proc, 2, "PERFORMANCE_CASES.json", "nested")


def test_json_on_stdin_of_the_hooks_nested_deep_is_handled(op_dir):
    deep = "[" * 100000 + "]" * 100000
    for hook in ("guard_frozen_inputs.py", "stage4_gates_after_edit.py"):
        proc = subprocess.run([sys.executable, str(ROOT / "hooks" / hook)], input=deep, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (hook, proc.stderr)
