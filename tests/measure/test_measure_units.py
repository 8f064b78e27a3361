"""Measurement core, pure parts: names, aggregation, hashes, samples.csv, golden contract, CSVs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from perftune.measure import evidence
from perftune.contract import golden, manifest, schemas
from perftune.measure import backends
from perftune.measure.backends import base, cpu
from perftune.profiler import kernel_details


def read_kd(text: str, device: int) -> float:
    return kernel_details.read_kernel_details(text, device).total_us
from perftune.measure.collect import Overrides, resolve_protocol
from perftune.errors import ContractError, EnvError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measure"


def make_manifest(repeats: int = 3, cases=(("a", "[4,8]", "fp16"), ("b", "4x8", "float32"))) -> manifest.Manifest:
    proto = manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=repeats, op_name="k")
    obj = {"schema_version": 2, "protocol": proto.as_dict(),
           "cases": [{"id": i, "shape": s, "dtype": d, "p0": True, "test_function": f"test_{i}"} for i, s, d in cases],
           "optimization_target": {"case_ids": [cases[0][0]], "selection_mode": "user_selected"}}
    return manifest.parse_manifest(obj)


def test_case_dir_name_sanitises_and_hashes():
    sha = hashlib.sha256(b"r64/c4096 fp32").hexdigest()[:8]
    assert evidence.case_dir_name("r64/c4096 fp32") == f"case_r64_c4096_fp32_{sha}"
    assert evidence.case_dir_name("..x..").startswith("case_x_")
    assert evidence.case_dir_name("///") == f"case_case_{hashlib.sha256(b'///').hexdigest()[:8]}"


def test_aggregate_exact_numbers():
    assert evidence.aggregate([5.0, 1.0, 3.0, 100.0], "trimmed_mean") == (4.0, "trimmed_mean")
    assert evidence.aggregate([1.0, 2.0, 9.0], "trimmed_mean") == (2.0, "trimmed_mean")
    assert evidence.aggregate([1.0, 3.0], "trimmed_mean") == (2.0, "median")
    assert evidence.aggregate([4.0, 1.0, 2.0, 3.0], "median") == (2.5, "median")
    assert evidence.aggregate([7.0], "median") == (7.0, "median")
    for bad in ([], [1.0, float("nan")], [1.0, 0.0], [-1.0]):
        with pytest.raises(ContractError):
            evidence.aggregate(bad, "median")


def test_executable_sha256_formula(tmp_path):
    (tmp_path / "test_x.py").write_text("a")
    (tmp_path / "helper.py").write_text("b")
    (tmp_path / "x_golden.py").write_text("frozen")
    files = evidence.source_files(tmp_path)
    assert [p.name for p in files] == ["helper.py", "test_x.py"]
    lines = sorted(f"{p.name}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in files)
    assert evidence.executable_sha256(tmp_path, files) == hashlib.sha256("".join(lines).encode()).hexdigest()


def _first(name):
    return {"collection_id": f"compare_x_{name}", "status": "in_progress"}


def test_reserve_round_never_reuses_numbers_and_never_leaves_an_unlabelled_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(evidence.schemas, "validate", lambda *a: None)
    first, obj, lock1 = evidence.reserve_round(tmp_path, _first)
    second, _, lock2 = evidence.reserve_round(tmp_path, _first)
    assert (first.name, second.name) == ("round_001", "round_002")
    assert obj == _first("round_001") == json.loads((first / "collection.json").read_text())
    (tmp_path / "docs/perf/round_007").mkdir()  # an empty folder left by an old killed reservation
    (tmp_path / "docs/perf/round_009").mkdir()
    (tmp_path / "docs/perf/round_009/collection.json").write_text("{}")
    (tmp_path / "docs/perf/round_010").write_text("a file, not a round")
    (tmp_path / "docs/perf/round_011").symlink_to(tmp_path)
    assert evidence.reserve_round(tmp_path, _first)[0].name == "round_012"
    assert sorted(p.name for p in (tmp_path / "docs/perf").iterdir() if not p.name.startswith(".")) == [
        "round_001", "round_002", "round_007", "round_009", "round_010", "round_011", "round_012"]
    assert evidence.collector_lock_path(first).exists() and not evidence.collector_lock_path(
        tmp_path / "docs/perf/round_009").exists()  # held by this collector / stale ones removed
    lock1.release(unlink=True)
    lock2.release(unlink=True)


def test_an_in_progress_round_is_marked_abandoned_only_when_its_collector_lock_is_free(tmp_path, monkeypatch):
    monkeypatch.setattr(evidence.schemas, "validate", lambda *a: None)
    live, _, live_lock = evidence.reserve_round(tmp_path, _first)      # a collector still running
    dead, _, dead_lock = evidence.reserve_round(tmp_path, _first)
    dead_lock.release()                                                # its process died: lock dropped
    done, obj, done_lock = evidence.reserve_round(tmp_path, _first)
    (done / "collection.json").write_text(json.dumps({**obj, "status": "complete"}))
    done_lock.release(unlink=True)
    assert evidence.mark_abandoned(tmp_path) == [dead.name]
    status = {p.name: json.loads((p / "collection.json").read_text()) for p in (live, dead, done)}
    assert status[live.name]["status"] == "in_progress" and status[done.name]["status"] == "complete"
    assert status[dead.name]["status"] == "failed" and status[dead.name]["failure"] == evidence.ABANDONED
    assert evidence.mark_abandoned(tmp_path) == []                     # idempotent
    assert not evidence.collector_lock_path(dead).exists() and evidence.collector_lock_path(live).exists()
    live_lock.release(unlink=True)
    assert not list((tmp_path / "docs/perf").glob(".*"))


def test_reserve_round_skips_a_number_taken_between_listing_and_rename(tmp_path, monkeypatch):
    monkeypatch.setattr(evidence.schemas, "validate", lambda *a: None)
    taken = []

    def racing(name):  # another collector fills round_001 while this one stages it
        if not taken:
            (tmp_path / "docs/perf/round_001").mkdir()
            (tmp_path / "docs/perf/round_001/collection.json").write_text("{}")
            taken.append(name)
        return _first(name)

    assert evidence.reserve_round(tmp_path, racing)[0].name == "round_002"
    assert not list((tmp_path / "docs/perf").glob(".*.tmp"))
    assert not evidence.collector_lock_path(tmp_path / "docs/perf/round_001").exists()  # released on retry


def test_device_env_sets_id_and_removes_visible_devices():
    env = base.device_env(3, {"ASCEND_RT_VISIBLE_DEVICES": "1", "PATH": "/bin"})
    assert env == {"TILE_FWK_DEVICE_ID": "3", "PATH": "/bin"}
    assert base.runner_env(0, {})["PYTHONPATH"].split(":")[0].endswith("scripts")


def test_samples_csv_parser_accepts_one_row_and_refuses_the_rest():
    text = "repeat,case_id,op_name,duration_us,calls\n1,a,k,12.500,1\n"
    assert cpu.parse_samples_text(text, "k") == base.RepeatResult(12.5, 1, None, ("samples.csv",))
    bad = {
        "repeat,case_id,op_name,duration_us\n1,a,k,12.5\n": "header",
        "repeat,case_id,op_name,duration_us,calls\n": "rows",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k,1,1\n2,a,k,1,1\n": "rows",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k_longer,12.5,1\n": "op_name",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k,nan,1\n": "duration_us",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k,0,1\n": "duration_us",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k,N/A,1\n": "duration_us",
        "repeat,case_id,op_name,duration_us,calls\n1,a,k,3.0,2\n": "calls",
    }
    for text, field in bad.items():
        with pytest.raises(ContractError) as info:
            cpu.parse_samples_text(text, "k")
        assert info.value.field == field


def test_samples_csv_carries_its_format_version_and_an_unknown_one_is_refused():
    text = "repeat,case_id,op_name,duration_us,calls,process,format_version\n7,a,k,12.500,1,3,1\n"
    assert cpu.parse_samples_text(text, "k") == base.RepeatResult(12.5, 1, None, ("samples.csv",), 3)
    for bad in ("2", "x", ""):
        with pytest.raises(ContractError) as info:
            cpu.parse_samples_text(text.replace(",3,1\n", f",3,{bad}\n"), "k")
        assert info.value.field == "format_version" and "unknown evidence format version" in info.value.line()


def test_samples_csv_records_the_process_and_old_files_read_as_one_process():
    new = "repeat,case_id,op_name,duration_us,calls,process\n7,a,k,12.500,1,3\n"
    assert cpu.parse_samples_text(new, "k") == base.RepeatResult(12.5, 1, None, ("samples.csv",), 3)
    assert cpu.parse_samples_text("repeat,case_id,op_name,duration_us,calls\n1,a,k,12.5,1\n", "k").process is None
    for bad, field in (("-1", "process"), ("p1", "process"), ("", "process")):
        with pytest.raises(ContractError) as info:
            cpu.parse_samples_text(new.replace(",1,3\n", f",1,{bad}\n"), "k")
        assert info.value.field == field


def test_process_blocks_split_repeats_into_equal_consecutive_blocks():
    assert cpu.process_blocks(6, 1) == [[1, 2, 3, 4, 5, 6]]
    assert cpu.process_blocks(6, 3) == [[1, 2], [3, 4], [5, 6]]
    assert cpu.process_log_name(0, 1) == "collection.log" and cpu.process_log_name(1, 3) == "collection_p01.log"
    with pytest.raises(ContractError):
        cpu.process_blocks(6, 4)


@given(st.text(max_size=200))
def test_samples_parser_never_crashes_on_garbage(text):
    try:
        cpu.parse_samples_text(text, "k")
    except ContractError:
        pass


@given(st.text(max_size=200))
def test_kernel_details_parser_never_crashes_on_garbage(text):
    try:
        read_kd(text, 0)
    except ContractError:
        pass


def test_unknown_case_id_is_not_a_known_id():
    known = ["a", "b"]
    probe = base.unknown_case_id(known)
    assert probe not in known and probe == base.unknown_case_id(["b", "a"])


def test_selector_needs_per_case_selection():
    assert base.choose_selector(make_manifest(), "m").kind == "function_adapter"
    obj = dict(make_manifest().raw)
    obj["cases"] = [{k: v for k, v in c.items() if k != "test_function"} for c in obj["cases"]]
    with pytest.raises(ContractError, match="multi-case manifest without per-case"):
        base.choose_selector(manifest.parse_manifest(obj), "m")
    obj["cases"] = obj["cases"][:1]
    obj["optimization_target"]["case_ids"] = ["a"]
    assert base.choose_selector(manifest.parse_manifest(obj), "m").kind == "single_case"


def test_protocol_flags_may_only_confirm_the_manifest():
    m = make_manifest()
    assert resolve_protocol(m, Overrides(repeats=3, op_name="k"), "m") is m.protocol
    with pytest.raises(ContractError, match="contradicts"):
        resolve_protocol(m, Overrides(repeats=4), "m")
    with pytest.raises(ContractError, match="contradicts"):
        resolve_protocol(m, Overrides(backend="msprof"), "m")


def test_get_backend_registry(monkeypatch):
    assert backends.get_backend("cpu").name == "cpu"
    with pytest.raises(ContractError):
        backends.get_backend("gpu")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvError, match="msprof"):
        backend = backends.get_backend("msprof")
        backend.check_environment()


def _golden_obj(m, raw=((3.0, 1.0, 2.0), (10.0, 30.0, 20.0))):
    record = {"path": "g.py", "sha256": "0" * 64, "size_bytes": 1}
    samples = {c.id: list(r) for c, r in zip(m.cases, raw)}
    return golden.build_report(golden_source=record, manifest_source={**record, "schema_version": 2},
                               device_id=0, warmup=1, repeats=3, backend="cpu", samples=samples,
                               manifest=m, created_at="2025-01-01T00:00:00Z")


def test_golden_report_medians_and_join():
    m = make_manifest()
    obj = _golden_obj(m)
    schemas.validate(obj, "golden_perf_report")
    report = golden.parse_report(obj, m)
    assert report.cases["a"].median_total_us == 2.0 and report.cases["b"].per_iteration_e2e_us == 20.0
    obj["cases"][0]["shape"] = "(4, 8)"          # canonicalises to the manifest shape
    golden.parse_report(obj, m)


@pytest.mark.parametrize("mutate, needle", [
    (lambda o: o["cases"].pop(), "missing ['b']"),
    (lambda o: o["cases"].append({**o["cases"][0], "id": "zz"}), "extra ['zz']"),
    (lambda o: o["cases"][0].update(median_total_us=2.1), "median"),
    (lambda o: o["cases"][0].update(dtype="float32"), "shape/dtype"),
    (lambda o: o["cases"][0].update(raw_repeat_e2e_us=[1.0, 2.0]), "repeats"),
    (lambda o: o.update(seed=41), "seed"),
    (lambda o: o.update(iterations=2), "iterations"),
])
def test_golden_report_refusals(mutate, needle):
    m = make_manifest()
    obj = json.loads(json.dumps(_golden_obj(m)))
    mutate(obj)
    with pytest.raises(ContractError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        golden.parse_report(obj, m)


def test_kernel_details_fixture_sums_every_kernel():
    text = (FIXTURES / "kernel_details.csv").read_text(encoding="utf-8")
    assert read_kd(text, 0) == pytest.approx(12.5 + 3.25 + 40.0, rel=1e-12)
    crlf_bom = "\ufeff" + text.replace("\n", "\r\n").replace("Device_id", "Device Id")
    assert read_kd(crlf_bom, 0) == pytest.approx(55.75, rel=1e-12)


def test_kernel_details_without_device_column_is_the_process_device():
    # the torch_npu layout without Device_id (msinsight / msprof-analyze exports): the profiled process's device
    read = kernel_details.read_kernel_details((FIXTURES / "kernel_details_no_device.csv").read_text(encoding="utf-8"), 3)
    assert (read.total_us, read.rows, read.device_rule) == (pytest.approx(55.75, rel=1e-12), 3, "process_device")
    assert read.accelerator_cores == {"AI_CORE": 1, "AI_VECTOR_CORE": 2}


@pytest.mark.parametrize("name, needle", [
    ("kernel_details_other_device.csv", "not device 0"),
    ("kernel_details_na.csv", "not a number"),
    ("kernel_details_empty.csv", "no kernel rows"),
])
def test_kernel_details_refusals(name, needle):
    with pytest.raises(ContractError, match=needle):
        read_kd((FIXTURES / name).read_text(encoding="utf-8"), 0)


def test_measurement_record_paired_shape():
    results = [base.RepeatResult(v, 1, None, ("samples.csv",)) for v in (4.0, 2.0, 3.0)]
    record = evidence.measurement_record(
        collection_id="c", case_id="a", op_name="k", backend="cpu", method="trimmed_mean",
        repeat_dirs=["r/repeat_001", "r/repeat_002", "r/repeat_003"], timing_file="samples.csv",
        results=results, baseline=results[::-1], order=[["baseline", "candidate"], ["candidate", "baseline"],
                                                         ["baseline", "candidate"]])
    schemas.validate(record, "measurement")
    assert record["aggregate_us"] == 3.0 and record["baseline_samples_us"] == [3.0, 2.0, 4.0]
    assert record["timing_source_files"][0] == "r/repeat_001/candidate/samples.csv"
