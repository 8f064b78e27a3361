"""Real profiler output (tests/fixtures/real_profiler/, README there): one test per file through
``scripts/profiler_inspect.py --json``. Every expected figure was computed by hand from the file
(awk / the csv module), never by running the readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "real_profiler"
CANN9 = CORPUS / "cannbot_add_cann9"
PYPTO = CANN9 / "pypto_b1" / "PROF_000001_20260716124658116_00198324ACOLKAKA"
ASCENDC = CANN9 / "ascendc_b1" / "PROF_000001_20260716124543725_00195781ONMNNAML"
TORCH = CANN9 / "torch_b1" / "PROF_000001_20260716124350368_00192974EMBEDEEC"
OUT = "mindstudio_profiler_output"


def inspect(path: Path, *extra: str, code: int = 0) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "profiler_inspect.py"), str(path), *extra, "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout) if code == 0 else {"stderr": proc.stderr}


def first_launch(prof: Path, tmp_path: Path, op_rows: int, task_id: str) -> Path:
    """A PROF tree holding the first launch only: the real files cut by whole rows (header kept)."""
    target = tmp_path / prof.name / OUT
    target.mkdir(parents=True)
    (summary,) = (prof / OUT).glob("op_summary_*.csv")
    (times,) = (prof / OUT).glob("task_time_*.csv")
    (target / summary.name).write_bytes(b"".join(summary.read_bytes().splitlines(keepends=True)[:1 + op_rows]))
    lines = times.read_bytes().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.split(b",")[3:5] == [b"46", task_id.encode()])
    (target / times.name).write_bytes(b"".join(lines[:end + 1]))
    return tmp_path / prof.name


def op(report: dict, name: str) -> dict:
    (item,) = [o for o in report["ops"] if o["exact_op_name"] == name]
    return item


def test_pypto_op_summary_a_launch_is_three_rows_timed_by_the_ai_core_task(tmp_path):
    report = inspect(PYPTO, "--op-name", "PYPTO_add_binary_kernel")
    item = op(report, "PYPTO_add_binary_kernel")
    assert (item["rows"], item["launches"], item["rows_per_launch"]) == (30, 10, 3)
    assert (item["compute_streams"], item["control_streams"]) == (["46"], ["42", "43"])
    assert item["total_duration_us"] == pytest.approx(625.593, abs=1e-9)
    assert item["control_duration_us"] == pytest.approx(882.222 + 627.232, abs=1e-9)   # never in the kernel's time
    assert item["launch_durations_us"][0] == 132.123
    assert report["target"]["formal_round"].startswith("refused: 'PYPTO_add_binary_kernel' has 10 launches")
    one = inspect(first_launch(PYPTO, tmp_path, 3, "1"), "--op-name", "PYPTO_add_binary_kernel")
    assert one["target"]["formal_round"] == "accepted"
    assert (one["target"]["duration_us"], one["target"]["row"]) == (132.123, 3)


def test_pypto_task_time_names_the_binary_and_quick_mode_joins_on_ids(tmp_path):
    one = inspect(first_launch(PYPTO, tmp_path, 3, "1"), "--op-name", "PYPTO_add_binary_kernel")
    item = op(one, "PYPTO_add_binary_kernel")
    assert item["task_types"] == ["KERNEL_AICPU", "KERNEL_MIX_AIC"]
    assert item["task_time_kernel_names"] == ["tilefwk_0_mix_aic"]
    assert one["target"]["quick_duration_us"] == 132.122
    full = inspect(PYPTO)
    assert op(full, "PYPTO_add_binary_kernel")["basis"] == "task_time kernel_type"


def test_ascendc_op_summary_ten_launches_of_one_row(tmp_path):
    item = op(inspect(ASCENDC), "add_kernel")
    assert (item["rows"], item["launches"], item["rows_per_launch"], item["control_streams"]) == (10, 10, 1, [])
    assert item["total_duration_us"] == pytest.approx(107.582, abs=1e-9)
    one = inspect(first_launch(ASCENDC, tmp_path, 1, "0"), "--op-name", "add_kernel")
    assert (one["target"]["formal_round"], one["target"]["duration_us"]) == ("accepted", 13.78)


def test_ascendc_task_time_joined_on_stream_and_task(tmp_path):
    one = inspect(first_launch(ASCENDC, tmp_path, 1, "0"), "--op-name", "add_kernel")
    assert op(one, "add_kernel")["task_types"] == ["KERNEL_AIVEC"]
    assert one["target"]["quick_duration_us"] == 13.78


def test_torch_op_summary_aclnn_add(tmp_path):
    item = op(inspect(TORCH), "aclnnAdd_AddAiCore_Add")
    assert (item["rows"], item["launches"], item["launch_durations_us"][0]) == (10, 10, 10.04)
    assert item["total_duration_us"] == pytest.approx(34.92, abs=1e-9)


def test_torch_task_time_binary_name_never_equals_the_op_name(tmp_path):
    one = inspect(first_launch(TORCH, tmp_path, 1, "0"), "--op-name", "aclnnAdd_AddAiCore_Add")
    assert op(one, "aclnnAdd_AddAiCore_Add")["task_time_kernel_names"] == [
        "Add_93b3f8e9594b4018902b635fff3a83c5_high_performance_210000000"]
    assert one["target"]["quick_duration_us"] == 10.04


@pytest.mark.parametrize("folder, rows, total, rule, cores", [
    ("msprof_analyze_advisor", 29, 10061.159, "process_device", {"AI_CORE": 12, "AI_VECTOR_CORE": 8, "MIX_AIC": 9}),
    ("msinsight_level0", 191, 94344.34, "process_device", {"HCCL": 4, "N/A": 187}),
    ("msinsight_rank0_hccl", 21, 37370.9655, "process_device",
     {"AI_CORE": 4, "AI_CPU": 2, "AI_VECTOR_CORE": 2, "DSA_SQE": 2, "HCCL": 4, "MIX_AIC": 4, "MIX_AIV": 3}),
    ("msinsight_st_level2", 40, 4310.12, "column", {"AI_CORE": 5, "AI_VECTOR_CORE": 34, "MIX_AIC": 1}),
])
def test_torch_npu_kernel_details_every_version(folder, rows, total, rule, cores):
    (item,) = inspect(CORPUS / folder)["kernel_details"]
    assert (item["rows"], item["device_rule"], item["accelerator_cores"]) == (rows, rule, cores)
    assert item["total_us"] == pytest.approx(total, abs=1e-6)
    assert item["device_id"] == (0 if rule == "column" else None)


def test_older_op_summary_layout_with_task_types():
    path = CORPUS / "msinsight_kernel_parse" / "op_summary_1.csv"
    report = inspect(path, "--op-name", "ZerosLike")
    flash = op(report, "FlashAttentionScore")
    assert (flash["launches"], flash["task_types"]) == (4, ["MIX_AIC"])
    assert flash["total_duration_us"] == pytest.approx(6969.308 + 7119.9688 + 7023.5739 + 1.8414, abs=1e-9)
    assert (op(report, "NonZero")["launches"], op(report, "trans_Cast_5")["task_types"]) == (3, ["AI_CPU"])
    assert (report["target"]["formal_round"], report["target"]["duration_us"]) == ("accepted", 496.8508)
    # aicore_time(us) 982.72 beside aic_total_cycles 0: the vector side (43632970 cycles) ran it
    assert (report["target"]["primary_core"], report["target"]["primary_core_basis"]) == ("aiv", "cycles: only aiv ran cycles")


def test_nothing_readable_exits_2_with_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("no tables here")
    err = inspect(tmp_path, code=2)["stderr"]
    assert err.count("\n") == 1 and "no profiler table or timeline found" in err
