"""stats.py: aggregation, Mann-Whitney, bootstrap verdicts, A/A noise, suite score (exact numbers)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from perftune.decide import stats
from perftune.contract.manifest import Decision

BOOT = Decision("bootstrap", 0.95, 0.01, 10000, 42, 5)
BAND = Decision("relative_band", 0.95, 0.01, 10000, 42, 5)


# --- aggregation ---------------------------------------------------------------------------

@pytest.mark.parametrize("samples, method, expected", [
    ([5.0, 1.0, 3.0], "trimmed_mean", 3.0),            # drops 1 and 5
    ([1.0, 2.0, 3.0, 10.0], "trimmed_mean", 2.5),      # mean of [2, 3]
    ([1.0, 2.0], "trimmed_mean", 1.5),                 # n < 3: median
    ([7.0], "trimmed_mean", 7.0),
    ([4.0, 1.0, 2.0, 3.0], "median", 2.5),
    ([3.0, 1.0, 2.0], "median", 2.0),
])
def test_aggregate_exact(samples, method, expected):
    assert stats.aggregate(samples, method) == expected


def test_aggregate_rows_matches_scalar_form():
    rows = np.array([[5.0, 1.0, 3.0, 9.0], [2.0, 2.0, 8.0, 4.0]])
    assert stats.aggregate_rows(rows, "trimmed_mean").tolist() == [4.0, 3.0]
    assert stats.aggregate_rows(rows, "median").tolist() == [4.0, 3.0]


def test_aggregate_rejects_unknown_method():
    with pytest.raises(ValueError):
        stats.aggregate([1.0, 2.0], "mean")


# --- Mann-Whitney U ------------------------------------------------------------------------

def test_mann_whitney_exact_complete_separation():
    # m = n = 3: 20 equally likely orderings, U_b = 9 reached once on each side -> p = 2/20.
    p, sup = stats.mann_whitney([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert p == pytest.approx(0.1, abs=1e-15)
    assert sup == 1.0


def test_mann_whitney_exact_interleaved():
    # U_b = #(c < b) = 0 + 1 + 2 = 3; null counts of U = 0..9 are 1,1,2,3,3,3,3,2,1,1;
    # P(U >= 6) = 7/20, two-sided p = 14/20.
    p, sup = stats.mann_whitney([1.0, 3.0, 5.0], [2.0, 4.0, 6.0])
    assert p == pytest.approx(0.7, abs=1e-15)
    assert sup == pytest.approx(1 / 3, abs=1e-15)


def test_mann_whitney_normal_approximation_with_ties():
    # ranks of 1,2,2,2,3,3,3,4 -> b = [1,3,3,6], R_b = 13, U_b = 3, mean 8;
    # tie term (24 + 24) / (8 * 7) = 6/7, var = 16/12 * (9 - 6/7) = 228/21, z = 4.5 / sqrt(var).
    p, sup = stats.mann_whitney([1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 3.0, 4.0])
    expected = math.erfc(4.5 / math.sqrt(228 / 21) / math.sqrt(2))
    assert p == pytest.approx(expected, rel=1e-12)
    assert sup == 0.1875


def test_mann_whitney_all_equal_gives_p_one():
    assert stats.mann_whitney([2.0] * 4, [2.0] * 4) == (1.0, 0.5)


def test_paired_rank_test_is_wilcoxon_signed_rank_on_log_differences():
    # log differences of 10 pairs, all positive and distinct: exact null, two-sided p = 2 / 2**10
    base = np.array([100.0 + i for i in range(10)])
    cand = base / (1.01 + 0.001 * np.arange(10))
    r = stats.compare_samples(base, cand, BOOT, paired=True)
    assert r.rank_test == "wilcoxon_signed_rank_log" and r.mann_whitney_p == pytest.approx(2 / 1024, rel=1e-12)
    assert r.prob_candidate_faster == 1.0
    assert stats.wilcoxon_log([5.0] * 6, [5.0] * 6) == 1.0
    assert stats.compare_samples(base, cand, BOOT).rank_test == "mann_whitney_u"


# --- verdict table -------------------------------------------------------------------------

@pytest.mark.parametrize("low, high, verdict", [
    (1.02, 1.10, "faster"),
    (0.90, 0.98, "slower"),
    (0.995, 1.005, "equivalent"),
    (0.995, 1.05, "inconclusive"),
    (1.0 / 1.01, 1.01, "equivalent"),     # band edges are inside
    (1.01, 1.02, "inconclusive"),         # 'faster' needs the CI strictly above 1 + delta
])
def test_verdict_from_ci(low, high, verdict):
    assert stats.verdict_from_ci(low, high, 0.01) == verdict


def test_constant_arms_give_exact_ci_and_faster():
    r = stats.compare_samples([10.0] * 5, [5.0] * 5, BOOT)
    assert r.point == 2.0 and (r.ci_low, r.ci_high) == pytest.approx((2.0, 2.0), rel=1e-12)
    assert (r.verdict, r.reason_code, r.delta, r.aa_noise) == ("faster", "ci_above_band", 0.01, None)
    assert r.prob_candidate_faster == 1.0


def test_compare_is_deterministic_and_seed_dependent():
    rng = np.random.default_rng(0)
    b, c = rng.lognormal(0, 0.05, 10), rng.lognormal(0, 0.05, 10)
    first, second = stats.compare_samples(b, c, BOOT), stats.compare_samples(b.copy(), c.copy(), BOOT)
    assert first == second
    other = stats.compare_samples(b, c, Decision("bootstrap", 0.95, 0.01, 10000, 7, 5))
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)
    assert other.point == first.point


@pytest.mark.parametrize("baseline, candidate, reason", [
    ([1.0] * 4, [1.0] * 5, "baseline_too_few_samples"),
    ([1.0] * 5, [1.0] * 4 + [math.nan], "candidate_non_finite_sample"),
    ([1.0] * 4 + [math.inf], [1.0] * 5, "baseline_non_finite_sample"),
    ([1.0] * 5, [1.0] * 4 + [0.0], "candidate_non_positive_sample"),
    ([1.0] * 5, [1.0] * 4 + [-2.0], "candidate_non_positive_sample"),
])
def test_insufficient_with_reason(baseline, candidate, reason):
    r = stats.compare_samples(baseline, candidate, BOOT)
    assert (r.verdict, r.reason_code, r.ci_low, r.ci_high) == ("insufficient", reason, None, None)
    assert r.mann_whitney_p is None


def test_insufficient_keeps_a_point_only_when_computable():
    assert stats.compare_samples([4.0] * 3, [2.0] * 3, BOOT).point == 2.0
    assert stats.compare_samples([4.0] * 3, [math.nan] * 3, BOOT).point is None


def test_relative_band_calls_a_direction_only_with_a_significant_rank_test():
    # 3 vs 3 can never reach p < 0.05 (exact minimum 0.1): the point alone never gives a direction
    r = stats.compare_samples([10.0, 10.2, 9.9], [9.0, 9.1, 9.05], BAND, aggregation="trimmed_mean")
    assert r.point == pytest.approx(10.0 / 9.05)
    assert (r.verdict, r.reason_code, r.ci_low, r.ci_high) == ("inconclusive", "rank_test_not_significant", None, None)
    five = stats.compare_samples([10.0, 10.2, 9.9, 10.1, 10.3], [9.0, 9.1, 9.05, 9.2, 8.9], BAND)
    assert (five.verdict, five.reason_code, five.mann_whitney_p) == ("faster", "point_above_band",
                                                                     pytest.approx(2 / 252, rel=1e-12))
    tie = stats.compare_samples([10.0] * 3, [10.05] * 3, BAND)
    assert (tie.verdict, tie.reason_code) == ("inconclusive", "point_inside_band")
    assert stats.compare_samples([10.0] * 2, [9.0] * 2, BAND).reason_code == "baseline_too_few_samples"


# --- A/A noise -----------------------------------------------------------------------------

def test_aa_noise_measures_proven_drift_between_halves():
    drifted = [100.0] * 5 + [110.0] * 5
    assert stats.aa_noise(drifted, BOOT, "median") == pytest.approx(0.1, rel=1e-12)
    assert stats.aa_noise([100.0] * 10, BOOT, "median") == 0.0
    assert stats.aa_noise([100.0] * 9, BOOT, "median") is None  # halves below min_repeats


def test_drift_is_reported_and_never_widens_the_band():
    drifted = np.array([100.0, 100.5, 99.5, 100.2, 99.8, 110.0, 110.5, 109.5, 110.2, 109.8])
    r = stats.compare_samples(drifted, np.full(10, 100.0), BOOT)
    assert r.delta == 0.01 and r.aa_noise == pytest.approx(0.0928143712574856, rel=1e-12)
    assert r.stable is False and r.verdict != "faster"
    calm = stats.compare_samples(np.full(10, 100.0), np.full(10, 90.0), BOOT)
    assert (calm.stable, calm.aa_noise, calm.delta) == (True, 0.0, 0.01)


def test_bonferroni_widens_the_ci_of_a_family_of_target_cases():
    rng = np.random.default_rng(4)
    b, c = rng.lognormal(0, 0.05, 10), rng.lognormal(-0.05, 0.05, 10)
    one, four = stats.compare_samples(b, c, BOOT), stats.compare_samples(b, c, BOOT, family_size=4)
    assert (one.ci_level, four.ci_level) == (0.95, pytest.approx(0.9875, abs=1e-15))
    assert four.ci_low < one.ci_low and four.ci_high > one.ci_high and four.point == one.point
    off = Decision("bootstrap", 0.95, 0.01, 10000, 42, 5, "none")
    assert stats.compare_samples(b, c, off, family_size=4) == one


def test_two_level_bootstrap_resamples_processes_then_repeats():
    # two processes at 100 and 110 us, candidate the same: the CI spans the process-level spread,
    # the one-level CI (all 10 samples pooled and resampled) is narrower
    base = np.array([100.0] * 5 + [110.0] * 5)
    cand = np.array([100.0] * 5 + [110.0] * 5)
    groups = [0] * 5 + [1] * 5
    two = stats.compare_samples(base, cand, BOOT, groups_b=groups, groups_c=groups)
    one = stats.compare_samples(base, cand, BOOT)
    assert two.ci_low == pytest.approx(100 / 110, rel=1e-12) and two.ci_high == pytest.approx(1.1, rel=1e-12)
    assert two.n_processes == 2 and one.n_processes is None
    assert two.ci_low <= one.ci_low and two.ci_high >= one.ci_high
    with pytest.raises(ValueError):
        stats.compare_samples(base, cand[:9], BOOT, groups_b=groups, groups_c=groups[:9])


def test_drift_over_processes_uses_whole_processes():
    values = np.array([100.0] * 6 + [120.0] * 6)
    groups = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    dec = Decision("bootstrap", 0.95, 0.01, 2000, 42, 3)
    assert stats.aa_noise(values, dec, "median", groups) == pytest.approx(0.2, rel=1e-12)


def test_paired_resampling_cancels_common_drift():
    base = 100.0 * (1.0 + 0.1 * np.arange(10))
    cand = base / 1.05
    paired = stats.compare_samples(base, cand, BOOT, paired=True)
    assert paired.ci_low == pytest.approx(1.05) and paired.ci_high == pytest.approx(1.05)
    assert (paired.verdict, paired.aa_noise, paired.paired) == ("faster", None, True)
    assert stats.compare_samples(base, cand, BOOT).verdict == "inconclusive"
    assert stats.compare_samples(base, cand[:9], BOOT, paired=True).reason_code == "paired_length_mismatch"


# --- suite ---------------------------------------------------------------------------------

def test_suite_score_exact_equal_weight_mean():
    per_case = {"a": ([2.0] * 5, [1.0] * 5), "b": ([1.0] * 5, [2.0] * 5), "other": ([9.0] * 5, [1.0] * 5)}
    r = stats.suite_score(per_case, ["a", "b"], BOOT)
    assert (r.mean_case_speedup, r.geomean_speedup) == (1.25, 1.0)
    assert (r.ci_low, r.ci_high) == pytest.approx((1.25, 1.25), rel=1e-12)
    assert (r.n_cases, r.reason_code, r.metric, r.score) == (2, "case_bootstrap", "mean_case_speedup", 1.25)
    g = stats.suite_score(per_case, ["a", "b"], BOOT, metric="geomean_speedup")
    assert (g.score, g.ci_low, g.ci_high) == (1.0, pytest.approx(1.0), pytest.approx(1.0))
    assert g.mean_ci == pytest.approx((1.25, 1.25)) and g.geomean_ci == pytest.approx((1.0, 1.0))


def test_suite_score_not_computable_is_none_never_zero():
    per_case = {"a": ([2.0] * 5, [1.0] * 5), "b": ([1.0] * 3, [2.0] * 5)}
    r = stats.suite_score(per_case, ["a", "b"], BOOT)
    assert (r.mean_case_speedup, r.ci_low, r.reason_code) == (None, None, "case_baseline_too_few_samples")
    assert stats.suite_score(per_case, ["a", "zzz"], BOOT).reason_code == "case_missing"
    band = stats.suite_score({"a": ([2.0] * 3, [1.0] * 3)}, ["a"], BAND)
    assert (band.mean_case_speedup, band.ci_low, band.reason_code) == (2.0, None, "point_only")


def test_suite_ci_brackets_the_point_and_is_deterministic():
    rng = np.random.default_rng(5)
    per_case = {str(i): (rng.lognormal(0, 0.03, 10), rng.lognormal(-0.05, 0.03, 10)) for i in range(6)}
    first = stats.suite_score(per_case, list(per_case), BOOT)
    assert first.ci_low < first.mean_case_speedup < first.ci_high
    assert first == stats.suite_score(per_case, list(per_case), BOOT)


def test_suite_bootstrap_is_fast_for_50_cases():
    rng = np.random.default_rng(9)
    per_case = {str(i): (rng.lognormal(0, 0.02, 10), rng.lognormal(0, 0.02, 10)) for i in range(50)}
    start = time.process_time()  # CPU time of this process: robust to a loaded shared machine
    stats.suite_score(per_case, list(per_case), BOOT)
    assert time.process_time() - start < 1.0
