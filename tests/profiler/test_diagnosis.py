"""The per-operator diagnosis (issue 37 Deliver 1-2, 5): rules D1-D7 on small rows whose figures are stated
by hand, the idle side never deciding, N/A as missing, occupancy against real platform files, and a real
op_summary read by its header whatever its name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import call_script
from perftune.profiler import diagnosis, occupancy

ROOT = Path(__file__).resolve().parents[2]
A2 = ROOT / "platforms" / "atlas-a2-910b.json"
ADD = ROOT / "tests/fixtures/real_profiler/cannbot_add_cann9/ascendc_b1/PROF_000001_20260716124543725_00195781ONMNNAML"
ADD_CSV = ADD / "mindstudio_profiler_output" / "op_summary_20260716124548.csv"


def vec_row(vec, mte2, mte3, scalar=0.02, blocks=None, time=50.0):
    row = {"aiv_time(us)": time, "aicore_time(us)": 0.0, "aiv_vec_ratio": vec, "aiv_mte2_ratio": mte2,
           "aiv_mte3_ratio": mte3, "aiv_scalar_ratio": scalar}
    return {**row, "Block Num": blocks} if blocks else row


def run(rows, durations, **kw):
    return diagnosis.diagnose(rows, durations, **kw)


@pytest.mark.parametrize("row, label, rule_id", [
    (vec_row(0.85, 0.3, 0.2), "vector_bound", "D4"),           # 0.85 > 0.8
    (vec_row(0.4, 0.75, 0.1), "mte2_bound", "D4"),             # the highest and > 0.7
    (vec_row(0.3, 0.2, 0.81), "mte3_bound", "D4"),
    (vec_row(0.1, 0.1, 0.1, scalar=0.9), "scalar_bound", "D4"),
    (vec_row(0.6, 0.2, 0.15), "data_movement_bound", "D5"),    # 0.95 >= 0.9, none dominant
    (vec_row(0.5, 0.2, 0.15), "latency_bound", "D7"),          # 0.85 < 0.9 on a 50 us task
])
def test_each_pipe_rule_on_a_vector_kernel(row, label, rule_id):
    found = run([row] * 3, [50.0] * 3)
    assert (found["label"], found["rule_id"], found["side"]) == (label, rule_id, "aiv"), found["rule"]
    assert found["next"]["families"] and found["figures"]["launches"] == 3


def test_short_tasks_with_nothing_dominant_are_launch_bound_and_the_median_decides():
    found = run([vec_row(0.5, 0.2, 0.15)] * 3, [9.0, 12.0, 400.0])     # median 12 us < 20 us
    assert (found["label"], found["rule_id"]) == ("launch_bound", "D6")
    assert found["figures"]["duration_us"] == {"median": 12.0, "min": 9.0, "max": 400.0, "launches": 3}


def test_the_idle_cube_side_of_a_vector_kernel_never_decides():
    row = {**vec_row(0.5, 0.81, 0.36), "aicore_time(us)": 1.9, "aic_scalar_ratio": 0.87}
    found = run([row] * 2, [226.0] * 2)
    assert (found["label"], found["side"]) == ("mte2_bound", "aiv")
    assert found["other_side"]["side"] == "aic"
    assert found["other_side"]["ratios"]["aic_scalar_ratio"]["median"] == 0.87


def test_na_is_missing_never_zero():
    rows = [diagnosis.numbers_of({"aiv_time(us)": 50.0, "aiv_vec_ratio": v, "aiv_mte2_ratio": 0.1, "OP State": "N/A"})
            for v in (0.9, "N/A", "N/A")]
    assert "aiv_vec_ratio" not in rows[1] and "OP State" not in rows[0]
    found = run(rows, [50.0] * 3)
    assert found["figures"]["ratios"]["aiv_vec_ratio"] == {"median": 0.9, "min": 0.9, "max": 0.9, "launches": 1}
    assert found["label"] == "vector_bound"                   # as 0, the median would be 0 and nothing dominant


def test_no_compute_task_aicpu_and_no_ratio():
    aicpu = run([], [30.0], row_types=["AI_CPU", "AI_CPU"], compute=False)
    assert (aicpu["label"], aicpu["rule_id"]) == ("aicpu_bound", "D1")
    other = run([], [30.0], row_types=["AI_CPU", "WRITE_BACK"], compute=False)
    assert (other["label"], other["rule_id"]) == ("insufficient_evidence", "D2")
    bare = run([{"aiv_time(us)": 40.0}], [41.0])
    assert bare["label"] == "insufficient_evidence" and "PipeUtilization" in bare["next"]["collect"]


def test_platform_cores_of_a2_with_their_source_and_unknown_chips():
    obj = json.loads(A2.read_text(encoding="utf-8"))
    b2 = occupancy.cores_of(obj, "Ascend910B2")
    assert (b2["aic"], b2["aiv"]) == (24, 48) and "vector_core_cnt=48" in b2["source"]
    assert (occupancy.cores_of(obj, "910B4")["aiv"]) == 40
    assert occupancy.cores_of(obj, "Ascend310P3") is None and occupancy.cores_of(obj, None) is None   # 2 entries


@pytest.mark.parametrize("blocks, limited, waves, efficiency", [
    (8, True, 1, 0.166667),      # 40 of 48 vector cores idle
    (48, False, 1, 1.0),
    (50, True, 2, 0.520833),     # 50 / 96: the second wave has 2 blocks
    (90, False, 2, 0.9375),
])
def test_occupancy_waves_against_48_vector_cores(blocks, limited, waves, efficiency):
    cores = {"aic": 24, "aiv": 48, "source": "A2 test", "chip": "910B2"}
    occ = occupancy.assess(blocks, "aiv", cores)
    assert (occ["limited"], occ["waves"], occ["wave_efficiency"]) == (limited, waves, pytest.approx(efficiency))
    found = run([vec_row(0.85, 0.2, 0.1, blocks=blocks)], [60.0], cores=cores)
    assert found["label"] == ("occupancy_bound" if limited else "vector_bound")


def test_occupancy_undecided_without_cores_or_blocks_and_severe_spread_decides():
    assert occupancy.assess(None, "aiv", {"aiv": 48})["decided"] is False          # Block Num 0 / N/A
    assert occupancy.assess(8, "aiv", None)["decided"] is False
    spread = occupancy.spread([10.0, 6.0, 9.5], "x.csv", "aiv_time(us) per block")
    assert spread["spread"] == pytest.approx(0.4) and spread["severe"]
    found = run([vec_row(0.85, 0.2, 0.1)], [60.0], block_spread=spread)
    assert (found["label"], found["rule_id"]) == ("occupancy_bound", "D3")
    assert occupancy.spread([5.0], "x", "y") is None


def test_platform_flag_through_the_cli_and_an_unknown_chip_is_one_line():
    proc = call_script("profiler_inspect.py", ADD, "--platform", A2, "--chip", "Ascend910B2", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["cores"]["aiv"], report["cores"]["status"]) == (48, "unverified_external")
    bad = call_script("profiler_inspect.py", ADD, "--platform", A2, "--chip", "Ascend310P3")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "cores" in bad.stderr and "--chip" in bad.stderr


@pytest.mark.parametrize("name", ["op_summary.csv", "a003-op_summary.csv", "profile.csv"])
def test_a_renamed_real_op_summary_is_read_by_its_header(tmp_path, name):
    shutil.copyfile(ADD_CSV, tmp_path / name)
    for target in (tmp_path / name, tmp_path):
        proc = call_script("profiler_inspect.py", target, "--json")
        assert proc.returncode == 0, proc.stderr
        (op,) = [o for o in json.loads(proc.stdout)["ops"] if o["exact_op_name"] == "add_kernel"]
        assert op["launches"] == 10                           # wc -l: 10 add_kernel rows, one per launch
        assert op["diagnosis"]["label"] == "launch_bound"     # the hand reading (test_side_by_side)
