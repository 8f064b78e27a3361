"""The msprof backend driven through a fake ``msprof`` on PATH (tests/fixtures/msprof)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import freeze_example
from perftune.measure import collect
from perftune.contract import protocol
from perftune.measure.backends.msprof import MsprofBackend, check_launch, metric_argv, quick_argv, sample_argv
from perftune.errors import CheckFailed, ContractError, EnvError

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
TARGET = "pypto_softmax_kernel_mix_aic_0"
CASE = "r64_c4096_fp32"


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """Put the fake msprof first on PATH; returns a setter for FAKE_MSPROF_* variables."""
    monkeypatch.setenv("PATH", f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MSPROF_PYTHON", sys.executable)
    monkeypatch.setenv("FAKE_MSPROF_STATE", str(tmp_path / "fake_state.json"))
    monkeypatch.setenv("FAKE_MSPROF_CALLS", str(tmp_path / "fake_calls.jsonl"))
    monkeypatch.setenv("FAKE_MSPROF_TARGET", TARGET)
    monkeypatch.setenv(protocol.VISIBLE_DEVICES_ENV, "3")
    for name in ("FAKE_MSPROF_MODE", "FAKE_MSPROF_MODE_RUN", "FAKE_MSPROF_DURATIONS", "FAKE_MSPROF_RATIOS"):
        monkeypatch.delenv(name, raising=False)

    def set_env(**values):
        for key, value in values.items():
            monkeypatch.setenv(f"FAKE_MSPROF_{key.upper()}", value)
    set_env.calls = lambda: [json.loads(l) for l in (tmp_path / "fake_calls.jsonl").read_text().splitlines()]
    return set_env


@pytest.fixture
def ctx(op_dir, fake):
    freeze_example(op_dir, "--backend", "msprof", "--op-name", TARGET, "--device", "5", repeats=2, warmup=0)
    return collect.prepare(op_dir, collect.Overrides())


def run_one(ctx, name="repeat_001", case_id=CASE):
    folder = ctx.op_dir / "scratch" / name
    return folder, MsprofBackend().run_repeat(ctx.spec, ctx.manifest.case(case_id), folder)


def test_command_lines_are_argument_lists_with_the_upstream_flags():
    runner = ["python", "-m", "x"]
    assert metric_argv("Memory", Path("/o"), runner) == [
        "msprof", "--ai-core=on", "--aic-metrics=Memory", "--task-time=on", "--ascendcl=on", "--output=/o",
        "python", "-m", "x"]
    assert sample_argv(Path("/o"), runner)[1:5] == ["--ai-core=on", "--aic-mode=sample-based", "--aic-freq=100",
                                                   "--aic-metrics=PipeUtilization"]
    assert quick_argv(Path("/o"), runner) == ["msprof", "--task-time=on", "--ascendcl=on", "--output=/o", *runner]


def test_a_repeat_archives_the_seven_tables_and_selects_the_exact_row(ctx, fake):
    fake(durations="41.25,43.5")
    folder, result = run_one(ctx)
    assert result.duration_us == 41.25 and result.calls == 1
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"op_summary_{m}.csv" for m in protocol.METRIC_GROUPS]
        + ["attestation.json", "collection.log", "evidence_status.json", "process_scope_core_cycles.csv"])
    attested = json.loads((folder / "attestation.json").read_text())  # recorded by the case adapter (#16)
    assert attested["caller"] == "softmax_wrapper" and attested["inputs"][0]["shape"] == [64, 4096]
    status = json.loads((folder / "evidence_status.json").read_text())
    assert status["seven_metric_status"] == "complete" and status["status"] == "complete"
    assert status["duration_us"] == 41.25 and status["repeat"] == 1
    assert status["per_core_status"] == "process_scope_unattributed" and status["per_core_claim_allowed"] is False
    # the AI-core task of a 3-row PyPTO launch is timed; the launch's shape is recorded
    assert status["launch"] == {"rows_per_launch": 3, "task_types": ["N/A (PMU metrics)", "N/A (no metrics)"],
                                "basis": "PMU metrics"}
    assert status["bound_diagnosis"]["label"] == "compute_candidate"
    assert status["bound_diagnosis"]["primary_core"] == "aiv"
    assert (folder / "process_scope_core_cycles.csv").read_text().splitlines() == [
        "coreid,task_cycles", "0,3033", "1,3144", "2,3255", "3,3366"]
    assert MsprofBackend().read_repeat(folder, TARGET) == result
    kinds = [next(a for a in call if a.startswith("--aic-metrics") or a == "--aic-mode=sample-based")
             for call in fake.calls()]
    assert kinds == [f"--aic-metrics={m}" for m in protocol.METRIC_GROUPS] + ["--aic-mode=sample-based"]
    log = (folder / "collection.log").read_text()
    assert log.count("returncode: 0") == 8 and log.count("PYPTO_PERF_SELECTED_CASE=r64_c4096_fp32") == 8
    assert "TILE_FWK_DEVICE_ID" not in log and not list(folder.glob(".msprof_*"))
    # the archive alone is the evidence: a lost or tampered table is refused on re-read
    (folder / "op_summary_MemoryL0.csv").unlink()
    with pytest.raises(ContractError, match="op_summary_MemoryL0.csv: -: CSV is missing"):
        MsprofBackend().read_repeat(folder, TARGET)
    pipe = folder / "op_summary_PipeUtilization.csv"
    pipe.write_text(pipe.read_text().replace("0.806", "1.806"))
    (folder / "op_summary_MemoryL0.csv").write_bytes((folder / "op_summary_Memory.csv").read_bytes())
    with pytest.raises(ContractError, match="aiv_vec_ratio: ratio 1.806 outside"):
        MsprofBackend().read_repeat(folder, TARGET)


def test_every_subprocess_gets_the_physical_device_and_warmups_are_plain_runs(op_dir, fake, tmp_path):
    freeze_example(op_dir, "--backend", "msprof", "--op-name", TARGET, "--device", "5", repeats=1, warmup=2)
    context = collect.prepare(op_dir, collect.Overrides())
    probe = tmp_path / "env.txt"
    (op_dir / "test_softmax.py").write_text((op_dir / "test_softmax.py").read_text().replace(
        "def _run_case(case_id):\n",
        "def _run_case(case_id):\n    import os\n    open(%r, 'a').write(os.environ.get('TILE_FWK_DEVICE_ID', '-')"
        " + ':' + os.environ.get('ASCEND_RT_VISIBLE_DEVICES', 'unset') + '\\n')\n" % str(probe)))
    fake(mode="fail", mode_run="ArithmeticUtilization")
    with pytest.raises(CheckFailed, match="ArithmeticUtilization: exit 1"):
        run_one(context)
    assert probe.read_text().splitlines() == ["5:unset"] * 4
    entries = (op_dir / "scratch" / "repeat_001" / "collection.log").read_text().split("argv: ")[1:]
    assert [("msprof" in e.splitlines()[0]) for e in entries] == [False, False, True, True]


def test_header_drift_bom_crlf_shards_and_na_cells(ctx, fake):
    fake(mode="shard,fullwidth,bom_crlf", durations="52.125",
         ratios=json.dumps({"aiv_vec_ratio": None, "aiv_mte2_ratio": 0.72, "aiv_scalar_ratio": "N/A"}))
    folder, result = run_one(ctx)
    assert result.duration_us == 52.125
    assert result.bound_route["ratios"] == {"aiv_mte2_ratio": 0.72, "aiv_mte3_ratio": 0.047}
    assert result.bound_route["label"] == "data_movement_candidate"
    raw = (folder / "op_summary_PipeUtilization.csv").read_bytes().decode("utf-8-sig")
    assert raw.startswith("Device Id,") and "Task Duration（us）" in raw
    assert raw.count("Device Id,") == 1


@pytest.mark.parametrize("mode,run,needle", [
    ("two_rows", "PipeUtilization", "'pypto_softmax_kernel_mix_aic_0' has 2 launches"),
    ("missing_column", "ArithmeticUtilization", "Task Duration(us): required column missing"),
    ("zero_rows", "Memory", "no row equals 'pypto_softmax_kernel_mix_aic_0' exactly"),
    ("missing_metric", "MemoryL0", "0 profiler outputs hold a op_summary table"),
    ("fail", "PipeUtilization", "exit 1: [ERROR] msprof: profiling failed for PipeUtilization"),
])
def test_each_failure_mode_fails_the_repeat_with_a_clear_message(ctx, fake, mode, run, needle):
    fake(mode=mode, mode_run=run)
    with pytest.raises(CheckFailed) as err:
        run_one(ctx)
    assert needle in err.value.line()
    folder = ctx.op_dir / "scratch" / "repeat_001"
    status = json.loads((folder / "evidence_status.json").read_text())
    assert status["status"] == "failed" and status["seven_metric_status"] == "incomplete"
    assert needle in status["failure"]
    assert not list(folder.glob(".msprof_*"))


def test_a_runner_that_launches_the_target_twice_is_refused(ctx, fake):
    test_file = ctx.op_dir / "test_softmax.py"
    source = test_file.read_text()
    test_file.write_text(source.replace(
        "    softmax_kernel(x, out)\n",
        f"    softmax_kernel(x, out)\n    print('FAKE_MSPROF_LAUNCH={TARGET}')\n"
        f"    softmax_kernel(x, out)\n    print('FAKE_MSPROF_LAUNCH={TARGET}')\n"))
    with pytest.raises(CheckFailed, match="has 2 launches .*6 rows.* the runner launched the target more than once"):
        run_one(ctx)


def test_run_case_repeats_in_fresh_processes_and_a_failed_sample_run_is_only_a_warning(ctx, fake):
    fake(durations="41.0,42.5,39.75", mode="fail", mode_run="sample")
    results = MsprofBackend().run_case(ctx.spec, ctx.manifest.case(CASE), ctx.op_dir / "case")
    assert [r.duration_us for r in results] == [41.0, 42.5]
    assert sorted(p.name for p in (ctx.op_dir / "case").iterdir()) == ["repeat_001", "repeat_002"]
    status = json.loads((ctx.op_dir / "case" / "repeat_002" / "evidence_status.json").read_text())
    assert status["status"] == "complete" and status["per_core_status"] == "unavailable:sample_run_failed"
    assert status["repeat"] == 2 and "sample-based run failed" in status["warnings"][0]
    assert not (ctx.op_dir / "case" / "repeat_002" / "process_scope_core_cycles.csv").exists()


def test_quick_reads_task_time_only(ctx, fake):
    fake(durations="40.125,40.5,41.0")
    samples = MsprofBackend().quick_case(ctx.spec, ctx.manifest.case(CASE), ctx.op_dir / "quick")
    assert samples == [40.125, 40.5]
    assert all("--ai-core=on" not in call for call in fake.calls())
    assert (ctx.op_dir / "quick" / "repeat_002" / "task_time.csv").is_file()


def test_quick_with_two_launches_fails(ctx, fake):
    fake(mode="two_rows")
    with pytest.raises(CheckFailed, match="has 2 launches in one quick run"):
        MsprofBackend().quick_case(ctx.spec, ctx.manifest.case(CASE), ctx.op_dir / "quick")


def test_discovery_lists_exact_names_largest_total_first(ctx, fake):
    fake(durations="40.0")
    rows = MsprofBackend().list_op_names(ctx.spec, ctx.manifest.case(CASE), ctx.op_dir / "disc")
    brief = [(r["exact_op_name"], r["count"], r["rows"], r["rows_per_launch"], r["task_type"], r["total_duration_us"],
              r["compute_streams"], r["control_streams"], r["task_time_kernel_names"]) for r in rows]
    # a PyPTO launch is 3 rows (2 AI-CPU control tasks + the AI-core task); its time is the AI-core task's
    assert brief == [
        (f"{TARGET}_tail", 1, 3, 3, "KERNEL_AICPU,KERNEL_MIX_AIC", 83.5, ["46"], ["42", "43"], ["tilefwk_1_mix_aic"]),
        (TARGET, 1, 3, 3, "KERNEL_AICPU,KERNEL_MIX_AIC", 40.0, ["46"], ["42", "43"], ["tilefwk_0_mix_aic"]),
        ("aclnnCast_Cast_1", 1, 1, 1, "KERNEL_AIVEC", 6.78, ["46"], [],
         ["Cast_93b3f8e9594b4018_high_performance_210000000"]),
        ("MemSet", 1, 1, 1, "KERNEL_AIVEC", 1.46, ["46"], [], ["MemSet_5e2c1f0d_high_performance_210000000"])]
    assert rows[1]["control_duration_us"] == 2 * (40.0 * 1.6 + 20)


def test_environment_probe(monkeypatch, tmp_path, fake):
    MsprofBackend().check_environment()
    fake(mode="broken")
    with pytest.raises(EnvError) as err:
        MsprofBackend().check_environment()
    assert err.value.line().startswith("msprof: start: 'msprof --help' exited 127: msprof: error while loading")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EnvError, match="msprof: PATH: msprof is not on PATH"):
        MsprofBackend().check_environment()


def test_a_launch_other_than_the_frozen_one_is_refused(ctx, fake):
    fake(durations="41.25")
    folder, _ = run_one(ctx)
    table = folder / "op_summary_PipeUtilization.csv"
    assert check_launch(table, TARGET, {"rows_per_launch": 3, "task_types": [], "basis": "x"})["rows_per_launch"] == 3
    with pytest.raises(ContractError, match="is 3 rows here, 1 when frozen"):
        check_launch(table, TARGET, {"rows_per_launch": 1, "task_types": [], "basis": "x"})
