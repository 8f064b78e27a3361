"""Shared fixtures: repository paths, running a script as a user would, a fresh example op dir."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import time
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


_CLIS: dict[str, object] = {}


def call_script(name: str, *args, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``scripts/<name>`` in this process: its ``main`` through ``run_cli`` (the exit code and one-line
    errors of the CLI), stdout and stderr captured, ``cwd`` for the call. The same code as
    :func:`run_script` without an interpreter start and its imports, for pipelines that call the
    scripts many times (the cheat corpus); the child processes a script starts are real, and the
    operator modules a call imports (its golden, its test file) are dropped after it, as a process
    would drop them. ``env`` is added to the environment for the call only (as :func:`run_script` adds
    it for the child); the environment is restored afterwards, with anything the script set in it.
    Not for tests of the process boundary itself (a crash, the environment a module reads at import)."""
    from perftune.errors import run_cli
    if name not in _CLIS:
        spec = importlib.util.spec_from_file_location(f"_cli_{Path(name).stem}", SCRIPTS / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _CLIS[name] = module
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    modules, path, argv0, environ = set(sys.modules), list(sys.path), sys.argv[0], dict(os.environ)
    try:
        os.environ.update({key: str(value) for key, value in (env or {}).items()})
        os.chdir(cwd or here)
        sys.argv[0] = str(SCRIPTS / name)   # argparse's prog, as in the script's own process
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = run_cli(_CLIS[name].main, [str(a) for a in args])
            except SystemExit as exc:   # argparse and explicit exits
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(here)
        if os.environ != environ:
            os.environ.clear()
            os.environ.update(environ)
        sys.argv[0], sys.path[:] = argv0, path
        for module in set(sys.modules) - modules:   # an operator's modules (golden, test file) die with the call
            where = getattr(sys.modules[module], "__file__", None) or ""
            if where and not where.startswith((str(SCRIPTS), sys.prefix, sys.base_prefix)):
                del sys.modules[module]
    return subprocess.CompletedProcess([name, *map(str, args)], code, out.getvalue(), err.getvalue())


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


def calibrate_on(op: Path, baseline: str = "round_001") -> dict:
    """``compare_perf.py calibrate --rounds BASELINE`` as if run right after that round (calibrate refuses
    later rounds and quick results, so they are moved aside meanwhile): an independent compare of planted
    known-truth rounds is then calibrated on the planted baseline, so it may give sized verdicts."""
    perf, aside = op / "docs/perf", op.parent / f"{op.name}_aside"
    aside.mkdir()
    moved = [p for p in perf.iterdir() if p.name == "quick" or (p.name.startswith("round_") and p.name != baseline)]
    for path in moved:
        path.rename(aside / path.name)
    proc = run_script("compare_perf.py", "calibrate", "--op-dir", op, "--rounds", baseline, "--json")
    for path in moved:
        (aside / path.name).rename(path)
    aside.rmdir()
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _shared_root(tmp_path_factory) -> Path:
    """The temp folder all pytest-xdist workers of this session share (the basetemp without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


_DEMO_JOB = """
import json, os, subprocess, sys
demo, workdir, out = sys.argv[1:]
proc = subprocess.run([sys.executable, demo, "--workdir", workdir, "--json"], capture_output=True, text=True)
with open(out + ".tmp", "w") as handle:
    json.dump({"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}, handle)
os.replace(out + ".tmp", out)
"""


def _start_demo(root: Path) -> Path:
    """Start the session's one demo run in the background unless a worker already did; its result file."""
    result = root / "demo_result.json"
    try:
        with open(root / "demo.started", "x"):
            pass
    except FileExistsError:
        return result
    subprocess.Popen([sys.executable, "-c", _DEMO_JOB, str(SCRIPTS / "demo.py"), str(root / "demo"), str(result)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return result


def pytest_sessionstart(session) -> None:
    """Compile ``scripts/`` to bytecode once, in the controller before the workers start: the suite
    starts the scripts in a few thousand child interpreters, and where ``PYTHONDONTWRITEBYTECODE`` is
    set none of them would keep its compiled modules, so each compiled every module it imports again
    (~0.1 s a start). Children still only read ``__pycache__`` (ignored by git, the release hash and
    the installer) and recompile any source edited since; elsewhere Python writes the same files."""
    if not hasattr(session.config, "workerinput"):
        import compileall
        compileall.compile_dir(SCRIPTS, quiet=2, workers=1)


def pytest_collection_modifyitems(items) -> None:
    """Tests of the demo run last, so the workers have other work while it runs in the background."""
    late = {item.path for item in items if "demo_delivery" in item.fixturenames}
    items.sort(key=lambda item: item.path in late)  # whole modules: xdist schedules by module


@pytest.fixture(scope="session", autouse=True)
def _demo_in_background(request, tmp_path_factory) -> None:
    """The demo takes ~2 min: start it with the session, while the workers run other tests."""
    if os.environ.get("PERFTUNE_REUSE_DEMO_SUMMARY"):
        return
    if any("demo_delivery" in item.fixturenames for item in request.session.items):
        _start_demo(_shared_root(tmp_path_factory))


@pytest.fixture(scope="session")
def demo_delivery(tmp_path_factory) -> tuple[Path, dict]:
    """The session's one real demo run, shared by every worker: (clean Stage 5 operator dir, the
    demo's --json summary + ``_stderr``).

    The demo's output is the verifier's clean fixture; tests copy it before changing anything.
    """
    reuse = os.environ.get("PERFTUNE_REUSE_DEMO_SUMMARY")  # developer shortcut: a saved demo --json output
    if reuse:
        summary = json.loads(Path(reuse).read_text())
        summary["_stderr"] = Path(reuse).with_suffix(".err").read_text()
        return Path(summary["workdir"]) / "softmax", summary
    result = _start_demo(_shared_root(tmp_path_factory))
    deadline = time.monotonic() + 1800
    while not result.exists():
        assert time.monotonic() < deadline, "the background demo run did not finish in 30 minutes"
        time.sleep(0.5)
    proc = json.loads(result.read_text())
    assert proc["returncode"] == 0, proc["stderr"][-4000:]
    summary = {**json.loads(proc["stdout"]), "_stderr": proc["stderr"]}
    return Path(summary["workdir"]) / "softmax", summary
