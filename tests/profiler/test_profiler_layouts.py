"""Real layouts: timestamped and device-prefixed slices, the CANN <= 6.3 device_<n>/summary tree,
msOpProf CSVs (trailing comma, NA), the advisor's 'Unknown profiling type'."""

from __future__ import annotations

from pathlib import Path

import pytest

from perftune.errors import ContractError
from perftune.profiler import advisor_output, inspection, msopprof_csv, msprof_csv, prof_layout

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "real_profiler" / "cannbot_add_cann9"
ASCENDC = CORPUS / "ascendc_b1" / "PROF_000001_20260716124543725_00195781ONMNNAML" / "mindstudio_profiler_output"


def test_msprof_slice_names_with_timestamps_that_differ_are_one_table():
    # the names msprof writes (Ascend/msinsight test data: op_summary_slice_0_20230919172304.csv, ..._1_...305.csv)
    names = ["op_summary_slice_1_20230919172305.csv", "op_summary_slice_0_20230919172304.csv", "task_time_x.csv"]
    assert msprof_csv.table_files(names, "op_summary", "out") == names[1::-1]
    prefixed = [f"op_summary_0_slice_{n}_2024061112000{n}.csv" for n in (2, 0, 1)]
    assert msprof_csv.table_files(prefixed, "op_summary", "out") == sorted(prefixed)
    assert msprof_csv.table_files(["task_time_slice_0_1.csv", "task_time_slice_1_2.csv"], "task_time", "o") == [
        "task_time_slice_0_1.csv", "task_time_slice_1_2.csv"]


def test_a_missing_slice_is_named_and_mixed_runs_are_refused():
    with pytest.raises(ContractError, match=r"slice 1 is missing \(have \[0, 2\]\)"):
        msprof_csv.table_files(["op_summary_slice_0_1.csv", "op_summary_slice_2_3.csv"], "op_summary", "out")
    with pytest.raises(ContractError, match="slice 0 exists 2 times"):
        msprof_csv.table_files(["op_summary_slice_0_1.csv", "op_summary_slice_0_2.csv"], "op_summary", "out")
    with pytest.raises(ContractError, match="found 2"):
        msprof_csv.table_files(["op_summary_1.csv", "op_summary_slice_0_2.csv"], "op_summary", "out")


def _slice_real_table(folder: Path, drop: int | None = None) -> None:
    """The real Ascend C op_summary cut into 3 slices of whole rows (header repeated), as msprof does."""
    (source,) = ASCENDC.glob("op_summary_*.csv")
    head, *rows = source.read_bytes().splitlines(keepends=True)
    folder.mkdir(parents=True)
    for n, part in enumerate((rows[:4], rows[4:7], rows[7:])):
        if n != drop:
            (folder / f"op_summary_slice_{n}_2026071612454{8 + n}.csv").write_bytes(head + b"".join(part))


def test_slices_merge_to_the_real_table_and_the_cann63_summary_layout_is_found(tmp_path):
    for layout in ("PROF_1/mindstudio_profiler_output", "PROF_2/device_0/summary"):
        root = tmp_path / layout.split("/")[0]
        _slice_real_table(tmp_path / layout)
        files = prof_layout.table_files(root, "op_summary")
        assert [f.name[:19] for f in files] == ["op_summary_slice_0_", "op_summary_slice_1_", "op_summary_slice_2_"]
        report = inspection.inspect_path(root)
        (item,) = report["ops"]
        assert (item["exact_op_name"], item["launches"]) == ("add_kernel", 10)
        assert item["total_duration_us"] == pytest.approx(107.582, abs=1e-9)   # awk sum of the real file


def test_inspect_names_the_missing_slice(tmp_path):
    _slice_real_table(tmp_path / "PROF_1" / "mindstudio_profiler_output", drop=1)
    with pytest.raises(ContractError, match="slice 1 is missing"):
        inspection.inspect_path(tmp_path / "PROF_1")


# msOpProf writes a trailing comma on every line and NA for missing (the format quoted in public
# READMEs, e.g. "topk_custom_0,vector,155.740005,1,NA,4,1304945,1800,1800,"); no real file was found.
BASIC = ("Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current Freq,Rated Freq,\n"
         "topk_custom_0,vector,155.740005,1,NA,4,1304945,1800,1800,\n")
PIPE = ("block_id,sub_block_id,aiv_time(us),aiv_vec_ratio,aiv_scalar_ratio,aiv_mte2_ratio,\n"
        "0,vector0,150.1,0.25,0.5,NA,\n1,vector0,149.9,0.35,0.1,0.2,\n")


def test_msopprof_basic_info_and_pipe_utilization():
    (row,) = msopprof_csv.op_basic_info(BASIC, "OpBasicInfo.csv")
    assert row == {"op_name": "topk_custom_0", "op_type": "vector", "duration_us": 155.740005, "block_dim": 1.0,
                   "mix_block_dim": None, "device_id": 4.0, "current_freq_mhz": 1800.0, "rated_freq_mhz": 1800.0}
    pipe = msopprof_csv.pipe_utilization(PIPE, "PipeUtilization.csv")
    assert pipe["aiv_vec_ratio"] == {"values": [0.25, 0.35], "blocks": 2, "min": 0.25, "mean": 0.3, "max": 0.35}
    assert pipe["aiv_mte2_ratio"]["values"] == [0.2]   # NA is missing, never 0


def test_msopprof_files_in_an_opprof_tree_and_refusals(tmp_path):
    kernel = tmp_path / "OPPROF_20260101_X" / "device0" / "topk_custom_0" / "0"
    kernel.mkdir(parents=True)
    (kernel / "OpBasicInfo.csv").write_text(BASIC)
    (kernel / "PipeUtilization.csv").write_text(PIPE)
    report = inspection.inspect_path(tmp_path / "OPPROF_20260101_X")
    assert [m["kind"] for m in report["msopprof"]] == ["OpBasicInfo", "PipeUtilization"]
    (kernel / "Memory.csv").write_text("block_id,sub_block_id,aiv_ub_read_bw(GB/s),\n0,vector0,1.5,\n")
    assert prof_layout.kind_of_file(kernel / "Memory.csv") is None   # a table no reader knows: not read
    with pytest.raises(ContractError, match="trailing comma: the way msOpProf writes"):
        msprof_csv.read_op_summary(BASIC, "op_summary_x.csv")


def test_advisor_unknown_profiling_type_is_not_applicable():
    out = "[WARNING] Unknown profiling type, the default value is set pytorch\n[INFO] advisor result: x.html\n"
    assert advisor_output.applicability(out) == (
        False, "the advisor did not recognise the folder: [WARNING] Unknown profiling type, the default value "
        "is set pytorch")
    assert advisor_output.applicability("[INFO] advisor result: x.html\n") == (True, None)
