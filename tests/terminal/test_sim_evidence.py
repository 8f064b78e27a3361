"""P8 evidence of a pypto-sim case from the simulator's files (pipeline overlap, launch overhead).

Recorded pypto 0.2.0 outputs: a 64x1024 float32 softmax in 8 vector tasks (load, compute, store in
sequence inside each task), a 128^3 float16 matmul in 4 cube tasks and the attention example's MIX
baseline (32 cube and 24 vector tasks in one launch).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from perftune.contract import schemas
from perftune.measure.backends import pypto_sim
from perftune.terminal import roofline, sim_evidence

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "pypto_sim" / "recorded"


def case_dir(tmp_path: Path, recorded: str) -> Path:
    folder = tmp_path / f"case_{recorded}"
    shutil.copytree(RECORDED / recorded, folder / "repeat_001")
    (folder / "repeat_001" / pypto_sim.LAUNCH_JSON).write_text(json.dumps({"op_name": "k", "calls": 1}))
    return folder


def test_vector_tasks_without_in_core_overlap_are_a_named_residual(tmp_path):
    pipeline, scalar = sim_evidence.case_blocks(case_dir(tmp_path, "vector_softmax"))
    assert pipeline["status"] == "residual_not_overlapped" and pipeline["overlap_cycles"] == 0
    assert any("AIV: 8 cores, task 27584 cycles" in g and "_simulate.pipe.swim.json" in g for g in pipeline["grounds"])
    # 10784 total cycles, AICore window 3623..8471 = 4848 cycles: 5936 cycles of launch overhead
    assert scalar["fixed_overhead_us"] == round(5936 / 1800, 6) and scalar["share"] == float(f"{5936 / 10784:.6g}")
    assert scalar["dominant"] is True and "Total Cycles 10784" in scalar["grounds"][0]


def test_cube_kernel_overlaps_copies_with_compute_inside_a_core(tmp_path):
    pipeline, scalar = sim_evidence.case_blocks(case_dir(tmp_path, "cube_matmul"))
    assert pipeline["status"] == "proven" and pipeline["overlap_cycles"] == 600
    assert scalar["dominant"] is False and scalar["share"] < roofline.SCALAR_DOMINANT_SHARE


def test_the_shipped_simulator_platform_is_measured_and_names_its_source():
    obj = json.loads((ROOT / "platforms" / "pypto-sim-a2a3.json").read_text())
    schemas.validate(obj, "platform", "pypto-sim-a2a3")
    platform = roofline.parse_platform(obj, "pypto-sim-a2a3")
    assert platform.backend == "pypto-sim"
    assert {p.status for p in platform.peaks.values()} == {"measured"}
    assert all("Average" in p.source and "Usage" in p.source for p in platform.peaks.values())


def test_the_frozen_chip_picks_its_shipped_platform_and_an_unknown_chip_none():
    assert sim_evidence.default_platform({"device_arch": "A2A3"}) == ROOT / "platforms" / "pypto-sim-a2a3.json"
    assert sim_evidence.default_platform({"device_arch": "A5"}) is None
    assert sim_evidence.default_platform(None) is None


def test_a_paired_round_reads_the_candidate_arm(tmp_path):
    folder = case_dir(tmp_path, "vector_softmax")
    (folder / "repeat_001").rename(tmp_path / "arm")
    (folder / "repeat_001").mkdir()
    (tmp_path / "arm").rename(folder / "repeat_001" / "candidate")
    pipeline, scalar = sim_evidence.case_blocks(folder)
    assert pipeline["status"] == "residual_not_overlapped"
    assert "repeat_001/candidate/_simulate.stat.report.txt" in scalar["grounds"][0]


def _bubble_sums(text: str, prefix: str) -> tuple[int, float]:
    """(cores that ran tasks, summed Wait Predecessor Time) of the cores named ``<prefix>_N`` (regex, not the parser)."""
    cores, total = 0, 0.0
    for block in text.split("[")[1:]:
        name, _, body = block.partition("]")
        tasks = int(re.search(r"Execute task num:(\d+)", body).group(1)) if "Execute task num" in body else 0
        if name.startswith(prefix + "_") and tasks > 0:
            cores += 1
            total += float(re.search(r"Wait Predecessor Time:\s*([0-9.eE+-]+)", body).group(1))
    return cores, total


def test_a_mix_kernel_names_the_cube_vector_handoff_wait_per_side(tmp_path):
    """The attention baseline (cube and vector tasks in one launch): per side the busy pipes and the time
    its cores waited on predecessors, summed from bubble_analysis.log; a cube-only kernel has no hand-off."""
    pipeline, _ = sim_evidence.case_blocks(case_dir(tmp_path, "mix_attention"))
    text = (RECORDED / "mix_attention" / "bubble_analysis.log").read_text()
    for side in ("AIC", "AIV"):
        cores, wait = _bubble_sums(text, side)
        assert pipeline["handoff"][side]["cores"] == cores > 0
        assert pipeline["handoff"][side]["wait_predecessor_us"] == pytest.approx(wait, abs=1e-5)
    assert any(g.startswith("AIC:") and "'cube'" in g for g in pipeline["grounds"])
    assert any(g.startswith("AIV:") and "'vec'" in g for g in pipeline["grounds"])
    assert any("cube -> vector hand-off" in g and "bubble_analysis.log" in g for g in pipeline["grounds"])
    cube_only, _ = sim_evidence.case_blocks(case_dir(tmp_path, "cube_matmul"))
    assert "handoff" not in cube_only
