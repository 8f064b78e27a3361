"""Best-version selection as a specification (pure, in-memory samples, exact expected numbers)."""

import numpy as np
import pytest

from perftune.contract import manifest
from perftune.decide import selection, stats
from perftune.decide.selection import Entry


def make_manifest(method="bootstrap", noise_band=0.01, aggregation="median", targets=("a", "b")):
    proto = manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=5, op_name="k",
                                   aggregation=aggregation, decision={"method": method, "noise_band": noise_band,
                                                                      "resamples": 2000})
    cases = tuple(manifest.Case(c, "[1]", "float32") for c in ("a", "b", "c"))
    return manifest.Manifest(2, cases, tuple(targets), "user_selected", proto)


def const(value, cases=("a", "b", "c"), n=5):
    return {c: [float(value)] * n for c in cases}


def entries(*names, problems=None):
    return [Entry(name, order, (problems or {}).get(name)) for order, name in enumerate(names)]


def row(result, version):
    return next(r for r in result["candidates"] if r["version_id"] == version)


def test_score_is_the_equal_weight_mean_of_per_case_speedups_over_target_cases_only():
    rounds = {"v0": {"a": [10, 11, 12, 13, 14], "b": [100] * 5, "c": [1] * 5},
              "v1": {"a": [5, 6, 6, 7, 8], "b": [80] * 5, "c": [1000] * 5}}
    result = selection.select(entries("v0", "v1"), rounds, make_manifest())
    assert row(result, "v1")["score"] == pytest.approx((12 / 6 + 100 / 80) / 2, abs=1e-15)
    assert row(result, "v1")["geomean"] == pytest.approx((2.0 * 1.25) ** 0.5, abs=1e-15)
    assert row(result, "v0")["score"] == 1.0


def test_tie_set_around_the_raw_top_score_chooses_the_smallest_evaluation_order():
    # scores: v0 1.0, v1 1.25, v2 100/79.6 = 1.2563 (anchor), v3 100/85 = 1.1765
    rounds = {"v0": const(100), "v1": const(80), "v2": const(79.6), "v3": const(85)}
    result = selection.select(entries("v0", "v1", "v2", "v3"), rounds, make_manifest())
    assert result["anchor"] == "v2" and result["tie_set"] == ["v1", "v2"] and result["chosen"] == "v1"
    assert [row(result, v)["rank"] for v in ("v0", "v1", "v2", "v3")] == [4, 2, 1, 3]
    assert row(result, "v1")["ratio_to_anchor"] == pytest.approx(0.995, abs=1e-12)
    assert row(result, "v1")["ratio_ci"] == pytest.approx([0.995, 0.995], abs=1e-12)
    assert "smallest evaluation_order (1)" in result["reason"]
    assert result["rule"]["delta"] == 0.01 and result["rule"]["tie_break"] == "smallest_evaluation_order"


def test_a_wider_frozen_band_widens_the_tie_set():
    rounds = {"v0": const(100), "v1": const(80), "v2": const(79.6), "v3": const(85)}
    result = selection.select(entries("v0", "v1", "v2", "v3"), rounds, make_manifest(noise_band=0.10))
    assert result["tie_set"] == ["v1", "v2", "v3"] and result["chosen"] == "v1"


def test_relative_band_uses_the_point_ratio_only():
    rng = np.random.default_rng(7)
    noisy = {c: list(79.6 * (1 + 0.2 * rng.standard_normal(3))) for c in "abc"}
    rounds = {"v0": const(100, n=3), "v1": const(80, n=3), "v2": noisy}
    result = selection.select(entries("v0", "v1", "v2"), rounds, make_manifest(method="relative_band"))
    v1, v2 = row(result, "v1"), row(result, "v2")
    assert v1["ratio_ci"] is None and v1["ci"] is None
    anchor = result["anchor"]
    ratio = min(v1["score"], v2["score"]) / max(v1["score"], v2["score"])
    assert (result["tie_set"] == sorted(["v1", "v2"])) == (ratio >= 0.99)
    assert result["chosen"] == ("v1" if ratio >= 0.99 else anchor)


