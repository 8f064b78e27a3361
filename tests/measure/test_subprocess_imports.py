"""The per-repeat subprocesses import only what one run needs (#22.4, the many-card speed-up).

Every profiled run starts the function adapter (msprof; pypto-sim through its wrapper) or the cpu
runner in a fresh interpreter; with 8 cards busy at once their start-up is CPU that all cards share,
so it bounds the speed-up (docs/benchmarks.md §5). A child run with ``-X importtime`` lists every
module it imported: none of the parent's heavy libraries may be among them, and numpy is imported
only when the operator's own test imports it, then still seeded with 42 before the test draws from it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks" / "many_cards"))
import bench_many_cards as bench  # noqa: E402

from perftune.contract.manifest import load_manifest  # noqa: E402
from perftune.measure.backends.base import RunSpec, adapter_command, choose_selector, runner_env  # noqa: E402

HEAVY = ("numpy", "pandas", "jsonschema", "yaml", "matplotlib", "scipy")
RUNNER = '''def copy_kernel(x):
    return x


def copy_wrapper(x):
    return copy_kernel(x)


def test_plain():
    copy_wrapper(0)
    print("PLAIN")


def test_draws():
    import numpy
    copy_wrapper(0)
    print("DRAW", repr(float(numpy.random.rand())))
'''


@pytest.fixture(scope="module")
def op(tmp_path_factory):
    root = tmp_path_factory.mktemp("imports")
    op = bench.make_op(root, ["plain", "draws"])
    (op / "test_copyop.py").write_text(RUNNER)
    bench.freeze(op, ["plain", "draws"], bench.fake_env(root, 0))
    return op


def spec_of(op) -> RunSpec:
    manifest = load_manifest(op / "PERFORMANCE_CASES.json")
    return RunSpec(op_dir=op, runner=op / "test_copyop.py", manifest=manifest, device_id=0, warmup=0, repeats=1,
                   op_name=bench.TARGET, seed=42, selector=choose_selector(manifest, op))


def run_child(argv: list[str], op) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``argv`` (a ``python -m ...`` command) with ``-X importtime``; its output and imported top-level packages."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=runner_env(0), cwd=op,
                          capture_output=True, text=True)
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
             if line.startswith("import time:")}
    return proc, names


def test_the_adapter_of_a_profiled_run_imports_no_heavy_library(op, tmp_path):
    argv = adapter_command(spec_of(op), "plain") + [   # as the msprof backend's run_repeat extends it
        "--op-name", bench.TARGET, "--attest", str(tmp_path / "attestation.json")]
    proc, names = run_child(argv, op)
    assert proc.returncode == 0 and "PLAIN\nPYPTO_PERF_SELECTED_CASE=plain\n" in proc.stdout, proc.stderr
    assert "perftune" in names and len(names) > 10   # the import listing is real
    assert sorted(names & set(HEAVY)) == []


def test_the_cpu_runner_imports_no_heavy_library(op, tmp_path):
    out = tmp_path / "result.json"
    argv = [sys.executable, "-m", "perftune.measure.backends.cpu_runner", "--op-dir", str(op), "--runner",
            str(op / "test_copyop.py"), "--manifest", str(op / "PERFORMANCE_CASES.json"), "--case-id", "plain",
            "--op-name", "print", "--warmup", "0", "--repeats", "1", "--mode", "profile", "--output", str(out)]
    proc, names = run_child(argv, op)
    assert proc.returncode == 0 and proc.stdout.count("PYPTO_PERF_SELECTED_CASE=plain") == 1, proc.stderr
    assert out.is_file() and "perftune" in names
    assert sorted(names & set(HEAVY)) == []


def test_the_pypto_sim_wrapper_imports_no_heavy_library(op):
    proc, names = run_child([sys.executable, "-c", "import perftune.measure.backends.pypto_sim_runner"], op)
    assert proc.returncode == 0 and "perftune" in names, proc.stderr
    assert sorted(names & set(HEAVY)) == []


def test_numpy_imported_by_the_test_is_seeded_before_its_first_draw(op):
    proc, names = run_child(adapter_command(spec_of(op), "draws"), op)
    assert proc.returncode == 0, proc.stderr
    expected = subprocess.run([sys.executable, "-c", "import numpy; numpy.random.seed(42); "
                               "print(repr(float(numpy.random.rand())))"], capture_output=True, text=True).stdout
    assert f"DRAW {expected.strip()}\n" in proc.stdout and "numpy" in names
