"""The two cube examples on pypto-sim end to end: ``demo.py --example pypto_matmul`` (a cube kernel) and
``--example pypto_attention`` (a MIX kernel: cube and vector stages in one launch), one demo run each.

Without the optional extra each example stops before step 1 with the install line (exit 3). With it,
each run must PASS the verifier, choose the version its README states, reject the no-difference
control, and every recorded sample must equal pypto's own stat report: the ``Total Cycles`` of each
archived ``_simulate.stat.report.txt`` (read here with a regex, not by the project's parser) / 1800 MHz.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, run_script

HAVE_PYPTO = all(importlib.util.find_spec(m) is not None for m in ("pypto", "torch", "sympy"))
TOTAL = re.compile(r"^Total Cycles\.+:\s+(\d+)\s*$", re.M)
# example -> (chosen version, {case: (baseline cycles, chosen cycles)}), as its README states them
EXPECTED = {
    "pypto_matmul": ("v2_k_l1x4", {"m256_k512_n256_fp16": (72633, 25948), "m128_k1024_n384_fp16": (69163, 34591)}),
    "pypto_attention": ("v2_vec_one_head", {"b2_h8_s64_d64_fp16": (114062, 62426),
                                            "b4_h4_s64_d64_fp16": (84793, 62426)}),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def example_run(request, tmp_path_factory):
    """One demo run of the example (minutes on pypto-sim): (example, returncode, summary or stderr, op dir)."""
    work = tmp_path_factory.mktemp(request.param)
    proc = run_script("demo.py", "--example", request.param, "--workdir", work, "--json", timeout=3600)
    if not HAVE_PYPTO:
        return request.param, proc, None, work
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    return request.param, proc, summary, Path(summary["workdir"]) / request.param


def _cycles(stat_report: Path) -> int:
    return int(TOTAL.search(stat_report.read_text()).group(1))


def test_the_example_passes_with_the_readme_choice_and_rejects_the_control(example_run):
    name, proc, summary, work = example_run
    if not HAVE_PYPTO:
        assert_one_line_error(proc, 3, "protocol.backend: pypto is not installed", "python3 -m pip install -e '.[pypto-sim]'")
        assert not any(work.iterdir())
        return
    chosen, cycles = EXPECTED[name]
    assert summary["verifier"] == "Stage 5 verification PASSED."
    assert summary["chosen_version"] == chosen
    assert summary["outcomes"]["v3_aa_control"].startswith("rejected")
    for case in summary["cases"]:
        baseline, final = cycles[case["case"]]
        assert case["baseline_us"] == pytest.approx(baseline / 1800, abs=1e-3)
        assert case["final_us"] == pytest.approx(final / 1800, abs=1e-3)
        assert case["verdict"] == "faster"
    assert name in (ROOT / "README.md").read_text() and chosen in (ROOT / "examples" / name / "README.md").read_text()


def test_every_recorded_sample_is_pypto_s_own_stat_report(example_run):
    """Each repeat's sample (µs) is its archived stat report's Total Cycles / 1800, for both arms of a
    paired round; the reports of one (code, case) agree."""
    name, _proc, summary, op = example_run
    if not HAVE_PYPTO:
        return
    checked = 0
    for measurement in sorted((op / "docs" / "perf").glob("round_*/case_*/measurement.json")):
        record = json.loads(measurement.read_text())
        arms = [("candidate", "duration_samples_us"), ("baseline", "baseline_samples_us")] \
            if "baseline_samples_us" in record else [("", "duration_samples_us")]
        for arm, key in arms:
            for number, sample in enumerate(record[key], 1):
                report = measurement.parent / f"repeat_{number:03d}" / arm / "_simulate.stat.report.txt"
                assert sample == round(_cycles(report) / 1800, 6), (measurement, arm, number)
                checked += 1
    assert checked >= 4 * len(EXPECTED[name][1])


def test_the_matmul_search_simulates_no_baseline_arm_and_its_points_share_the_cores(example_run):
    """pypto_matmul's plan searches M_TILE (item general-13): every point archived, the best is 64; no
    point simulates the baseline arm (each screen cites the base's own round, archived once), and the
    points of the batch shared the search's slots (the local engine's scheduler)."""
    name, _proc, summary, op = example_run
    if not HAVE_PYPTO or name != "pypto_matmul":
        return
    folder = op / "docs" / "perf" / "search" / "general-13"
    record = json.loads((folder / "search.json").read_text())
    assert sorted(p["values"]["M_TILE"] for p in record["points"]) == [32, 64]
    assert record["best"]["values"] == {"M_TILE": 64} and {p["status"] for p in record["points"]} == {"measured"}
    base_round, cases = record["search"]["base"]["round"], [c["case"] for c in summary["cases"]]
    for point in record["points"]:
        screen = json.loads((folder / "points" / f"t_{point['trial']:03d}" / "quick_performance.json").read_text())
        base_rows = [r for r in screen["reused"] if r["arm"] == "baseline"]
        assert {r["case"] for r in base_rows} >= set(cases) and len(base_rows) == 2 * len(screen["cases"])
        assert all(r["source"].startswith(f"docs/perf/{base_round}/") for r in base_rows)
    assert record["engine"] == "local" and record["slots"] == record["workers"]
    assert record["slot_use"]["launches"] > 0 and 0 < record["slot_use"]["utilisation"] <= 1
    report = (op / "PERFORMANCE_REPORT.md").read_text()
    assert "### Search of general-13 (`docs/perf/search/general-13/search.json`)" in report
    assert report.count("| t_00") == 2