def test_ineligible_versions_never_rank_even_with_the_top_score():
    rounds = {"v0": const(100), "v1": const(80), "v2": const(50)}
    result = selection.select(entries("v0", "v1", "v2", problems={"v2": "kb_gaps_open"}), rounds, make_manifest())
    assert result["chosen"] == "v1" and result["anchor"] == "v1"
    v2 = row(result, "v2")
    assert v2["score"] == 2.0 and v2["ci"] == pytest.approx([2.0, 2.0], abs=1e-12)
    assert {k: v2[k] for k in ("eligible", "ineligible_reason", "rank", "in_tie_set", "ratio_to_anchor")} == {
        "eligible": False, "ineligible_reason": "kb_gaps_open", "rank": None, "in_tie_set": False,
        "ratio_to_anchor": None}


def test_a_baseline_with_gaps_is_the_reference_but_not_a_candidate():
    rounds = {"v0": const(100), "v1": const(101)}
    result = selection.select(entries("v0", "v1", problems={"v0": "kb_gaps_open"}), rounds, make_manifest())
    assert result["chosen"] == "v1" and row(result, "v0")["rank"] is None


def test_too_few_samples_or_a_missing_case_make_a_version_ineligible():
    rounds = {"v0": const(100), "v1": const(80, n=3), "v2": const(80, cases=("a",))}
    result = selection.select(entries("v0", "v1", "v2"), rounds, make_manifest())
    assert row(result, "v1")["ineligible_reason"] == "score_not_computable:case_candidate_too_few_samples"
    assert row(result, "v2")["ineligible_reason"] == "score_not_computable:case_missing"
    assert result["chosen"] == "v0"


def test_no_eligible_version_chooses_nothing():
    result = selection.select(entries("v0", problems={"v0": "no_compliance_evidence"}), {"v0": const(1)},
                              make_manifest())
    assert result["chosen"] is None and result["tie_set"] == [] and "no eligible" in result["reason"]


def test_selection_is_deterministic_and_independent_of_later_candidates():
    rng = np.random.default_rng(3)
    rounds = {f"v{i}": {c: list(m * (1 + 0.03 * rng.standard_normal(8))) for c in "abc"}
              for i, m in enumerate((100, 80, 79, 90))}
    man = make_manifest()
    first = selection.select(entries("v0", "v1", "v2"), rounds, man)
    assert first == selection.select(entries("v0", "v1", "v2"), rounds, man)
    more = selection.select(entries("v0", "v1", "v2", "v3"), rounds, man)
    for version in ("v0", "v1", "v2"):
        assert row(more, version)["ratio_ci"] == row(first, version)["ratio_ci"]


def test_delta_is_frozen_and_drift_is_only_reported():
    drifting = {"a": [100, 100, 100, 100, 100, 120, 120, 120, 120, 120], "b": [100.0] * 10, "c": [1.0] * 10}
    man = make_manifest()
    aa = stats.aa_noise(drifting["a"], man.protocol.decision, "median")
    assert aa is not None and aa > 0.01
    assert selection.delta_of(man) == 0.01
    result = selection.select(entries("v0", "v1"), {"v0": drifting, "v1": const(90, n=10)}, man)
    assert result["rule"]["delta"] == 0.01 and result["rule"]["baseline_drift"] == {"a": aa, "b": 0.0}
    assert result["rule"]["stable"] is False


