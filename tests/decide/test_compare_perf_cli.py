"""compare_perf.py end to end: real rounds of the example operator collected by collect_perf.py.

The rounds are collected once per module (cpu backend, 6 repeats: enough to calibrate on one round); tests that need a known truth
rewrite the raw ``samples.csv`` of a copy, which is exactly what compare recomputes from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error, calibrate_on, freeze_example, run_script, tree_digest

from perftune.measure import evidence
from perftune.contract import schemas
from perftune.decide import stats


GOLDEN_ARGS = ("--function", "softmax_golden", "--factory", "golden_cases", "--device", "0",
               "--warmup", "1", "--repeats", "3", "--seed", "42", "--backend", "cpu")
TARGETS = ("r64_c4096_fp32", "r64_c4096_fp16")


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    op = tmp_path_factory.mktemp("compare") / "softmax"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "softmax", op,
                    ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    freeze_example(op, repeats=6, warmup=1)
    proc = run_script("collect_golden_reference.py", op / "softmax_golden.py", "--case-manifest",
                      op / "PERFORMANCE_CASES.json", "--output-dir", op, *GOLDEN_ARGS)
    assert proc.returncode == 0, proc.stderr
    for command in ("formal", "formal", "quick"):
        proc = run_script("collect_perf.py", command, "--op-dir", op)
        assert proc.returncode == 0, proc.stderr
    return op


@pytest.fixture
def op(collected, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(collected, target)
    return target


def set_samples(op: Path, round_name: str, case_id: str, values: list[float]) -> None:
    """Rewrite the raw samples.csv of every repeat of one case (the evidence compare reads) and
    re-seal the round, as a collector would have sealed those samples (a known truth)."""
    round_dir = op / "docs/perf" / round_name
    case_dir = round_dir / evidence.case_dir_name(case_id)
    for index, value in enumerate(values, 1):
        path = case_dir / f"repeat_{index:03d}" / "samples.csv"
        header, row = path.read_text().splitlines()
        cells = row.split(",")
        cells[3] = f"{value:.3f}"
        path.write_text(f"{header}\n{','.join(cells)}\n")
    collection = json.loads((round_dir / "collection.json").read_text())
    collection["evidence_seal"] = evidence.evidence_seal(round_dir)
    (round_dir / "collection.json").write_text(json.dumps(collection))


def compare(op: Path, *extra: str, baseline="round_001", candidate="round_002"):
    return run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", baseline,
                      "--candidate", candidate, *extra)


def test_formal_compare_recomputes_from_raw_samples(op):
    proc = compare(op, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    perf = json.loads((op / "performance.json").read_text())
    schemas.validate(perf, "performance")
    base, final = evidence.load_round(op, "round_001"), evidence.load_round(op, "round_002")
    for row in perf["per_case"]:
        b, c = base.cases[row["case"]].samples_us, final.cases[row["case"]].samples_us
        assert row["samples"] == {"baseline": b, "final": c}
        assert row["speedup"] == stats.aggregate(b, "median") / stats.aggregate(c, "median")
        assert row["golden_per_iteration_us"] > 0 and row["golden_reference_ratio"] > 0
    assert perf["baseline_collection_id"] == base.collection_id
    assert perf["final_collection_id"] == final.collection_id
    assert perf["protocol"]["selector_kind"] == "function_adapter" and perf["task"] == "softmax"
    assert perf["user_target"]["metric"] == "speedup"          # SPEC.md declares speedup >= 1.10
    assert json.loads(proc.stdout)["final_collection_id"] == final.collection_id
    for name in ("performance.log", "perf_report.md", "docs/perf/figures/compare_speedup_ci.png",
                 "docs/perf/figures/compare_samples.png"):
        assert (op / name).stat().st_size > 0, name
    assert "docs/perf/figures/compare_speedup_ci.png" in (op / "perf_report.md").read_text()


def test_known_truth_exact_numbers_and_exit_1_on_slower_target(op):
    set_samples(op, "round_001", "r64_c4096_fp32", [100, 101, 102, 103, 104, 105])
    set_samples(op, "round_002", "r64_c4096_fp32", [50, 50.5, 51, 51.5, 52, 52.5])
    set_samples(op, "round_001", "r64_c4096_fp16", [100, 101, 102, 103, 104, 105])
    set_samples(op, "round_002", "r64_c4096_fp16", [200, 202, 204, 206, 208, 210])
    proc = compare(op)
    assert proc.returncode == 0, proc.stderr   # not calibrated: no sized verdict, nothing is slower
    assert {r["verdict"] for r in json.loads((op / "performance.json").read_text())["per_case"]} == {"inconclusive"}
    calibrate_on(op)
    proc = compare(op)
    assert proc.returncode == 1, proc.stderr
    perf = json.loads((op / "performance.json").read_text())
    rows = {r["case"]: r for r in perf["per_case"]}
    assert (rows["r64_c4096_fp32"]["speedup"], rows["r64_c4096_fp32"]["verdict"]) == (2.0, "faster")
    assert (rows["r64_c4096_fp16"]["speedup"], rows["r64_c4096_fp16"]["verdict"]) == (0.5, "slower")
    assert rows["r64_c4096_fp32"]["golden_reference_ratio"] == rows["r64_c4096_fp32"]["golden_per_iteration_us"] / 51.25
    assert perf["slower_target_cases"] == ["r64_c4096_fp16"]
    assert perf["suite"]["mean_case_speedup"] == 1.25
    assert perf["user_target"]["status"] == "not_met"
    assert "r64_c4096_fp16: speedup 0.5000" in proc.stdout


def test_rerun_is_byte_identical_and_ignores_tampered_performance_json(op):
    compare(op)
    names = ("performance.json", "performance.log", "perf_report.md")
    first = [(op / name).read_bytes() for name in names]
    compare(op)
    assert [(op / name).read_bytes() for name in names] == first
    perf = json.loads(first[0])
    perf["per_case"][0]["speedup"] = 99.0
    perf["per_case"][0]["samples"]["final"] = [1.0] * 6
    perf["suite"]["mean_case_speedup"] = 99.0
    (op / "performance.json").write_text(json.dumps(perf))
    compare(op)
    assert (op / "performance.json").read_bytes() == first[0]


def test_tampered_measurement_json_is_never_used(op):
    for case_dir in (op / "docs/perf/round_002").glob("case_*"):
        measurement = json.loads((case_dir / "measurement.json").read_text())
        measurement["duration_samples_us"] = [1.0] * len(measurement["duration_samples_us"])
        measurement["aggregate_us"] = 1.0
        (case_dir / "measurement.json").write_text(json.dumps(measurement))
    # The sealed round refuses the edit (exit 2); no number from measurement.json is ever written.
    before = tree_digest(op)
    assert_one_line_error(compare(op), 2, "evidence")
    assert tree_digest(op) == before and not (op / "performance.json").exists()


@pytest.mark.parametrize("edit, needle", [
    (lambda c: c.update(warmup=4), "protocol.warmup"),
    (lambda c: c["performance_cases"].update(sha256="0" * 64), "different PERFORMANCE_CASES.json"),
    (lambda c: c.update(expected_cases=c["expected_cases"][:3]), "missing ['r1024_c256_fp16']"),
    (lambda c: c.update(status="failed", failure="killed"), "failed, not complete"),
])
def test_contract_errors_exit_2_and_write_nothing(op, edit, needle):
    path = op / "docs/perf/round_002/collection.json"
    collection = json.loads(path.read_text())
    edit(collection)
    path.write_text(json.dumps(collection))
    before = tree_digest(op)
    assert_one_line_error(compare(op), 2, needle)
    assert tree_digest(op) == before


@pytest.mark.parametrize("candidate, needle", [
    ("round_001", "is the baseline round itself"),
    ("round_009", "round_009"),
    ("quick_001", "no round or collection id"),
])
def test_wrong_round_references_exit_2(op, candidate, needle):
    before = tree_digest(op)
    assert_one_line_error(compare(op, candidate=candidate), 2, needle)
    assert tree_digest(op) == before


def test_only_the_newest_formal_round_can_be_the_candidate(op):
    before = tree_digest(op)
    assert_one_line_error(compare(op, baseline="round_002", candidate="round_001"), 2,
                          "not the newest complete formal round (round_002 is)")
    assert tree_digest(op) == before


def test_changed_manifest_is_refused(op):
    manifest = op / "PERFORMANCE_CASES.json"
    (op / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    manifest.write_text(manifest.read_text() + "\n")
    assert_one_line_error(compare(op), 2, "different PERFORMANCE_CASES.json")


def test_quick_compare_never_ranks_and_leaves_formal_files_alone(op):
    proc = run_script("compare_perf.py", "quick", "--op-dir", op, "--baseline", "round_001",
                      "--quick", "quick_001", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((op / "docs/perf/quick/quick_001/quick_compare.json").read_text())
    assert result["never_ranks"] is True and result["mode"] == "quick"
    assert [r["case"] for r in result["per_case"]] == list(TARGETS)
    assert set(result["promotion"]) >= {"threshold", "mean_case_speedup", "promote"}
    assert json.loads(proc.stdout)["quick_collection_id"] == result["quick_collection_id"]
    assert not (op / "performance.json").exists() and not (op / "perf_report.md").exists()


def test_quick_result_samples_come_from_raw_files(op):
    path = op / "docs/perf/quick/quick_001/quick_performance.json"
    quick = json.loads(path.read_text())
    for row in quick["cases"]:
        row["duration_samples_us"] = [1.0] * len(row["duration_samples_us"])
    path.write_text(json.dumps(quick))
    run_script("compare_perf.py", "quick", "--op-dir", op, "--baseline", "round_001", "--quick", "quick_001")
    result = json.loads((op / "docs/perf/quick/quick_001/quick_compare.json").read_text())
    assert all(min(r["samples"]["quick"]) > 1.0 for r in result["per_case"])


def test_help_and_usage_errors():
    proc = run_script("compare_perf.py", "--help")
    assert proc.returncode == 0 and "formal" in proc.stdout and "quick" in proc.stdout
    assert_one_line_error(run_script("compare_perf.py", "formal", "--op-dir", "x"), 2, "--baseline")


def test_calibrate_freezes_the_between_round_noise_and_every_independent_compare_uses_it(op):
    """Two A/A rounds whose fp32 case moved by ~25 % (a known truth): the calibration takes that as
    noise; the compare of the same rounds then calls no direction and widens the suite CI."""
    base = [100.0, 101.0, 102.0, 103.0, 104.0]
    for case in TARGETS:
        set_samples(op, "round_001", case, base)
        set_samples(op, "round_002", case, [v * (1.25 if case == TARGETS[0] else 1.0) for v in base])
    assert_one_line_error(run_script("compare_perf.py", "calibrate", "--op-dir", op, "--rounds", "round_001",
                                     "round_002"), 2, "quick results exist", "before any candidate")
    shutil.rmtree(op / "docs/perf/quick")
    proc = run_script("compare_perf.py", "calibrate", "--op-dir", op, "--rounds", "round_001", "round_002", "--json")
    assert proc.returncode == 0, proc.stderr
    cal = json.loads(proc.stdout)
    assert cal["kind"] == "two_rounds" and cal["measured_noise"] > 0.2 and cal["effective_band"] >= cal["measured_noise"]
    assert json.loads((op / "docs/perf/calibration.json").read_text()) == cal
    before = tree_digest(op)
    assert_one_line_error(run_script("compare_perf.py", "calibrate", "--op-dir", op, "--rounds", "round_001"),
                          2, "never overwritten")
    assert tree_digest(op) == before
    proc = compare(op, "--json")
    assert proc.returncode == 0, proc.stderr   # a 25 % A/A move is within the calibrated noise: not `slower`
    perf = json.loads((op / "performance.json").read_text())
    fp32 = next(r for r in perf["per_case"] if r["case"] == TARGETS[0])
    assert fp32["verdict"] in ("equivalent", "inconclusive") and perf["protocol"]["decision"]["noise_band"] == \
        cal["effective_band"] and perf["calibration"]["effective_band"] == cal["effective_band"]
    suite = perf["suite"]
    assert suite["between_round_noise"] == cal["measured_noise"] and suite["ci"][0] < 1 < suite["ci"][1]
    assert "noise band calibrated to" in (op / "perf_report.md").read_text()
    edited = {**cal, "effective_band": 0.01}
    (op / "docs/perf/calibration.json").write_text(json.dumps(edited))
    assert_one_line_error(compare(op), 2, "calibration.json", "never edited")
