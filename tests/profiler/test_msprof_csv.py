"""Reading msprof CSVs: header drift, N/A, BOM/CRLF, shards, exact-row selection, discovery."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perftune.measure import routing
from perftune.profiler import launches, msprof_csv
from perftune.errors import ContractError

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "msprof" / "recorded"
TARGET = "pypto_softmax_kernel_mix_aic_0"


def recorded(name: str) -> str:
    return msprof_csv.decode((RECORDED / name).read_bytes(), name)


@pytest.mark.parametrize("name", ["op_summary_PipeUtilization_crlf_bom.csv", "op_summary_fullwidth.csv"])
def test_recorded_tables_select_the_exact_row_not_the_longer_neighbour(name):
    frame = msprof_csv.read_op_summary(recorded(name), name)
    row = msprof_csv.select_target_row(frame, TARGET, name)
    assert row.duration_us == 41.364 and row.row == 3 and row.task_type == "MIX_AIC"
    assert row.values["Device_id"] == 0.0 and row.values["Input Shapes"] == "64,4096"
    assert row.values["Context ID"] is None
    assert routing.route(row.values, name)["label"] == "compute_candidate"


def test_bom_and_crlf_leave_no_trace_in_headers_or_cells():
    frame = msprof_csv.read_op_summary(recorded("op_summary_PipeUtilization_crlf_bom.csv"), "x")
    assert frame.columns[0] == "Device_id" and frame.columns[-1] == "cube_utilization(%)"
    assert not any(str(v).endswith("\r") for v in frame.iloc[:, -1].dropna())


@pytest.mark.parametrize("raw,canonical", [
    ("Task Duration（us）", "Task Duration(us)"), ("Duration(us)", "Task Duration(us)"),
    (" Task  Duration (us) ", "Task Duration(us)"), ("Name", "Op Name"), ("op_name", "Op Name"),
    ("Device Id", "Device_id"), ("Device ID", "Device_id"), ("Device_id", "Device_id"),
    ("\ufeffDevice_id", "Device_id"), ("aiv_vec_ratio", "aiv_vec_ratio"),
    ("cube_utilization（%）", "cube_utilization(%)"), ("Model Name", "Model Name"),
])
def test_header_normalisation_and_aliases(raw, canonical):
    assert msprof_csv.normalize_header(raw) == canonical


def test_na_and_empty_cells_are_missing_never_zero():
    text = "Op Name,Task Duration(us),aiv_vec_ratio,aiv_time(us)\nk,5.5,N/A,\nm, N/A\t,0.2,1\n"
    frame = msprof_csv.read_op_summary(text, "t.csv")
    row = msprof_csv.select_target_row(frame, "k", "t.csv")
    assert row.values == {"Op Name": "k", "Task Duration(us)": 5.5, "aiv_vec_ratio": None, "aiv_time(us)": None}
    with pytest.raises(ContractError, match="duration None is not a finite number > 0"):
        msprof_csv.select_target_row(frame, "m", "t.csv")


@pytest.mark.parametrize("cell", ["0", "-3", "inf", "nan", "abc"])
def test_target_duration_must_be_finite_and_positive(cell):
    frame = msprof_csv.read_op_summary(f"Op Name,Task Duration(us)\nk,{cell}\n", "t.csv")
    with pytest.raises(ContractError, match="Task Duration"):
        msprof_csv.select_target_row(frame, "k", "t.csv")


def test_zero_rows_names_what_is_there_and_never_fuzzy_matches():
    frame = msprof_csv.read_op_summary("Op Name,Task Duration(us)\nSoftmax_Kernel,3\nsoftmax_kernel_v2,4\n", "t.csv")
    with pytest.raises(ContractError) as err:
        msprof_csv.select_target_row(frame, "softmax_kernel", "t.csv")
    assert "no row equals 'softmax_kernel' exactly (2 rows" in str(err.value)
    assert "Softmax_Kernel" in str(err.value) and "list-op-names" in str(err.value)


def test_two_exact_rows_are_refused_even_with_different_durations():
    frame = msprof_csv.read_op_summary("Op Name,Task Duration(us)\nk,3\nx,1\nk,9\n", "t.csv")
    with pytest.raises(ContractError, match=r"2 rows equal 'k' \(data rows \[1, 3\]\): the runner launched"):
        msprof_csv.select_target_row(frame, "k", "t.csv")


def test_tab_padded_op_name_is_trimmed_but_otherwise_exact():
    frame = msprof_csv.read_op_summary("Op Name,Task Duration(us)\nk\t,3\nK,4\n", "t.csv")
    assert msprof_csv.select_target_row(frame, "k", "t.csv").duration_us == 3.0


def test_duplicate_headers_after_normalisation_are_refused():
    with pytest.raises(ContractError, match="duplicate column"):
        msprof_csv.read_op_summary("Op Name,Device Id,Device_id,Task Duration(us)\nk,0,0,1\n", "t.csv")
    with pytest.raises(ContractError, match="duplicate column"):
        msprof_csv.read_op_summary("Op Name,Duration(us),Task Duration(us)\nk,1,1\n", "t.csv")


def test_missing_required_column_names_the_column():
    with pytest.raises(ContractError) as err:
        msprof_csv.read_op_summary("Op Name,Task Wait Time(us)\nk,1\n", "op_summary_Memory.csv")
    assert "op_summary_Memory.csv: Task Duration(us): required column missing" in str(err.value)


@pytest.mark.parametrize("text,needle", [
    ("", "empty"), ("\n\nOp Name\n", "blank header"), ("Op Name,,Task Duration(us)\n", "blank header name"),
    ('Op Name,Task Duration(us)\n"k,1\n', "malformed CSV"), ("Op\x00,x\n", "NUL"),
])
def test_malformed_text_is_a_one_line_contract_error(text, needle):
    with pytest.raises(ContractError, match=needle):
        msprof_csv.read_op_summary(text, "t.csv")


def test_non_utf8_bytes_are_refused():
    with pytest.raises(ContractError, match="not valid UTF-8"):
        msprof_csv.decode(b"Op Name\n\xff\xfe\n", "t.csv")


def test_column_subset_reads_only_what_is_asked():
    frame = msprof_csv.read_op_summary(recorded("op_summary_fullwidth.csv"), "x", columns=["Task Type"])
    assert list(frame.columns) == ["Op Name", "Task Duration(us)", "Task Type"]


def test_slices_are_ordered_numerically_and_must_be_contiguous():
    names = ["op_summary_20240101_slice_10.csv", "op_summary_20240101_slice_2.csv", "task_time_1.csv"]
    names += [f"op_summary_20240101_slice_{n}.csv" for n in (0, 1, 3, 4, 5, 6, 7, 8, 9)]
    ordered = msprof_csv.table_files(names, "op_summary", "out")
    assert [int(n.rsplit("_", 1)[1][:-4]) for n in ordered] == list(range(11))
    with pytest.raises(ContractError, match="not contiguous"):
        msprof_csv.table_files(["op_summary_a_slice_0.csv", "op_summary_a_slice_2.csv"], "op_summary", "out")
    with pytest.raises(ContractError, match="exactly one op_summary table, found 2"):
        msprof_csv.table_files(["op_summary_a.csv", "op_summary_b.csv"], "op_summary", "out")
    with pytest.raises(ContractError, match="found 0"):
        msprof_csv.table_files(["task_time_a.csv"], "op_summary", "out")
    assert msprof_csv.table_files(["op_summary_x.csv", "op_statistic_x.csv"], "op_summary", "o") == ["op_summary_x.csv"]


def test_merge_slices_keeps_one_header_and_every_row_in_order():
    first = "\ufeffOp Name,Task Duration(us)\r\na,1\r\nb,2"
    second = "\ufeffOp Name,Task Duration（us）\r\nk,7\r\n"
    merged = msprof_csv.merge_slices([first, second], ["s0", "s1"])
    frame = msprof_csv.read_op_summary(merged, "merged")
    assert list(frame["Op Name"]) == ["a", "b", "k"]
    assert msprof_csv.select_target_row(frame, "k", "merged").row == 3
    with pytest.raises(ContractError, match="slice header differs"):
        msprof_csv.merge_slices([first, "Op Name,X\nk,1\n"], ["s0", "s1"])


def test_discovery_tsv_reports_launches_rows_per_launch_and_streams():
    rows = [{"exact_op_name": "k", "task_type": "KERNEL_AICPU,KERNEL_MIX_AIC", "count": 1, "rows_per_launch": 3,
             "compute_streams": ["46"], "control_streams": ["42", "43"], "total_duration_us": 12.25},
            {"exact_op_name": "py", "task_type": "python_function", "count": 2, "total_duration_us": None}]
    assert msprof_csv.discovery_tsv(rows).splitlines() == [
        "count\trows_per_launch\ttask_type\tstreams\ttotal_duration_us\texact_op_name",
        "1\t3\tKERNEL_AICPU,KERNEL_MIX_AIC\t46 control 42,43\t12.250\tk", "2\tN/A\tpython_function\tN/A\tN/A\tpy"]


# --- property tests -----------------------------------------------------------------------------

ALIASES = {"Op Name": ["Op Name", "Name", "op name", "OP_NAME"],
           "Task Duration(us)": ["Task Duration(us)", "Duration(us)", "Task Duration（us）", "task duration (us)"],
           "Device_id": ["Device_id", "Device Id", "Device ID", "DEVICE_ID"]}
cells = st.one_of(st.floats(min_value=0.001, max_value=1e6, allow_nan=False).map(lambda v: f"{v:.3f}"),
                  st.sampled_from(["N/A", "", "aclnnCast", "MemSet"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["", "Op Name,Task Duration(us),Task Type\n", "Name,Duration(us)\r\n"]),
       st.text(max_size=300))
def test_reader_never_crashes_on_arbitrary_text(head, text):
    try:
        frame = msprof_csv.read_op_summary(head + text, "fuzz.csv")
        launches.group(frame, "fuzz.csv")
        launches.select_target(frame, "k", "fuzz.csv")
    except ContractError as exc:
        assert "\n" not in exc.line()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_reader_never_crashes_on_arbitrary_bytes(data):
    try:
        frame = msprof_csv.read_op_summary(msprof_csv.decode(data, "fuzz.csv"), "fuzz.csv")
        launches.group(frame, "fuzz.csv")
    except ContractError:
        pass


@settings(max_examples=40, deadline=None)
@given(st.tuples(*(st.sampled_from(v) for v in ALIASES.values())),
       st.lists(st.tuples(st.sampled_from(["k", "MemSet", "aclnnCast"]), cells, st.integers(0, 7)),
                min_size=1, max_size=8),
       st.booleans(), st.booleans())
def test_header_aliases_round_trip_to_the_same_frame(spelling, rows, bom, crlf):
    body = "".join(f"{name},{duration},{device}\n" for name, duration, device in rows)
    canonical = "Op Name,Task Duration(us),Device_id\n" + body
    drifted = ",".join(spelling) + "\n" + body
    if crlf:
        drifted = drifted.replace("\n", "\r\n")
    if bom:
        drifted = "\ufeff" + drifted
    want = msprof_csv.read_op_summary(canonical, "a")
    got = msprof_csv.read_op_summary(msprof_csv.decode(drifted.encode(), "b"), "b")
    pd.testing.assert_frame_equal(want, got)
    assert [msprof_csv.normalize_header(s) for s in spelling] == list(ALIASES)


def test_a_row_with_more_fields_than_the_header_is_refused_on_a_full_read():
    with pytest.raises(ContractError, match="Expected 2 fields in line 3, saw 3"):
        msprof_csv.read_op_summary("Op Name,Task Duration(us)\nk,1\nm,1,3\n", "t.csv")