def test_a_version_the_final_gate_would_fail_is_never_chosen():
    # v1: (2, 0.8) mean 1.4 beats v2's uniform 1.08, but case b is slower: ineligible
    rounds = {"v0": const(100), "v1": {"a": [50.0] * 5, "b": [125.0] * 5, "c": [1.0] * 5}, "v2": const(100 / 1.08)}
    result = selection.select(entries("v0", "v1", "v2"), rounds, make_manifest(), calibrated=True)
    assert row(result, "v1")["score"] == pytest.approx(1.4) and not row(result, "v1")["eligible"]
    assert row(result, "v1")["ineligible_reason"] == "would_fail_gate: slower target cases ['b']"
    assert result["chosen"] == "v2"
    # independent rounds without calibration claim no size: nothing is proven slower, v1 ranks first
    uncalibrated = selection.select(entries("v0", "v1", "v2"), rounds, make_manifest())
    assert row(uncalibrated, "v1")["eligible"] and uncalibrated["anchor"] == "v1"


def test_confirm_flags_a_final_round_outside_the_stability_band():
    man = make_manifest()
    same = selection.confirm(const(80), const(80.4), const(100), man)
    assert same["consistent"] is True and same["ratio"] == pytest.approx(80 / 80.4, abs=1e-12)
    assert same["status"] == "consistent" and same["band"] == [1 / 1.01, 1.01]
    off = selection.confirm(const(80), const(70), const(100), man)
    assert off["consistent"] is False and off["ratio"] == pytest.approx(80 / 70, abs=1e-12)
    assert off["status"] == "inconsistent"
    rng = np.random.default_rng(2)
    noisy = {c: list(80 * rng.lognormal(0, 0.05, 5)) for c in "abc"}
    wide = selection.confirm(const(80), noisy, const(100), man)
    assert wide["status"] == "unresolved" and wide["ratio_ci"][0] < 1 / 1.01 < wide["ratio_ci"][1]
    assert "never cherry-pick" in off["action"]


def paired(partner, chosen):
    return {c: (list(partner[c]), list(chosen[c])) for c in "abc"}


def test_confirm_paired_compares_speedups_inside_each_round_so_drift_cancels():
    man = make_manifest()
    ranking = paired(const(100), const(80))
    # the machine is 30 % slower during the confirm round: both arms drift, the speed-up does not
    drifted = selection.confirm_paired(ranking, paired(const(130), const(104)), man)
    assert drifted["status"] == "consistent" and drifted["ratio"] == pytest.approx(1.0, abs=1e-12)
    assert drifted["ranking_score"] == pytest.approx(1.25) and drifted["final_score"] == pytest.approx(1.25)
    # the chosen arm alone is 15 % slower in the same machine state: a proven difference
    worse = selection.confirm_paired(ranking, paired(const(100), const(92)), man)
    assert worse["status"] == "inconsistent" and worse["ratio"] == pytest.approx(80 / 92, abs=1e-12)
    assert not worse["refuted"]  # still faster than the partner: the magnitude differs, the choice holds
    reversed_ = selection.confirm_paired(ranking, paired(const(100), const(110)), man)
    assert reversed_["refuted"] and reversed_["final_score_ci"][1] < 1
    assert not selection.confirm_paired(None, paired(const(100), const(130)), man)["refuted"]  # A/A decides nothing
    # the chosen version is the partner itself (the baseline): A/A, ranking score 1 by definition
    aa = selection.confirm_paired(None, paired(const(100), const(100.2)), man)
    assert aa["ranking_score"] == 1.0 and aa["status"] == "consistent"
    rng = np.random.default_rng(3)
    noisy = {c: list(80 * rng.lognormal(0, 0.05, 5)) for c in "abc"}
    wide = selection.confirm_paired(ranking, paired(const(100), noisy), man)
    assert wide["status"] == "unresolved" and wide["ratio_ci"][0] < 1 / 1.01 < wide["ratio_ci"][1]


