"""Terminal evidence from profiler data on msprof (#22.3), end to end with the fake msprof and npu-smi.

Discovery before freeze, a formal round, a timeline per case, terminal_evidence.py build with the
A2 platform file and the device probe; P8's check passes on complete data and fails naming the
missing timeline or metric group; every number cites its CSV column or timeline lane.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE, ROOT, assert_one_line_error, run_script
from perftune.contract.manifest import load_manifest
from perftune.verify import stage5_evidence

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
TARGET = "pypto_softmax_kernel_mix_aic_0"
A2 = str(ROOT / "platforms" / "atlas-a2-910b.json")


def fake_env(tmp: Path, **extra: str) -> dict:
    return {"PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}", "FAKE_MSPROF_PYTHON": sys.executable,
            "FAKE_MSPROF_STATE": str(tmp / "state.json"), "FAKE_MSPROF_TARGET": TARGET,
            "FAKE_MSPROF_DURATIONS": "41.5,43.25,39.0,45.75,40.5,42.0,44.25,40.0", **extra}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profiler_evidence")
    op = tmp / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    env = fake_env(tmp)
    steps = [("collect_perf.py", "list-op-names", "--op-dir", op, "--case-id", "r64_c4096_fp32", "--backend", "msprof"),
             ("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r64_c4096_fp32", "--selection-mode",
              "user_selected", "--backend", "msprof", "--op-name-from", op / "docs/perf/discovery/discovery_001.json",
              "--op-name", TARGET, "--repeats", "2", "--warmup", "0"),
             ("collect_perf.py", "formal", "--op-dir", op),
             ("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001")]
    for script, *args in steps:
        proc = run_script(script, *args, env=env)
        assert proc.returncode == 0, (script, proc.stderr)
    return op, tmp


def build(op: Path, tmp: Path, *args: str, **env: str):
    return run_script("terminal_evidence.py", "build", "--op-dir", op, "--round", "round_001", "--platform", A2,
                      "--json", *args, env=fake_env(tmp, **env))


def p8(op: Path) -> list[str]:
    doc = json.loads((op / "docs/perf/terminal_evidence.json").read_text())
    man = load_manifest(op / "PERFORMANCE_CASES.json")
    return stage5_evidence.terminal_problems(op, man, {"final_collection_id": doc["round"]["collection_id"]}, "-")


def test_complete_profiler_data_passes_p8_and_every_number_is_cited(built):
    op, tmp = built
    proc = build(op, tmp)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["content"]
    assert doc["device_probe"]["chip_name"] == "910B3" and doc["device_probe"]["matched_pattern"] == "910B*"
    assert p8(op) == []
    case = doc["cases"][0]
    assert case["pipeline_evidence"]["status"] == "proven"          # 10 us same-lane overlap of 55 us movement
    assert case["pipeline_evidence"]["overlap_share"] == pytest.approx(10 / 55, rel=1e-5)
    # the kernel's primary core is aiv (aiv_time 0.93 vs aicore_time 0.06 of the task): its SCALAR ratio
    # 0.08, not the nearly idle cube side's 0.16 (the old max() of both sides)
    assert case["scalar_evidence"]["dominant"] is False and case["scalar_evidence"]["share"] == 0.08
    assert case["scalar_evidence"]["sources"]["share"]["column"] == "aiv_scalar_ratio"
    assert case["scalar_evidence"]["core"] == "aiv"
    roof = case["roofline_terminal"]
    assert roof["status"] in ("compute_bound", "data_movement_bound", "balanced_compute_movement", "wait_bound")
    assert roof["fixed_share_source"]["files"][0].endswith("repeat_001/op_summary_PipeUtilization.csv")
    gm = case["profiler"]["memory_levels"]["GM"]
    assert {p["bandwidth"]["column"] for p in gm["from"]} == {
        "aiv_main_mem_read_bw(GB/s)", "aiv_main_mem_write_bw(GB/s)", "aic_main_mem_read_bw(GB/s)",
        "aic_main_mem_write_bw(GB/s)"}
    assert "HBM2e" in gm["peak_source"] and case["profiler"]["diagnosis"]["label"] == "vector_bound"
    assert case["pipeline_evidence"]["source"]["lanes"][0]["overlap"]


def test_a_platform_of_another_chip_is_refused(built):
    op, tmp = built
    proc = build(op, tmp, FAKE_NPU_CHIP="Ascend950PR")
    assert_one_line_error(proc, 2, "do not match the probed chip", "Ascend950PR")


@pytest.mark.parametrize("remove,needle", [
    ("timeline", "instruction timeline docs/perf/timeline/round_001/"),
    ("metric", "metric group Memory (op_summary_Memory.csv) is missing in repeat_002")])
def test_removing_evidence_fails_p8_naming_it(built, remove, needle):
    op, tmp = built
    copy = tmp / f"copy_{remove}"
    shutil.copytree(op, copy)
    assert build(copy, tmp).returncode == 0
    if remove == "timeline":
        shutil.rmtree(next((copy / "docs/perf/timeline/round_001").iterdir()))
    else:
        next(copy.glob("docs/perf/round_001/case_*/repeat_002/op_summary_Memory.csv")).unlink()
    problems = p8(copy)
    assert problems and any(needle in p for p in problems), problems
