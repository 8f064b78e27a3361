"""Several operators (#22.4) and the Slurm job array (#22.5), with the fake msprof."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, assert_one_line_error, run_script

sys.path.insert(0, str(ROOT / "benchmarks" / "many_cards"))
import bench_many_cards as bench  # noqa: E402


@pytest.fixture
def ops(tmp_path):
    made = []
    for name in ("a", "b"):
        op = bench.make_op(tmp_path / name, ["c0"])
        bench.freeze(op, ["c0"], bench.fake_env(tmp_path, 0))
        made.append(op)
    return made


def test_local_batch_runs_operators_on_their_cards_with_one_summary(ops, tmp_path):
    shared = tmp_path / "shared"
    proc = run_script("collect_perf.py", "batch", "--op-dirs", *ops, "--devices", "6,7", "--shared-dir", shared,
                      "--json", env=bench.fake_env(tmp_path, 0))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((shared / "batch_summary.json").read_text())
    assert summary["complete"] == 2 and summary["failed"] == 0
    assert sorted(r["case_devices"]["c0"] for r in summary["operators"]) == [6, 7]
    assert all(r["cases"]["c0"]["aggregate_us"] > 0 for r in summary["operators"])


def test_slurm_array_task_runs_locally_from_its_environment_then_merge(ops, tmp_path):
    shared, script = tmp_path / "shared", tmp_path / "stage5.sbatch"
    proc = run_script("collect_perf.py", "batch", "--op-dirs", *ops, "--shared-dir", shared, "--emit", "slurm",
                      "--cards-per-task", "2", "--output", script)
    assert proc.returncode == 0, proc.stderr
    text = script.read_text()
    assert "#SBATCH --array=0-1" in text and "#SBATCH --gres=npu:2" in text
    env = {**bench.fake_env(tmp_path, 0), "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_GPUS": "3"}
    task = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert task.returncode == 0, task.stderr
    result = json.loads((shared / "results" / "1.json").read_text())
    assert result["op_dir"] == str(ops[1]) and result["case_devices"] == {"c0": 3}
    proc = run_script("collect_perf.py", "merge", "--shared-dir", shared, "--json")
    assert proc.returncode == 1, proc.stderr   # task 0 has not run: named, not silently dropped
    summary = json.loads(proc.stdout)
    assert summary["complete"] == 1 and summary["operators"][0]["op_dir"] == str(ops[1])
    assert summary["missing"] == [str(ops[0])] and summary["failed"] == 1
    again = run_script("collect_perf.py", "batch", "--op-dirs", *ops, "--shared-dir", shared, "--emit", "slurm",
                       "--output", script)
    assert_one_line_error(again, 2, "stage5.sbatch")
