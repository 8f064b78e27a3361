"""Shared fixtures: repository paths, running a script as a user would, a fresh example op dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
EXAMPLE = ROOT / "examples" / "softmax"


def run_script(name: str, *args: str, cwd: Path | None = None, env: dict | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``scripts/<name>`` with the current interpreter, capturing text output."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int = 2, *needles: str) -> None:
    """The DESIGN §5 error contract: exit code, one stderr line starting 'error:', no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its content, to prove nothing changed."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def op_dir(tmp_path: Path) -> Path:
    """A fresh copy of the example operator directory (variants and caches excluded)."""
    target = tmp_path / "softmax"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("__pycache__", "docs"))
    return target


def freeze_example(op: Path, *extra: str, repeats: int = 5, warmup: int = 1) -> dict:
    """Freeze the example manifest through the real CLI and return its content."""
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids",
                      "r64_c4096_fp32", "r64_c4096_fp16", "--selection-mode", "user_selected",
                      "--backend", "cpu", "--op-name", "softmax_kernel", "--repeats", str(repeats),
                      "--warmup", str(warmup), *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads((op / "PERFORMANCE_CASES.json").read_text())


@pytest.fixture(scope="session")
def demo_delivery(tmp_path_factory) -> tuple[Path, dict]:
    """One real demo run per test session: (clean Stage 5 operator dir, the demo's --json summary).

    The demo's output is the verifier's clean fixture; tests copy it before changing anything.
    """
    reuse = os.environ.get("PERFTUNE_REUSE_DEMO_SUMMARY")  # developer shortcut: a saved demo --json output
    if reuse:
        summary = json.loads(Path(reuse).read_text())
        summary["_stderr"] = Path(reuse).with_suffix(".err").read_text()
        return Path(summary["workdir"]) / "softmax", summary
    workdir = tmp_path_factory.mktemp("demo")
    proc = run_script("demo.py", "--workdir", workdir, "--json", timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    summary["_stderr"] = proc.stderr
    return Path(summary["workdir"]) / "softmax", summary
