"""compare.py (pure core) and the report renderers, on rounds built in memory."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from perftune.decide import compare
from perftune.contract import manifest, schemas
from perftune.measure.backends.base import RepeatResult
from perftune.errors import ContractError
from perftune.measure.evidence import CaseEvidence, RoundEvidence
from perftune.report import compare_md, plots, text

SHA = "a" * 64
IDS = ("c1", "c2", "c3")


def make_manifest(user_target=None, method="bootstrap", targets=("c1", "c2")) -> manifest.Manifest:
    proto = manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=5, op_name="k",
                                   decision={"method": method})
    obj = {"schema_version": 2,
           "cases": [{"id": i, "shape": "[4,8]", "dtype": "float32", "p0": True, "test_function": f"test_{i}"}
                     for i in IDS],
           "optimization_target": {"case_ids": list(targets), "selection_mode": "user_selected"},
           "protocol": proto.as_dict()}
    if user_target:
        obj["user_target"] = user_target
    return manifest.parse_manifest(obj)


def make_round(cid, samples, *, paired_baseline=None, routes=None, **overrides) -> RoundEvidence:
    man = make_manifest()
    collection = {"collection_id": cid, "mode": "compare", "status": "complete", "backend": "cpu",
                  "device_id": 0, "seed": 42, "warmup": 1, "repeats": 5, "target_op_name": "k",
                  "expected_cases": list(IDS), "protocol": man.protocol.as_dict(),
                  "performance_cases": {"path": "PERFORMANCE_CASES.json", "sha256": SHA, "size_bytes": 1,
                                        "schema_version": 2},
                  "selector": {"kind": "function_adapter", "name": None}, "completed_at": "2026-01-01T00:00:00Z"}
    if paired_baseline is not None:
        collection["paired"] = {"baseline_version": "docs/perf/versions/v0"}
    collection.update(overrides)
    cases = {}
    for cid_, values in samples.items():
        reps = [RepeatResult(v, 1, (routes or {}).get(cid_, [None] * len(values))[k], ()) for k, v in enumerate(values)]
        cases[cid_] = CaseEvidence(cid_, Path("."), {}, list(values),
                                   None if paired_baseline is None else list(paired_baseline[cid_]), reps)
    return RoundEvidence(Path(cid), collection, cases)


BASE = {"c1": [100.0, 101.0, 102.0, 103.0, 104.0], "c2": [100.0, 101.0, 102.0, 103.0, 104.0],
        "c3": [10.0, 10.0, 10.0, 10.0, 10.0]}
CAND = {"c1": [50.0, 50.5, 51.0, 51.5, 52.0], "c2": [200.0, 202.0, 204.0, 206.0, 208.0],
        "c3": [10.0, 10.0, 10.0, 10.0, 10.0]}


def build(man=None, golden=None, base=BASE, cand=CAND, round_noise=0.0, **kw):
    """Independent rounds, calibrated with zero measured noise by default (the verdict arithmetic);
    ``round_noise=None``: not calibrated (no sized verdict, see the test below)."""
    man = man or make_manifest()
    b, c = make_round("base", base), kw.pop("candidate", None) or make_round("cand", cand)
    compare.check_rounds(man, SHA, b, c)
    perf = compare.build_performance(task="op", manifest=man, manifest_record={
        "path": "PERFORMANCE_CASES.json", "sha256": SHA, "size_bytes": 1, "schema_version": 2},
        baseline=b, candidate=c, golden_us=golden, round_paths=("docs/perf/round_001", "docs/perf/round_002"),
        round_noise=round_noise)
    schemas.validate(perf, "performance")
    return perf


def test_per_case_numbers_verdicts_and_exit_code():
    perf = build()
    c1, c2, c3 = perf["per_case"]
    assert (c1["baseline_us"], c1["final_us"], c1["speedup"], c1["verdict"]) == (102.0, 51.0, 2.0, "faster")
    assert (c2["speedup"], c2["verdict"], c2["reason_code"]) == (0.5, "slower", "ci_below_band")
    assert (c3["speedup"], c3["verdict"], c3["target"]) == (1.0, "equivalent", False)
    assert c1["samples"] == {"baseline": BASE["c1"], "final": CAND["c1"]}
    assert perf["slower_target_cases"] == ["c2"] and compare.exit_code(perf) == 1
    assert perf["suite"]["mean_case_speedup"] == 1.25 and perf["suite"]["geomean_speedup"] == 1.0
    assert (perf["n_cases_total"], perf["n_cases_valid"]) == (3, 3)
    assert perf["baseline_collection_id"] == "base" and perf["final_collection_id"] == "cand"


def test_independent_compare_without_calibration_claims_no_size():
    """The same rounds as above, not calibrated: every sized verdict (faster 2.0, slower 0.5,
    equivalent 1.0) becomes inconclusive, the suite too, so nothing is accepted and exit is 0."""
    perf = build(round_noise=None)
    assert [(r["verdict"], r["reason_code"]) for r in perf["per_case"]] == [
        ("inconclusive", "independent_not_calibrated")] * 3
    assert [r["speedup"] for r in perf["per_case"]] == [2.0, 0.5, 1.0]   # the numbers are still shown
    assert (perf["suite"]["verdict"], perf["suite"]["verdict_reason"]) == ("inconclusive", "independent_not_calibrated")
    assert perf["item_acceptance"]["status"] == "rejected" and perf["item_acceptance"]["reason_code"] == "no_stable_gain"
    assert perf["slower_target_cases"] == [] and compare.exit_code(perf) == 0
    calibrated = build()
    assert (calibrated["suite"]["verdict_reason"], calibrated["per_case"][0]["verdict"]) != (
        "independent_not_calibrated", "inconclusive")


def test_non_target_slower_case_does_not_fail_the_compare():
    perf = build(man=make_manifest(targets=("c1",)))
    assert perf["per_case"][1]["verdict"] == "slower" and perf["slower_target_cases"] == []
    assert compare.exit_code(perf) == 0


def test_build_is_deterministic():
    assert build() == build()


def test_default_target_from_golden_ratio():
    # golden / final: c1 102/51 = 2.0, c2 204/204 = 1.0, c3 10/10 = 1.0 -> every P0 case >= 1.0
    perf = build(golden={"c1": 102.0, "c2": 204.0, "c3": 10.0})
    assert [r["golden_reference_ratio"] for r in perf["per_case"]] == [2.0, 1.0, 1.0]
    assert perf["default_target_status"] == "met" and perf["valid_for_target_met"] is True
    assert [r["target_met"] for r in perf["per_case"]] == [True, True, True]
    assert perf["effective_target"] == {"source": "default", "metric": "golden_reference_ratio",
                                        "threshold": 1.0, "status": "met"}
    assert build(golden={"c1": 102.0, "c2": 200.0, "c3": 10.0})["default_target_status"] == "not_met"


def test_default_target_unavailable_without_golden():
    perf = build()
    assert (perf["default_target_status"], perf["valid_for_target_met"]) == ("unavailable", False)
    assert all(r["golden_reference_ratio"] is None and r["target_met"] is None for r in perf["per_case"])


def test_user_target_takes_precedence_over_the_target_cases():
    perf = build(man=make_manifest(user_target={"metric": "speedup", "threshold": 1.5}),
                 golden={"c1": 102.0, "c2": 204.0, "c3": 10.0})
    assert perf["user_target"] == {"metric": "speedup", "threshold": 1.5, "status": "not_met"}
    assert perf["effective_target"]["source"] == "user" and perf["effective_target"]["status"] == "not_met"
    assert [r["target_met"] for r in perf["per_case"]] == [True, False, None]  # c3 is not a target case
    assert perf["default_target_status"] == "met"


def test_insufficient_case_is_missing_never_zero():
    short = {**CAND, "c3": [10.0, 10.0, 10.0]}
    perf = build(cand=short, golden={"c1": 102.0, "c2": 204.0, "c3": 10.0})
    c3 = perf["per_case"][2]
    assert (c3["verdict"], c3["reason_code"], c3["speedup"], c3["final_us"]) == \
        ("insufficient", "candidate_too_few_samples", None, None)
    assert perf["n_cases_valid"] == 2
    assert perf["default_target_status"] == "unavailable" and perf["valid_for_target_met"] is False


def test_paired_candidate_uses_its_own_baseline_samples():
    paired_base = {k: [2 * v for v in vals] for k, vals in CAND.items()}
    cand = make_round("cand", CAND, paired_baseline=paired_base)
    perf = build(candidate=cand)
    assert perf["paired"] is True and perf["paired_baseline_version"] == "docs/perf/versions/v0"
    assert [r["speedup"] for r in perf["per_case"]] == [2.0, 2.0, 2.0]
    assert perf["per_case"][0]["samples"]["baseline"] == paired_base["c1"]
    assert perf["per_case"][0]["aa_noise"] is None and perf["baseline_collection_id"] == "base"


def test_relative_band_has_no_ci():
    perf = build(man=make_manifest(method="relative_band"))
    assert all(r["speedup_ci"] is None for r in perf["per_case"])
    assert [r["reason_code"] for r in perf["per_case"]] == ["point_above_band", "point_below_band", "point_inside_band"]
    assert perf["suite"]["ci"] is None and perf["suite"]["reason_code"] == "point_only"


def test_bound_route_is_the_most_frequent_repeat_label():
    routes = [{"label": "data_movement_candidate"}] * 3 + [{"label": "mixed"}] * 2
    assert compare.bound_route([RepeatResult(1.0, 1, r, ()) for r in routes]) == {
        "label": "data_movement_candidate", "counts": {"data_movement_candidate": 3, "mixed": 2}}
    tie = [{"label": "mixed"}, {"label": "compute_candidate"}]
    assert compare.bound_route([RepeatResult(1.0, 1, r, ()) for r in tie])["label"] == "mixed"
    assert compare.bound_route([RepeatResult(1.0, 1, None, ())] * 3) is None


@pytest.mark.parametrize("change, needle", [
    (lambda c: c.update(collection_id="base"), "is the baseline round itself"),
    (lambda c: c.update(warmup=3), "protocol.warmup"),
    (lambda c: c.update(status="failed"), "not a complete formal round"),
    (lambda c: c.update(mode="quick"), "not a complete formal round"),
    (lambda c: c["performance_cases"].update(sha256="b" * 64), "different PERFORMANCE_CASES.json"),
    (lambda c: c.update(expected_cases=["c1", "c2"]), "missing ['c3']"),
    (lambda c: c.update(selector={"kind": "cli", "name": "--case"}), "selector"),
])
def test_contract_errors(change, needle):
    cand = make_round("cand", CAND)
    collection = copy.deepcopy(cand.collection)
    change(collection)
    bad = RoundEvidence(cand.path, collection, cand.cases)
    with pytest.raises(ContractError) as info:
        compare.check_rounds(make_manifest(), SHA, make_round("base", BASE), bad)
    assert needle in info.value.line()


def test_rounds_must_match_the_frozen_protocol():
    b = make_round("base", BASE, repeats=7)
    c = make_round("cand", CAND, repeats=7)
    with pytest.raises(ContractError, match="manifest froze 5"):
        compare.check_rounds(make_manifest(), SHA, b, c)


def test_performance_log_is_a_fixed_width_table():
    log = text.render_performance_log(build(golden={"c1": 102.0, "c2": 204.0, "c3": 10.0}))
    lines = log.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("case "))
    table = lines[header:header + 5]
    column = table[0].index("speedup ")
    assert [line[column:column + 7].strip() for line in table[2:]] == ["2.0000", "0.5000", "1.0000"]
    assert "slower target cases: c2" in log and "NOT a baseline-to-final speed-up" in log
    assert text.fmt(None) == "n/a" and text.fmt_ci(None) == "n/a"


def test_perf_report_markdown_cites_rounds_and_figures():
    md = compare_md.render_perf_report(build(), {"Speed-up": "docs/perf/figures/x.png"})
    assert "`base`" in md and "`cand`" in md and "![Speed-up](docs/perf/figures/x.png)" in md
    assert "| `c2` | yes | [4,8] | float32 | 102.000 | 204.000 | 0.5000 |" in md
    assert "**unavailable**" in md and "not** a baseline-to-final speed-up" in md


def test_calibrated_between_round_noise_widens_only_the_suite_cis_of_independent_rounds():
    plain, widened = build(), build(round_noise=0.5)
    for key in ("ci", "mean_ci", "geomean_ci"):
        lo, hi = plain["suite"][key]
        assert widened["suite"][key] == pytest.approx([lo / 1.5, hi * 1.5])
    assert widened["suite"]["between_round_noise"] == 0.5 and plain["suite"]["between_round_noise"] is None
    assert [r["speedup_ci"] for r in widened["per_case"]] == [r["speedup_ci"] for r in plain["per_case"]]
    assert "widened by the calibrated between-round noise 0.5000" in compare_md.render_perf_report(widened, {})
    paired_base = {k: [2 * v for v in vals] for k, vals in CAND.items()}
    paired = [build(candidate=make_round("cand", CAND, paired_baseline=paired_base), round_noise=n) for n in (None, 0.5)]
    assert paired[0]["suite"] == paired[1]["suite"]   # drift cancels inside pairs: nothing to widen


def test_perf_report_names_the_comparison_protocol_and_warns_on_uncalibrated_independent_rounds():
    perf = build()
    assert perf["paired"] is False and "calibration" not in perf
    assert "independent rounds, not calibrated" in compare_md.render_perf_report(perf, {})
    perf["calibration"] = {"kind": "two_rounds", "rounds": ["r1", "r2"], "measured_noise": 0.3,
                           "frozen_noise_band": 0.01, "effective_band": 0.3001}
    md = compare_md.render_perf_report(perf, {})
    assert "noise band calibrated to 0.3001 (A/A noise of the baseline code, two_rounds, rounds r1, r2)" in md
    assert "not calibrated" not in md
    perf.update(paired=True, paired_baseline_version="v000")
    md = compare_md.render_perf_report(perf, {})
    assert "paired: the final round interleaves both arms, baseline version v000" in md and "independent" not in md


def test_plots_write_png_and_return_the_path(tmp_path):
    out = plots.speedup_ci(["a", "b", "c"], [1.2, None, 0.9], [[1.1, 1.3], None, [0.85, 0.95]],
                           [0.01, 0.01, 0.02], ["faster", "insufficient", "slower"], tmp_path / "s.png")
    assert out == tmp_path / "s.png" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dist = plots.sample_distributions(["a", "b"], [[1.0, 2.0], [3.0, 4.0]], [[1.5], [2.5, 3.5]],
                                      tmp_path / "d" / "d.png")
    assert dist.is_file() and dist.stat().st_size > 1000


def test_a_degenerate_ci_an_ulp_off_its_point_still_plots(tmp_path):
    # deterministic backend (pypto-sim): CI [r, r] from the bootstrap can sit one ulp above the point
    point = 22625 / 17545
    out = plots.speedup_ci(["a"], [point], [[point + 2e-16, point + 2e-16]], [0.01], ["faster"], tmp_path / "s.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_degenerate_candidate_score_ci_an_ulp_off_still_plots(tmp_path):
    from perftune.report import final_plots
    score = 22625 / 17545
    out = final_plots.candidate_scores(["v000", "v1"], [1.0, score], [[1.0, 1.0], [score + 2e-16] * 2],
                                       [False, True], "v1", 0.01, tmp_path / "c.png", "t")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_speedup_target_met_by_points_with_an_inconclusive_case_is_unproven():
    cand = {**CAND, "c2": [99.0, 100.5, 101.0, 103.5, 105.0]}  # point 102/101.67 = 1.003 ≥ 1.0, CI straddles
    perf = build(man=make_manifest(user_target={"metric": "speedup", "threshold": 1.0}), cand=cand)
    rows = {r["case"]: r for r in perf["per_case"]}
    assert rows["c2"]["speedup"] > 1.0 and rows["c2"]["verdict"] == "inconclusive"
    assert perf["user_target"] == {"metric": "speedup", "threshold": 1.0, "status": "unproven",
                                   "unproven_cases": ["c2"]}
    assert perf["effective_target"]["status"] == "unproven"
    schemas.validate(perf, "performance")
    assert "inconclusive or insufficient target cases: c2" in text.render_performance_log(perf)
    proven = build(man=make_manifest(user_target={"metric": "speedup", "threshold": 1.0}),
                   cand={**CAND, "c2": [50.0, 50.5, 51.0, 51.5, 52.0]})
    assert proven["user_target"]["status"] == "met" and "unproven_cases" not in proven["user_target"]
