"""benchmarks/pypto_sim: launches and wall vs the distinct (code, case) questions of a kept demo run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)


def step_log(run: Path, number: int, key: str, started: float, seconds: float, out: dict | None = None) -> None:
    write(run / "demo_logs" / f"{number:02d}_x.log", f"step: {key}\nargv: []\nreturncode: 0\nstarted: {started}\n"
          f"seconds: {seconds}\n--- stdout\n{json.dumps(out) if out else ''}\n--- stderr\n")


def test_counts_launches_and_distinct_questions_of_a_kept_run_per_step(tmp_path):
    run = tmp_path / "work" / "run_001"
    op = run / "op"
    write(op / "PERFORMANCE_CASES.json", {})
    write(op / "docs/perf/round_001/collection.json", {"executable_sha256": "a", "expected_cases": ["c1", "c2"]})
    write(op / "docs/perf/round_002/collection.json", {"executable_sha256": "b", "expected_cases": ["c1", "c2"],
                                                       "paired": {"baseline_executable_sha256": "a"}})
    write(op / "docs/perf/quick/quick_001/quick_performance.json", {"executable_sha256": "b",
                                                                    "expected_cases": ["c1", "c2"]})
    write(op / "docs/perf/correctness/c001-x.json", {"run_id": "c001-x", "executable_sha256": "a", "cases": [
        {"id": "c1", "p0": True, "probe": {}}, {"id": "t", "p0": False}]})   # t: a test every version needs
    write(op / "docs/perf/correctness/c002-x.json", {"executable_sha256": "a", "cases": [
        {"id": "c1", "p0": True, "probe": {}}, {"id": "t", "p0": False}], "reused_from": "c001-x"})   # no process
    write(op / "docs/perf/correctness/c003-y.json", {"run_id": "c003-y", "executable_sha256": "b", "cases": [
        {"id": "c1", "p0": True, "probe": {}, "ran_in": "probe"}, {"id": "u", "p0": False, "ran_in": "batch",
                                                                    "batch": 1},
        {"id": "v", "p0": False, "ran_in": "batch", "batch": 1}]})   # u and v: one process
    (op / "docs/perf/stage5_remeasure/rm_001/final/case_c1").mkdir(parents=True)
    write(op / "docs/perf/stage5_check.json", {"beyond_p0": {"cases": [{"case": "c1"}]}})   # one tail probe
    step_log(run, 1, "correctness", 0, 10)
    step_log(run, 2, "preflight", 10, 10)
    step_log(run, 3, "baseline", 20, 30, {"round": str(op / "docs/perf/round_001")})
    step_log(run, 4, "quick", 50, 20, {"path": str(op / "docs/perf/quick/quick_001/quick_performance.json")})
    step_log(run, 5, "paired_formal", 70, 6, {"round": str(op / "docs/perf/round_002")})
    step_log(run, 6, "verify", 76, 20)
    runner = "perftune.measure.backends.cpu_runner"
    lines = [{"module": runner, "args": [], "returncode": 0, "seconds": s, "started": t}
             for s, t in ((10.0, 21), (12.0, 30), (14.0, 51), (11.0, 60), (13.0, 80))]
    lines += [{"module": "perftune.measure.backends.case_adapter", "args": [], "returncode": 0, "seconds": 3.0,
               "started": 11}] * 3
    lines += [{"module": "perftune.measure.backends.case_adapter", "args": [], "returncode": 2, "seconds": 0.4,
               "started": 12, "simulated": False}]   # an unknown case id: ended before importing pypto
    log = tmp_path / "launches.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/pypto_sim/bench_pypto_sim.py"), "--workdir",
                           str(tmp_path / "work"), "--launch-log", str(log), "--wall", "120", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "pypto_sim.json").read_text())
    assert result["distinct_questions"] == 8          # (a|b) x (c1|c2) + (a, t), (b, u), (b, v) + one P10
    # the test that ran inside its probe's process is no launch of its own; the unknown id simulated nothing
    assert result["launches"] == {"timed": 5, "preflight": 3, "correctness_tests": 3, "correctness_probes": 2,
                                  "verifier_probes": 1, "total": 14, "not_simulating": 1}
    assert result["median_launch_s"] == 12.0 and result["raw_simulation_s"] == 96.0
    assert result["wall_per_raw"] == 1.25 and result["launches_per_distinct"] == 1.75
    steps = result["steps"]
    assert {k: (g["launches"], g["new_questions"]) for k, g in steps.items()} == {
        "correctness": (5, 3), "preflight": (3, 0), "rounds": (2, 2), "quick": (2, 2), "P10": (2, 1), "other": (0, 0)}
    assert steps["rounds"]["product_s"] == 36.0 and steps["rounds"]["product_per_raw"] == 1.5
    assert steps["preflight"]["product_per_raw"] is None
    assert "| 120.0 | 96.0 | 1.25 |" in proc.stdout and "| rounds | 2 | 2 | 2 | 36.0 | 24.0 | 1.5 |" in proc.stdout


def test_the_verdicts_kept_beside_the_figures_are_the_demos_own():
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_pypto_sim", ROOT / "benchmarks/pypto_sim/bench_pypto_sim.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    summary = {"verifier": "Stage 5 verification PASSED.", "chosen_version": "v1", "suite": {"mean_case_speedup": 2.5},
               "cases": [{"case": "c1", "baseline_us": 10.0, "final_us": 4.0, "speedup": 2.5, "verdict": "faster"}]}
    assert bench.verdicts(summary) == {"verifier": "Stage 5 verification PASSED.", "chosen_version": "v1",
                                       "cases": {"c1": [10.0, 4.0, 2.5]}, "suite_mean_speedup": 2.5}
