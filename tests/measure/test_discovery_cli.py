"""Discovery before freezing (#22.1): list-op-names without a manifest, a record, freeze --op-name-from."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from conftest import assert_one_line_error, run_script

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
TARGET = "pypto_softmax_kernel_mix_aic_0"


def fake_env(tmp_path: Path) -> dict:
    return {"PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}", "FAKE_MSPROF_PYTHON": sys.executable,
            "FAKE_MSPROF_STATE": str(tmp_path / "state.json"), "FAKE_MSPROF_TARGET": TARGET,
            "FAKE_MSPROF_CALLS": str(tmp_path / "calls.jsonl")}


def freeze_args(op_dir: Path, *extra: str) -> list[str]:
    return ["freeze", "--op-dir", str(op_dir), "--target-case-ids", "r64_c4096_fp32", "--selection-mode",
            "user_selected", "--backend", "msprof", "--device", "3", "--repeats", "1", "--warmup", "0", *extra]


def test_discovery_without_manifest_then_freeze_from_the_record(op_dir, tmp_path):
    env = fake_env(tmp_path)
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "r64_c4096_fp32",
                      "--backend", "msprof", "--device", "3", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    record_path = Path(out["record"])
    assert record_path.parent == op_dir / "docs/perf/discovery" and record_path.name == "discovery_001.json"
    record = json.loads(record_path.read_text())
    assert record["device_id"] == 3 and record["name_filter"] == "none" and record["launches"] == 1
    assert [r["exact_op_name"] for r in record["rows"]][:2] == [f"{TARGET}_tail", TARGET]
    kept = {Path(f["path"]).name for f in record["raw_files"]}
    assert "op_summary_PipeUtilization.csv" in kept and "collection.log" in kept
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1 and not any(a.startswith("--kernel-name") for a in calls[0])
    log = (record_path.parent / "discovery_001" / "collection.log").read_text()
    assert "r64_c4096_fp32" in log
    assert not (op_dir / "PERFORMANCE_CASES.json").exists()

    # several names: the record alone is ambiguous; a name not in the table is refused
    proc = run_script("freeze_cases.py", *freeze_args(op_dir, "--op-name-from", str(record_path)))
    assert_one_line_error(proc, 2, "4 op names were discovered")
    proc = run_script("freeze_cases.py", *freeze_args(op_dir, "--op-name-from", str(record_path),
                                                      "--op-name", "pypto_softmax"))
    assert_one_line_error(proc, 2, "not a discovered op name")
    other = freeze_args(op_dir, "--op-name-from", str(record_path), "--op-name", TARGET)
    other[other.index("--device") + 1] = "0"
    assert_one_line_error(run_script("freeze_cases.py", *other), 2, "device_id")
    proc = run_script("freeze_cases.py", *freeze_args(op_dir, "--op-name-from", str(record_path), "--op-name", TARGET))
    assert proc.returncode == 0, proc.stderr
    frozen = json.loads((op_dir / "PERFORMANCE_CASES.json").read_text())
    assert frozen["protocol"]["op_name"] == TARGET and frozen["protocol"]["device_id"] == 3
    # what one launch is (a PyPTO launch: 2 AI-CPU control tasks + the AI-core task) is frozen with the name
    assert frozen["protocol"]["launch"] == {"rows_per_launch": 3, "task_types": ["KERNEL_AICPU", "KERNEL_MIX_AIC"],
                                            "basis": "task_time kernel_type"}

    # a second discovery (now with the frozen manifest) gets the next number, the first is kept
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "r64_c4096_fp16", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (op_dir / "docs/perf/discovery/discovery_002.json").is_file() and record_path.is_file()


def test_record_of_another_runner_is_refused(op_dir, tmp_path):
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "r64_c4096_fp32",
                      "--backend", "msprof", "--device", "3", env=fake_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    runner = op_dir / "test_softmax.py"
    runner.write_text(runner.read_text() + "\n# edited after discovery\n")
    proc = run_script("freeze_cases.py", *freeze_args(op_dir, "--op-name-from",
                                                      str(op_dir / "docs/perf/discovery/discovery_001.json"),
                                                      "--op-name", TARGET))
    assert_one_line_error(proc, 2, "changed since discovery")


def test_discovery_needs_a_known_p0_case(op_dir, tmp_path):
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "nope",
                      "--backend", "msprof", env=fake_env(tmp_path))
    assert_one_line_error(proc, 2, "unknown P0 case id")