def test_paired_versions_are_scored_by_a_chain_of_paired_comparisons_never_against_the_drifted_baseline():
    man = make_manifest(noise_band=0.05)
    # the machine got 40 % slower after the baseline round: v1's own arm alone would look 1.07x slower
    rounds = {"v0": const(100), "v1": const(107), "v2": const(71.3)}
    links = {"v1": paired(const(140), const(107)), "v2": paired(const(107), const(71.3))}
    result = selection.select([Entry("v0", 0), Entry("v1", 1, partner="v0"), Entry("v2", 2, partner="v1")],
                              rounds, man, links)
    assert row(result, "v1")["score"] == pytest.approx(140 / 107) and row(result, "v1")["eligible"]
    assert row(result, "v2")["score"] == pytest.approx(140 / 71.3)  # (140/107) * (107/71.3)
    assert row(result, "v2")["protocol"] == "paired chain v0 > v1 > v2" and result["chosen"] == "v2"
    assert row(result, "v0")["protocol"] == "baseline"
    independent = selection.select(entries("v0", "v1"), rounds, man, calibrated=True)  # unpaired: drift wins
    assert row(independent, "v1")["protocol"] == "independent vs v0 > v1"
    assert not row(independent, "v1")["eligible"] and "would_fail_gate" in row(independent, "v1")["ineligible_reason"]


def test_a_chain_that_proves_a_case_slower_fails_the_gate_and_a_partner_must_come_first():
    man = make_manifest(noise_band=0.05)
    rounds = {"v0": const(100), "v1": const(50), "v2": const(50)}
    links = {"v1": paired(const(100), const(50)),
             "v2": {"a": ([50.0] * 5, [120.0] * 5), "b": ([50.0] * 5, [25.0] * 5), "c": ([50.0] * 5, [50.0] * 5)}}
    result = selection.select([Entry("v0", 0), Entry("v1", 1, partner="v0"), Entry("v2", 2, partner="v1")],
                              rounds, man, links)
    # v2's case a: 2.0 * 50/120 = 0.83x of the baseline: slower through the chain, although b is 4x faster
    assert row(result, "v2")["ineligible_reason"] == "would_fail_gate: slower target cases ['a']"
    with pytest.raises(ValueError, match="not an earlier version"):
        selection.select([Entry("v0", 0), Entry("v1", 1, partner="v2"), Entry("v2", 2)], rounds, man, links)
    band = make_manifest(method="relative_band", noise_band=0.05)
    assert row(selection.select([Entry("v0", 0), Entry("v1", 1, partner="v0")], rounds, band, links),
               "v1")["score"] == pytest.approx(2.0)


def test_confirm_has_a_reachable_end_with_the_partner_named(tmp_path):
    """#27: attempt 1 of 2 not shown equivalent -> remeasure paired with the named partner; attempt 2 of 2 ->
    a stated final verdict (disclosed), never an endless 're-measure'; a third attempt is refused."""
    from perftune.decide import candidates
    from perftune.errors import ContractError

    def attempt(n, **kw):
        return {"final_collection_id": f"f{n}", "ranking_collection_id": "r", "executable_sha256": "s",
                "refuted": False, "consistent": False, "status": "unresolved", "partner": "v1", **kw}

    first = candidates._store_attempt(tmp_path, attempt(1), 1)
    assert (first["verdict"], first["attempts_left"], first["limit_reached"]) == ("remeasure", 1, False)
    assert first["confirm_partner"] == "v1" and "--paired-with DIR/docs/perf/versions/v1" in first["action"]
    second = candidates._store_attempt(tmp_path, attempt(2), 1)
    assert (second["verdict"], second["attempts_left"], second["limit_reached"]) == ("final_unresolved", 0, True)
    assert "limit of 2 confirm attempt(s)" in second["action"] and "disclose" in second["action"]
    with pytest.raises(ContractError, match="limit"):
        candidates._store_attempt(tmp_path, attempt(3), 1)
    other = tmp_path / "other"
    other.mkdir()
    assert candidates._store_attempt(other, attempt(1, consistent=True, status="consistent"), 1)["verdict"] == "consistent"
    assert candidates._store_attempt(other, attempt(2, refuted=True), 1)["verdict"] == "refuted"
