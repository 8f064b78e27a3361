"""Instruction timeline (#22.2): the per-pipe model, both parsers, and the CLI on the fake msprof."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script
from perftune.errors import ContractError
from perftune.profiler import timeline

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
sys.path.insert(0, str(FAKE))
import fake_timeline  # noqa: E402  (the fixture writer: one source of the documented layout)

TARGET = "pypto_softmax_kernel_mix_aic_0"


def fake_env(tmp: Path, **extra: str) -> dict:
    return {"PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}", "FAKE_MSPROF_PYTHON": sys.executable,
            "FAKE_MSPROF_STATE": str(tmp / "state.json"), "FAKE_MSPROF_TARGET": TARGET, **extra}


def test_union_and_same_lane_overlap_only():
    events = [timeline.Event((1, 0), "MTE2", 0, 10), timeline.Event((1, 0), "MTE2", 5, 12),
              timeline.Event((1, 0), "VECTOR", 8, 20), timeline.Event((1, 1), "VECTOR", 0, 40),
              timeline.Event((1, 1), "SCALAR", 50, 60)]
    model = timeline.summarise((0.0, 40.0), events, expected=["MTE2", "VECTOR", "MTE3"])
    assert model["pipes"]["MTE2"]["busy"] == 12.0          # 0-12 once, not 10 + 7
    assert model["overlap_same_lane"] == {"MTE2|VECTOR": 4.0}  # lane (1,1)'s vector never counts
    assert model["completeness"]["missing_pipes"] == ["MTE3"] and model["completeness"]["status"] == "incomplete"
    assert "SCALAR" not in model["pipes"]                 # outside the window


@pytest.mark.parametrize("mode,needle", [("truncated", "truncated"), ("appended", "second JSON document"),
                                         ("two_windows", "2 target-kernel windows")])
def test_broken_exports_are_refused(mode, needle):
    text = fake_timeline.card_trace(TARGET, [mode])
    with pytest.raises(ContractError, match=needle):
        timeline.read_trace([(text, "msprof.json")], TARGET)


def test_wrong_name_is_an_empty_capture_and_lanes_come_from_the_file():
    text = fake_timeline.card_trace(TARGET, ["ok"])
    with pytest.raises(ContractError, match="empty capture"):
        timeline.read_trace([(text, "msprof.json")], "softmax_kernel", require_target=True)
    trace = timeline.read_trace([(text, "msprof.json")], TARGET)
    model = timeline.summarise_trace(trace)
    assert trace.window == (1000.0, 1040.0) and model["window"]["source"] == "target_event"
    assert model["lane_model"] == "thread_is_lane"
    assert {(*r["lane"], r["process"], r["thread"]) for r in model["lanes"]} == {
        (1, 0, "AI Vector Core", "block 0"), (1, 1, "AI Vector Core", "block 1"), (2, 0, "AI Cube Core", "block 0")}
    assert "other" in model["pipes"]  # FLOWCTRL kept, not dropped, not a pipe
    cross = timeline.read_trace([(fake_timeline.card_trace(TARGET, ["cross_lane_only"]), "x")], TARGET)
    assert timeline.summarise_trace(cross)["overlap_same_lane"].get("MTE2|VECTOR", 0.0) == 0.0


def test_fake_simulator_core_trace_has_the_real_pid_model():
    events = fake_timeline.core_trace(list(fake_timeline.VECTOR_LANE))
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {60: "MTE2", 70: "MTE3", 10: "SCALAR", 30: "VECTOR"}
    trace = timeline.read_trace([(json.dumps({"traceEvents": events}), "core0.veccore0/trace.json")],
                                core="core0.veccore0")
    model = timeline.summarise_trace(trace)
    assert model["lane_model"] == "file_is_core" and [r["lane"] for r in model["lanes"]] == [["core0.veccore0"]]
    assert model["window"]["source"] == "capture" and "whole capture" in model["window"]["note"]
    # VECTOR 8-30 and 12-20 on two channels: one union; MTE2 0-10 overlaps it 8-10 on the same core
    assert model["pipes"]["VECTOR"]["busy"] == 22.0 and model["overlap_same_lane"]["MTE2|VECTOR"] == 2.0


def test_slices_in_order_and_a_missing_slice_named():
    assert timeline.slice_order(["msprof_slice_1_20240611120001.json", "msprof_slice_0_20240611120000.json"]) == [
        "msprof_slice_0_20240611120000.json", "msprof_slice_1_20240611120001.json"]
    with pytest.raises(ContractError, match="slice 0 is missing"):
        timeline.slice_order(["msprof_slice_1_20240611120001.json", "msprof_slice_2_20240611120001.json"])
    with pytest.raises(ContractError, match="2 timeline exports"):
        timeline.slice_order(["msprof_20240611120000.json", "msprof_20240611120000_1.json"])
    names, texts = fake_timeline.sliced(TARGET, ["sliced"])
    whole = timeline.summarise_trace(timeline.read_trace([(fake_timeline.card_trace(TARGET, ["ok"]), "w")], TARGET))
    parts = timeline.summarise_trace(timeline.read_trace(list(zip(texts, names)), TARGET))
    assert parts["pipes"] == whole["pipes"] and parts["window"] == whole["window"]


def test_exact_timestamps_and_host_ops_are_never_a_pipe():
    text = json.dumps([{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Python"}},
                       {"ph": "X", "name": "aten::_local_scalar_dense", "pid": 1, "tid": 1,
                        "ts": "1784177220813328.982", "dur": 3.13}])
    model = timeline.summarise_trace(timeline.read_trace([(text, "trace_view.json")]))
    assert model["window"]["start"] == "1784177220813328.982" and model["window"]["end"] == "1784177220813332.112"
    assert list(model["pipes"]) == ["other"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timeline")
    op = tmp / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs"))
    freeze_example(op, "--backend", "msprof", "--op-name", TARGET, repeats=1, warmup=0)
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, env=fake_env(tmp))
    assert proc.returncode == 0, proc.stderr
    return op, tmp


def fresh(measured, name):
    op, tmp = measured
    copy = tmp / name
    shutil.copytree(op, copy)
    return copy, tmp


def test_card_timeline_per_case(measured):
    op, tmp = fresh(measured, "card")
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--json",
                      env=fake_env(tmp))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["cases"]
    assert [r["status"] for r in rows] == ["complete"] * 4
    doc = json.loads((op / rows[0]["path"]).read_text())
    assert doc["collection_kind"] == "supplemental_instruction_profile"
    assert doc["canonical_timing_source"] == "separate_formal_compare" and doc["biu_database"] == "raw/biu_perf.db"
    assert doc["model"]["overlap_same_lane"]["MTE2|VECTOR"] == 4.0  # 2 us on each of the two vector blocks
    assert doc["expected_pipes_from"]["MTE3"]["column"] == "aiv_mte3_ratio"
    for record in doc["files"]:
        assert (op / record["path"]).is_file()
    assert doc["advisor"] is None   # msprof-analyze (the optional ascend extra) is not installed here


def test_advisor_findings_are_archived_when_msprof_analyze_is_installed(measured):
    op, tmp = fresh(measured, "advisor")
    env = fake_env(tmp)
    env["PATH"] = f"{FAKE / 'advisor_bin'}{os.pathsep}{env['PATH']}"
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    path = op / json.loads(proc.stdout)["cases"][0]["path"]
    doc = json.loads(path.read_text())
    assert doc["advisor"]["returncode"] == 0
    assert doc["advisor"]["files"] == ["raw/advisor/advisor_stdout.log", "raw/advisor/mstt_advisor_fake.html"]
    assert "device_0" in (path.parent / "raw/advisor/mstt_advisor_fake.html").read_text()
    assert any(r["path"].endswith("mstt_advisor_fake.html") for r in doc["files"])
    again = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", env=fake_env(tmp))
    assert_one_line_error(again, 2, "never overwritten")


def test_card_timeline_from_a_sliced_export(measured):
    op, tmp = fresh(measured, "card_sliced")
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--json",
                      env=fake_env(tmp, FAKE_MSPROF_TIMELINE="sliced"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((op / json.loads(proc.stdout)["cases"][0]["path"]).read_text())
    kept = [r["path"].rsplit("/", 1)[-1] for r in doc["files"] if "msprof_slice" in r["path"]]
    assert kept == ["msprof_slice_0_20240611120000.json", "msprof_slice_1_20240611120001.json"]
    assert doc["model"]["overlap_same_lane"]["MTE2|VECTOR"] == 4.0   # the same model as the unsliced export


def test_parse_cli_reads_slices_and_refuses_a_missing_file(tmp_path):
    names, texts = fake_timeline.sliced(TARGET, ["sliced"])
    for name, text in zip(names, texts):
        (tmp_path / name).write_text(text)
    proc = run_script("instruction_timeline.py", "parse", "--trace", tmp_path / names[1], "--trace", tmp_path / names[0],
                      "--op-name", TARGET, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["window"] == {"start": "1000.0", "end": "1040.0", "duration": 40.0,
                                                 "source": "target_event",
                                                 "note": f"the window is the one event named {TARGET!r}"}
    assert_one_line_error(run_script("instruction_timeline.py", "parse", "--trace", tmp_path / "nope.json"), 2,
                          "cannot read the trace")
    (tmp_path / "msprof_slice_2_20240611120009.json").write_text(texts[0])
    assert_one_line_error(run_script("instruction_timeline.py", "parse", "--trace", tmp_path / names[0], "--trace",
                                     tmp_path / "msprof_slice_2_20240611120009.json"), 2, "slice 1 is missing")


@pytest.mark.parametrize("mode,needle", [("missing_lane", "missing pipes ['MTE3']"),
                                         ("two_exports", "2 new timeline exports"),
                                         ("slice_missing", "slice 0 is missing"),
                                         ("two_windows", "2 target-kernel windows")])
def test_card_timeline_failures_name_the_problem(measured, mode, needle):
    op, tmp = fresh(measured, f"card_{mode}")
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--json",
                      env=fake_env(tmp, FAKE_MSPROF_TIMELINE=mode))
    assert proc.returncode == 1
    rows = json.loads(proc.stdout)["cases"]
    assert all(needle in r["problem"] for r in rows)
    assert not list((op / "docs/perf/timeline").rglob("timeline.json"))


def test_simulator_timeline_and_the_silent_empty_capture(measured):
    op, tmp = fresh(measured, "sim")
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--source",
                      "simulator", "--kernel-name", "softmax_kernel", "--json", env=fake_env(tmp))
    assert proc.returncode == 1 and "empty capture" in json.loads(proc.stdout)["cases"][0]["problem"]
    proc = run_script("instruction_timeline.py", "collect", "--op-dir", op, "--round", "round_001", "--source",
                      "simulator", "--json", env=fake_env(tmp))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((op / json.loads(proc.stdout)["cases"][0]["path"]).read_text())
    assert doc["simulator"]["cores"] == ["core0.cubecore0", "core0.veccore0", "core0.veccore1"]
    assert doc["model"]["overlap_same_lane"]["MTE2|VECTOR"] == 4.0
