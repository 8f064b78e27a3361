"""Smoke run of the benchmarks (issue 9) at tiny sizes: the code stays runnable, the outputs exist.

No timing assertions: only that ``benchmarks/run_all.py --smoke`` runs all three benchmarks through
their real scripts, installs/finds pyperf, and leaves valid JSON, SUMMARY.md and readable PNGs;
plus exact checks of the synthetic msprof generator and of the decision rules on fixed samples.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
sys.path[:0] = [str(BENCH / "scale"), str(BENCH / "decisions")]

import generate  # noqa: E402
import simulate  # noqa: E402
from perftune.decide import compare  # noqa: E402
from perftune.measure import evidence



def test_generated_rounds_load_exactly_as_written(tmp_path):
    op = generate.build_op_dir(tmp_path, generate.Shape(2, 3, 40, big_rows=120))
    truth = generate.true_durations(generate.Shape(2, 3, 40, big_rows=120))
    for name in ("round_001", "round_002"):
        loaded = evidence.load_round(op, name)
        for k, case_id in enumerate(generate.case_ids(2)):
            case = loaded.cases[case_id]
            assert case.samples_us == truth[name][k].tolist() == case.measurement["duration_samples_us"]
            assert [r.bound_route for r in case.repeats] == case.measurement["repeat_bound_diagnoses"]
    big = op / "docs/perf/round_002" / evidence.case_dir_name("r64_c4096_fp16") / "repeat_001"
    assert len((big / "op_summary_PipeUtilization.csv").read_text().splitlines()) == 121
    assert len((big / "op_summary_Memory.csv").read_text().splitlines()) == 41
    assert len(generate.csv_files(op)) == 2 * 2 * 3 * 7
    perf = compare.load_formal(op, "round_001", "round_002")
    assert [row["n_final"] for row in perf["per_case"]] == [3, 3]


def test_rules_on_fixed_samples():
    base = np.array([100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.0])
    assert simulate.upstream(base, base / 1.02) == "faster"
    assert simulate.upstream(base, base / 1.005) == "same"
    assert simulate.upstream(base, base * 1.02) == "slower"
    assert simulate.ours(base, base / 1.10) == "faster"
    assert simulate.ours(base, base) == "same"
    assert simulate.ours(base[:3], base[:3] / 1.10) == "same"      # 3 < min_repeats: insufficient


def test_confirm_rule_reaches_an_end_with_power_and_no_false_consistent():
    """A small seeded simulation of select_best.py confirm (simulate.confirm_end): the truth unchanged
    reaches `consistent` at the demo's 5 % band; a ranked 30 % gain gone in the confirm rounds never does;
    at the 1 % band with 10 repeats `consistent` is (honestly) out of reach, but an end is always stated."""
    ends = {"consistent", "final_unresolved", "final_inconsistent", "refuted"}
    same = simulate.confirm_end(0.10, 0.10, 0.02, 10, 0.05, 20, resamples=1000)
    gone = simulate.confirm_end(0.30, 0.0, 0.02, 10, 0.05, 20, resamples=1000)
    tight = simulate.confirm_end(0.10, 0.10, 0.02, 10, 0.01, 20, resamples=1000)
    assert same["consistent"] >= 0.8 and gone["consistent"] == 0.0 and tight["consistent"] <= 0.2
    for row in (same, gone, tight):
        assert set(row["ends"]) <= ends and 1.0 <= row["mean_attempts"] <= 2.0
        assert abs(sum(row["ends"].values()) - 1.0) < 1e-9
    assert simulate.confirm_end(0.10, 0.10, 0.02, 10, 0.05, 20, resamples=1000) == same   # seeded


def test_samples_are_seeded_and_shared():
    setting = simulate.Setting(5, 0.02, 0.05)
    a, b = simulate.samples(setting, 4), simulate.samples(setting, 4)
    assert a[0].shape == (4, 5) and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--smoke", "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, json.loads(proc.stdout[proc.stdout.index("{"):])


def test_run_all_smoke_writes_every_result(smoke):
    out, timings = smoke
    assert {"scale_s", "decisions_s", "cpu_backend_s", "aa_s", "total_s", "pyperf_version"} <= set(timings)
    for name in ("scale", "decisions", "cpu_backend", "aa"):
        assert json.loads((out / f"{name}.json").read_text())["smoke"] is True
    for png in ("scale_time_vs_files", "scale_time_vs_floor", "decisions_false_positive", "decisions_power",
                "cpu_backend_vs_timeit"):
        assert (out / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "SUMMARY.md").read_text()
    assert "## 1. Scale" in summary and "## 2. Decision quality" in summary and "## 3. cpu backend" in summary
    assert "## 4. Real cpu A/A under load" in summary and "### Confirm rule" in summary
    aa = json.loads((out / "aa.json").read_text())
    assert [r["mode"] for r in aa["rows"]] == ["independent, before the rule", "independent, not calibrated",
                                               "independent, calibrated", "paired"]
    uncalibrated = aa["rows"][1]   # the rule, not the machine, decides this row: no sized verdict at all
    assert uncalibrated["false_directional"] == uncalibrated["suite_directional"] == uncalibrated["false_accept"] == 0
    assert aa["burners"] >= 1 and len(aa["rounds"]) == 2 * aa["comparisons"] and aa["load_before"]


def test_smoke_results_are_complete(smoke):
    out, _ = smoke
    scale = json.loads((out / "scale.json").read_text())
    assert [r["files"] for r in scale["scenarios"]] == [2 * 1 * 2 * 7, 2 * 2 * 2 * 7]
    assert all(r["jobs"][j]["cpu_s"] > 0 for r in scale["scenarios"] for j in ("floor", "compare", "select", "evidence"))
    decisions = json.loads((out / "decisions.json").read_text())
    assert set(decisions["summary"]) == {"ours", "pyperf", "upstream"}
    assert decisions["pyperf_cli_check"]["agree"] == decisions["pyperf_cli_check"]["total"] == 3
    cpu = json.loads((out / "cpu_backend.json").read_text())
    assert [k["case"] for k in cpu["kernels"]] == ["t10us"] and len(cpu["kernels"][0]["cpu_runner_samples_us"]) == 5


def test_tune_benchmark_ranks_points_by_exact_cycles_ties_kept_failed_left_out():
    """bench_tune's independent best (issue 39): base ÷ point per case, the frozen suite metric; the
    full benchmark simulates for minutes, so only its ranking is tested here."""
    sys.path.insert(0, str(BENCH / "tune"))
    import bench_tune
    base = {"a": 12.0, "b": 8.0}
    raw = [{"trial": t, "case": c, "duration_us": us} for t, c, us in (
        (0, "a", 6.0), (0, "b", 8.0), (1, "a", 12.0), (1, "b", 4.0), (2, "a", 3.0), (2, "b", None))]
    best, scores = bench_tune.exact_best(raw, base, "mean_case_speedup")
    assert best == [0, 1] and scores == {0: 1.5, 1: 1.5}      # (2 + 1) / 2 and (1 + 2) / 2; t_2 failed a launch
    best, scores = bench_tune.exact_best(raw[:2] + [dict(raw[2], duration_us=4.0), raw[3]], base, "geomean_speedup")
    assert best == [1] and scores[1] == pytest.approx(6 ** 0.5) and scores[0] == pytest.approx(2 ** 0.5)
