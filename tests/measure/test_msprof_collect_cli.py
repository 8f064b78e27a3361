"""collect_perf.py end to end on the msprof backend, with the fake msprof on PATH."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, freeze_example, run_script
from perftune.measure import evidence
from perftune.contract import protocol
from perftune.measure.backends.msprof import MsprofBackend
from perftune.errors import ContractError

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
TARGET = "pypto_softmax_kernel_mix_aic_0"
CASES = ["r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16"]


@pytest.fixture
def env(tmp_path):
    return {"PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}", "FAKE_MSPROF_PYTHON": sys.executable,
            "FAKE_MSPROF_STATE": str(tmp_path / "state.json"), "FAKE_MSPROF_TARGET": TARGET,
            "FAKE_MSPROF_MODE": "ok", "FAKE_MSPROF_MODE_RUN": "", "FAKE_MSPROF_RATIOS": "{}"}


@pytest.fixture
def frozen(op_dir):
    freeze_example(op_dir, "--backend", "msprof", "--op-name", TARGET, repeats=1, warmup=0)
    return op_dir


def test_formal_round_on_msprof_loads_with_recomputed_samples(frozen, env):
    env["FAKE_MSPROF_DURATIONS"] = "41.5,43.25,39.0,45.75"
    proc = run_script("collect_perf.py", "formal", "--op-dir", frozen, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "complete" and result["backend"] == "msprof"
    assert result["target_op_name"] == TARGET
    loaded = evidence.load_round(frozen, "round_001")
    assert {cid: c.samples_us for cid, c in loaded.cases.items()} == {
        "r64_c4096_fp32": [41.5], "r512_c1024_fp32": [43.25], "r64_c4096_fp16": [39.0], "r1024_c256_fp16": [45.75]}
    case = loaded.cases["r64_c4096_fp16"]
    assert case.measurement["timing_source_file"] == "op_summary_PipeUtilization.csv"
    assert case.measurement["repeat_bound_diagnoses"][0]["label"] == "compute_candidate"
    assert case.measurement["repeat_bound_diagnoses"][0]["completion_eligible"] is False
    repeat = case.path / "repeat_001"
    assert sorted(p.name for p in repeat.glob("op_summary_*.csv")) == sorted(
        f"op_summary_{m}.csv" for m in protocol.METRIC_GROUPS)
    # the archive is the truth: the backend re-reads the edited CSV, and the sealed round refuses it
    pipe = repeat / "op_summary_PipeUtilization.csv"
    pipe.write_text(pipe.read_text().replace("39.000", "78.000", 1))
    assert MsprofBackend().read_repeat(repeat, TARGET).duration_us == 78.0
    with pytest.raises(ContractError, match="raw evidence changed"):
        evidence.load_round(frozen, "round_001")


def test_target_launched_twice_fails_the_round_and_keeps_it(frozen, env):
    env.update(FAKE_MSPROF_MODE="two_rows", FAKE_MSPROF_MODE_RUN="PipeUtilization")
    proc = run_script("collect_perf.py", "formal", "--op-dir", frozen, "--json", env=env)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and "has 2 launches" in result["failure"]
    collection = json.loads((frozen / "docs/perf/round_001/collection.json").read_text())
    assert collection["status"] == "failed"


def test_broken_msprof_exits_3_with_one_line_naming_it(frozen, env):
    env["FAKE_MSPROF_MODE"] = "broken"
    proc = run_script("collect_perf.py", "formal", "--op-dir", frozen, env=env)
    assert_one_line_error(proc, 3, "msprof", "exited 127")
    assert not (frozen / "docs" / "perf").exists() or not list((frozen / "docs" / "perf").glob("round_*"))


def test_quick_and_discovery_through_the_cli(frozen, env):
    env["FAKE_MSPROF_DURATIONS"] = "40.25,41.5,42.75,43.0,44.0"
    proc = run_script("collect_perf.py", "quick", "--op-dir", frozen, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    quick = json.loads(proc.stdout)
    assert [c["duration_samples_us"] for c in quick["cases"]] == [[40.25], [41.5], [42.75], [43.0]]
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", frozen, "--case-id", CASES[0], env=env)
    assert proc.returncode == 0, proc.stderr
    pypto = "KERNEL_AICPU,KERNEL_MIX_AIC\t46 control 42,43"   # a PyPTO launch: 3 rows, the AI-core task's time
    assert proc.stdout.splitlines() == [
        "count\trows_per_launch\ttask_type\tstreams\ttotal_duration_us\texact_op_name",
        f"1\t3\t{pypto}\t84.000\t{TARGET}_tail", f"1\t3\t{pypto}\t40.250\t{TARGET}",
        "1\t1\tKERNEL_AIVEC\t46\t6.780\taclnnCast_Cast_1", "1\t1\tKERNEL_AIVEC\t46\t1.460\tMemSet"]
