"""Real profiler timelines and MIX / zero-time rows (#26 items 5-8), through the readers and the CLI.

Every expected figure was computed by hand from the raw files (python's json with Decimal and a
separate interval union, not our reader); the folders' PROVENANCE.md and the corpus README name the
sources. Trimming of the files: whole events / rows only.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from decimal import Decimal

import pytest

from conftest import assert_one_line_error, run_script
from perftune.contract import protocol
from perftune.measure import routing
from perftune.profiler import case_tables, core_types
from perftune.terminal import profiler, roofline

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real_profiler"
CUBE_TRACE = REAL / "tilelang_opprof_foreach_norm" / "core0.cubecore0" / "trace.json"
VEC_TRACE = REAL / "tilelang_opprof_foreach_norm" / "core0.veccore0" / "trace.json"
ALLCORE_TRACE = REAL / "tilelang_opprof_foreach_norm" / "simulator_trace_allcore.json"
PYPTO_JSON = REAL / "bobbyweng_pypto_add_timeline" / "msprof_20260716124705.json"
PYPTO_SUMMARY = REAL / "bobbyweng_pypto_add_timeline" / "op_summary_20260716124706.csv"
TRACE_VIEW = REAL / "msprof_analyze_trace_view" / "trace_view.json"
MIX_DETAILS = REAL / "msprof_analyze_mix_kernel" / "kernel_details.csv"


def parse(*args) -> dict:
    proc = run_script("instruction_timeline.py", "parse", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_real_simulator_core_trace_is_one_lane_with_the_pipes_as_processes():
    model = parse("--trace", CUBE_TRACE)
    assert model["lane_model"] == "file_is_core"
    assert [r["lane"] for r in model["lanes"]] == [["core0.cubecore0"]]   # 8 processes, one core
    assert model["window"] == {"start": "21.122777938842773", "end": "21.555556310340761826",
                               "duration": 0.432778371497988826, "source": "capture",
                               "note": "no event names the kernel: the window is the whole capture "
                                       "(every event of the trace)"}
    pipes = model["pipes"]
    assert sorted(pipes) == ["CUBE", "MTE1", "MTE2", "SCALAR", "other"]
    assert pipes["SCALAR"]["busy"] == 0.14611007273197187 and pipes["SCALAR"]["events"] == 2   # the 0-length MOV_SPR_XN drops
    assert pipes["CUBE"]["busy"] == 0.0016666667070239781 and pipes["CUBE"]["events"] == 3
    assert pipes["MTE1"]["busy"] == 0.002779168076811971   # MTE1_1 and MTE1_2 channels united
    assert pipes["MTE2"]["busy"] == 0.002222222276031971
    # SCALARLDST, FLOWCTRL, ALL (a barrier), CACHEMISS: kept as "other", never a pipe (zero-length spans drop)
    assert pipes["other"]["events"] == 1 + 1 + 1 + 2   # FLOWCTRL's JUMP/JUMPC/END have dur 0.0
    overlap = model["overlap_same_lane"]
    assert overlap["CUBE|SCALAR"] == 0.0016666667070239781       # same core: real overlap
    assert overlap["CUBE|MTE1"] == 0.0 and overlap["CUBE|MTE2"] == 0.0


def test_real_vector_core_overlap_counts_no_sync_wait():
    model = parse("--trace", VEC_TRACE)
    assert [r["lane"] for r in model["lanes"]] == [["core0.veccore0"]]
    pipes = model["pipes"]
    assert pipes["VECTOR"]["busy"] == float(Decimal("0.6883393416646877331")) and pipes["VECTOR"]["events"] == 109
    assert pipes["MTE2"]["busy"] == float(Decimal("0.5216668948996812927")) and pipes["MTE2"]["events"] == 4
    assert pipes["MTE3"]["busy"] == 0.12833333015441895
    assert pipes["wait"]["events"] == 5   # WAIT_FLAG on VECTOR (2), MTE2 (2), MTE3 (1): stalled, not busy
    assert model["overlap_same_lane"]["MTE2|VECTOR"] == float(Decimal("0.0044460885692381767"))
    assert model["overlap_same_lane"]["MTE3|VECTOR"] == 0.0
    block = profiler.pipeline_block(model, {"path": "timeline.json", "sha256": "0" * 64})
    # 0.00445 of the shorter side 0.650 (MTE2 + MTE3) = 0.684 %: not overlapped (the waits would have said 163 %)
    assert block["status"] == "residual_not_overlapped" and block["overlap_share"] == pytest.approx(0.0044460885692381767 / 0.6500002250540999, rel=1e-5)
    assert block["source"]["lanes"][0]["lane"] == ["core0.veccore0"]


def test_real_allcore_simulator_trace_lanes_are_the_pid_cores():
    model = parse("--trace", ALLCORE_TRACE)
    assert model["lane_model"] == "process_is_core" and [r["lane"] for r in model["lanes"]] == [["core0.cubecore0"]]
    # the same core's MTE1 and MTE2 time as in its per-core trace (two formats, one figure)
    assert model["pipes"]["MTE1"]["busy"] == 0.002779168076811971 and model["pipes"]["MTE2"]["busy"] == 0.002222222276031971
    assert model["pipes"]["SCALAR"]["busy"] == float(Decimal("0.1466666669584810854"))
    assert model["window"]["start"] == "21.324443817138672" and model["window"]["end"] == "21.4827786087989811"


def test_parse_of_a_real_trace_without_op_name_names_the_window_in_text():
    proc = run_script("instruction_timeline.py", "parse", "--trace", CUBE_TRACE, "--op-name", "foreach_norm")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("window [21.122777938842773, 21.555556310340761826] (capture: no event names the kernel "
                            "'foreach_norm'") and "file_is_core" in first


def test_real_msprof_timeline_keeps_epoch_microseconds_exact():
    model = parse("--trace", PYPTO_JSON)
    assert model["lane_model"] == "thread_is_lane"
    assert model["window"]["start"] == "1784177218856521.005"   # float64 would give ...521.0
    assert model["window"]["end"] == "1784177220817278.121"
    assert list(model["pipes"]) == ["other"]   # a timeline without instruction profiling: no pipe spans
    lanes = {(r["process"], r["thread"]) for r in model["lanes"]}
    assert {("Ascend Hardware", "Stream 42"), ("Ascend Hardware", "Stream 43"), ("Ascend Hardware", "Stream 46"),
            ("CANN", "Thread 198324")} <= lanes


def test_one_pypto_launch_is_three_events_named_by_the_op():
    proc = run_script("instruction_timeline.py", "parse", "--trace", PYPTO_JSON, "--op-name", "PYPTO_add_binary_kernel")
    assert_one_line_error(proc, 2, "3 target-kernel windows named 'PYPTO_add_binary_kernel'")


def test_torch_npu_host_op_local_scalar_dense_is_not_scalar_pipe_time():
    model = parse("--trace", TRACE_VIEW)
    assert "SCALAR" not in model["pipes"] and list(model["pipes"]) == ["other"]
    assert model["pipes"]["other"]["events"] == 45 + 6   # 45 aten::_local_scalar_dense + 6 device kernels
    assert model["window"]["start"] == "1704161511421076.319" and model["window"]["end"] == "1704161511434294.961"


def rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_cann9_zero_core_time_next_to_cycles_is_missing_not_zero():
    row = rows(PYPTO_SUMMARY)[2]   # the AI-core task of launch 1 (stream 46): aicore_time 0.0, 4009343 cycles
    assert core_types.core_time(0.0, 4009343.0) == (None, "missing: 0.0 written next to 4.00934e+06 cycles "
                                                          "(no frequency data), not 0")
    route = routing.route(row, "op_summary.csv")
    assert route["primary_core"] == "aic" and route["primary_core_basis"].startswith("cycles: only aic")
    assert route["ratios"]["aic_scalar_ratio"] == 0.941 and route["label"] == "scalar_candidate"
    # memory traffic over that core time: missing, never 0 B
    cite = {"metric": "Memory", "files": ["x"], "rows": [4], "aggregation": "median over 1 repeats"}
    columns = {"Memory": {c: {**cite, "column": c, "value": v} for c, v in (
        ("aic_main_mem_read_bw(GB/s)", 12.5), ("aicore_time(us)", float(row["aicore_time(us)"])),
        ("aic_total_cycles", float(row["aic_total_cycles"])))}}
    peak = roofline.Peak(1.6e12, "bytes/s", "published", "spec")
    levels = profiler.memory_levels(columns, 132.123, peak)
    assert levels["GM"]["bytes"] is None and levels["GM"]["missing_core_time"][0]["core_time"] == "aicore_time(us)"


def pipe_columns(row: dict) -> dict:
    cite = {"metric": protocol.CANONICAL_METRIC, "files": ["kernel_details.csv"], "rows": [2],
            "aggregation": "median over 1 repeats"}
    out = {}
    for column, cell in row.items():
        try:
            out[column] = {**cite, "column": column, "value": float(cell)}
        except (TypeError, ValueError):
            continue
    return {protocol.CANONICAL_METRIC: out}


def test_real_mix_kernel_reports_the_primary_sides_ratios():
    mix = rows(MIX_DETAILS)[0]   # FlashAttentionScore MIX_AIC: aic 366.147 us, aiv 365.782 us
    columns = pipe_columns(mix)
    assert case_tables.primary_core(columns) == ("aic", "time")
    ratios = case_tables.pipe_ratios(columns)
    assert ratios["SCALAR"]["value"] == 0.962 and ratios["SCALAR"]["core"] == "aic"
    assert "VECTOR" not in ratios   # the vector side's ratios are reported per side, not mixed in
    assert case_tables.pipe_ratios_by_core(columns)["aiv"]["SCALAR"]["value"] == 0.377
    assert routing.route(mix)["primary_core"] == "aic"
    vector = rows(MIX_DETAILS)[1]   # aclnnAdd AI_VECTOR_CORE: aicore_time 0 with 0 cycles = the idle side
    assert case_tables.pipe_ratios(pipe_columns(vector))["SCALAR"]["core"] == "aiv"


def test_nearly_idle_side_cannot_make_scalar_dominant():
    row = {"aicore_time(us)": "4.45", "aic_scalar_ratio": "0.551", "aiv_time(us)": "300.0", "aiv_scalar_ratio": "0.062",
           "aiv_vec_ratio": "0.7"}
    ratios = case_tables.pipe_ratios(pipe_columns(row))
    assert ratios["SCALAR"]["value"] == 0.062 and ratios["SCALAR"]["core"] == "aiv"   # max() gave 0.551
    assert routing.route(row)["ratios"]["aiv_scalar_ratio"] == 0.062
    assert case_tables.expected_pipes(pipe_columns(row)) == ["SCALAR", "VECTOR"]
