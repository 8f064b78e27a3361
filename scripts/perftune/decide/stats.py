"""Statistics of a performance comparison: aggregation, bootstrap CIs, verdicts, suite score.

Pure numpy, vectorised, no file access, no clock. Every random draw comes from
``numpy.random.default_rng(decision.rng_seed)`` in a fixed order, so the same samples and the same
frozen decision always give bit-identical results. The rules (DESIGN §7) and the precise
definitions — trimmed mean, bootstrap, A/A noise, verdict table, Mann-Whitney — are written down in
``docs/statistics.md``; this docstring only lists the decisions made where DESIGN is silent:

- ``point`` speed-up = aggregate(baseline) / aggregate(candidate); > 1 means the candidate is faster.
- CI = percentile bootstrap of log speed-up; each arm resampled independently (paired rounds:
  one index draw shared by both arms, so each (baseline, candidate) pair stays together). Each arm
  (paired: the list of pairs) is sorted before resampling, so the CI and the verdict are exact
  functions of the sample multiset: permuting the repeats never changes them.
- A/A noise (``aa_noise``) = the drift the baseline itself *proves*: the bootstrap CI of
  log(aggregate(first half) / aggregate(second half)) in recorded repeat order; when that CI excludes
  0 its bound nearest to 0 (as a relative number), else 0. Needs ``2 * min_repeats`` samples, else it
  is unavailable (None) and δ is the frozen band alone. Paired rounds skip it: interleaving
  cancels exactly the drift it would measure (a dedicated A/A value may still be passed in).
- ``relative_band`` (upstream-compatible, few repeats): verdict from the point ratio only, CI null,
  sample floor ``min(min_repeats, protocol.RELATIVE_BAND_MIN_REPEATS)``.
- Mann-Whitney U: exact null distribution when there are no ties and both arms have at most
  ``EXACT_MAX_N`` samples; otherwise the normal approximation with tie and continuity correction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..contract import protocol
from ..contract.aggregation import aggregate, aggregate_rows
from ..contract.manifest import Decision

EXACT_MAX_N = 20

REASONS = {
    "faster": "ci_above_band",
    "slower": "ci_below_band",
    "equivalent": "ci_inside_band",
    "inconclusive": "ci_straddles_band",
}
BAND_REASONS = {"faster": "point_above_band", "slower": "point_below_band", "equivalent": "point_inside_band"}


@dataclass(frozen=True)
class SpeedupResult:
    """One baseline-vs-candidate comparison. ``None`` means "not computable", never zero."""

    point: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    reason_code: str
    delta: float
    mann_whitney_p: float | None
    prob_candidate_faster: float | None
    n_baseline: int
    n_candidate: int
    method: str
    aa_noise: float | None = None
    paired: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SuiteResult:
    """Equal-weight suite score over the target cases with its hierarchical-bootstrap CI."""

    mean_case_speedup: float | None
    geomean_speedup: float | None
    ci_low: float | None
    ci_high: float | None
    n_cases: int
    method: str
    reason_code: str

    def as_dict(self) -> dict:
        return asdict(self)


def _as_array(samples: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(samples, dtype=float)


def sample_problem(samples: Sequence[float] | np.ndarray, floor: int) -> str | None:
    """Why a sample cannot be used (a reason code), or None when it is usable."""
    values = _as_array(samples)
    if values.ndim != 1 or values.size < floor:
        return "too_few_samples"
    if not np.all(np.isfinite(values)):
        return "non_finite_sample"
    if np.any(values <= 0):
        return "non_positive_sample"
    return None


def _percentile_ci(log_draws: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(log_draws, [alpha, 1.0 - alpha], axis=-1)
    return float(np.exp(low)), float(np.exp(high))


def log_speedup_draws(baseline: np.ndarray, candidate: np.ndarray, aggregation: str, resamples: int,
                      rng: np.random.Generator, paired: bool = False) -> np.ndarray:
    """``resamples`` bootstrap draws of log(aggregate(baseline) / aggregate(candidate))."""
    nb, nc = baseline.size, candidate.size
    if paired:
        if nb != nc:
            raise ValueError("paired samples need arms of equal length")
        # canonical pair order, symmetric in the arms: repeat order never moves the CI, and swapping
        # the arms inverts it exactly (unless a pair and its mirror image are both present)
        order = np.lexsort((baseline, np.maximum(baseline, candidate), np.minimum(baseline, candidate)))
        baseline, candidate = baseline[order], candidate[order]
        index = rng.integers(0, nb, size=(resamples, nb))
        b_draw, c_draw = baseline[index], candidate[index]
    else:
        baseline, candidate = np.sort(baseline), np.sort(candidate)  # canonical order, as above
        b_draw = baseline[rng.integers(0, nb, size=(resamples, nb))]
        c_draw = candidate[rng.integers(0, nc, size=(resamples, nc))]
    return np.log(aggregate_rows(b_draw, aggregation)) - np.log(aggregate_rows(c_draw, aggregation))


def aa_noise(baseline: Sequence[float] | np.ndarray, decision: Decision, aggregation: str) -> float | None:
    """The drift the baseline proves between its two halves (see module docstring); None if n too small."""
    values = _as_array(baseline)
    half = values.size // 2
    if half < decision.min_repeats or sample_problem(values, 2 * decision.min_repeats):
        return None
    rng = np.random.default_rng([decision.rng_seed, 1])
    draws = log_speedup_draws(values[:half], values[half:2 * half], aggregation, decision.resamples, rng)
    low, high = _percentile_ci(draws, decision.confidence)
    if low > 1.0:
        return low - 1.0
    if high < 1.0:
        return 1.0 / high - 1.0
    return 0.0


def verdict_from_ci(ci_low: float, ci_high: float, delta: float) -> str:
    """The DESIGN §7 verdict table on a speed-up CI and the band 1±δ."""
    upper, lower = 1.0 + delta, 1.0 / (1.0 + delta)
    if ci_low > upper:
        return "faster"
    if ci_high < lower:
        return "slower"
    if ci_low >= lower and ci_high <= upper:
        return "equivalent"
    return "inconclusive"


def verdict_from_point(point: float, delta: float) -> str:
    """``relative_band``: the point ratio against 1±δ (ties are ``equivalent``)."""
    if point > 1.0 + delta:
        return "faster"
    if point < 1.0 / (1.0 + delta):
        return "slower"
    return "equivalent"


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based, ties share their mean rank) and the sizes of the tie groups."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, ordered.size])
    mean_rank = starts + (counts + 1) / 2.0
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(mean_rank, counts)
    return ranks, counts


def _exact_u_counts(m: int, n: int) -> np.ndarray:
    """Number of orderings giving each U = 0..m*n under H0 (no ties): the DP f(i,j)=f(i-1,j)<<j + f(i,j-1)."""
    table = [[np.ones(1, dtype=np.int64) for _ in range(n + 1)] for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            left, up = table[i - 1][j], table[i][j - 1]
            out = np.zeros(i * j + 1, dtype=np.int64)
            out[j:j + left.size] += left
            out[:up.size] += up
            table[i][j] = out
    return table[m][n]


def mann_whitney(baseline: Sequence[float] | np.ndarray,
                 candidate: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U p-value and P(candidate < baseline) (ties count one half).

    The statistic is U_b = #{(b, c): c < b} + ½ #{c = b}. Exact null distribution without ties
    and with both n ≤ ``EXACT_MAX_N``; else normal approximation with tie and continuity correction.
    """
    b, c = _as_array(baseline), _as_array(candidate)
    m, n = b.size, c.size
    ranks, ties = _average_ranks(np.concatenate([b, c]))
    u_b = float(ranks[:m].sum() - m * (m + 1) / 2.0)
    superiority = u_b / (m * n)
    if np.all(ties == 1) and max(m, n) <= EXACT_MAX_N:
        counts = _exact_u_counts(m, n)
        u = int(round(max(u_b, m * n - u_b)))
        p = 2.0 * float(counts[u:].sum()) / float(counts.sum())
        return min(1.0, p), superiority
    total = m + n
    tie_term = float((ties ** 3 - ties).sum()) / (total * (total - 1))
    variance = m * n / 12.0 * ((total + 1) - tie_term)
    if variance <= 0:
        return 1.0, superiority
    z = max(0.0, abs(u_b - m * n / 2.0) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2.0))), superiority


def _floor(decision: Decision) -> int:
    if decision.method == "relative_band":
        return min(decision.min_repeats, protocol.RELATIVE_BAND_MIN_REPEATS)
    return decision.min_repeats


def _insufficient(b: np.ndarray, c: np.ndarray, decision: Decision, paired: bool) -> SpeedupResult | None:
    floor = _floor(decision)
    reason = None
    for arm, values in (("baseline", b), ("candidate", c)):
        problem = sample_problem(values, floor)
        if problem and reason is None:
            reason = f"{arm}_{problem}"
    if reason is None and paired and b.size != c.size:
        reason = "paired_length_mismatch"
    if reason is None:
        return None
    point = None
    if not sample_problem(b, 1) and not sample_problem(c, 1) and b.ndim == c.ndim == 1:
        point = float(aggregate(b, "median") / aggregate(c, "median"))
    return SpeedupResult(point, None, None, "insufficient", reason, decision.noise_band, None, None,
                         int(b.size), int(c.size), decision.method, None, paired)


def compare_samples(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray,
                    decision: Decision, paired: bool = False, aa_noise_value: float | None = None,
                    aggregation: str = protocol.DEFAULT_AGGREGATION) -> SpeedupResult:
    """Speed-up of ``candidate`` over ``baseline`` with its CI and verdict (DESIGN §7).

    ``aa_noise_value`` overrides the A/A noise otherwise measured from ``baseline``
    (e.g. from a dedicated A/A round); δ = max(decision.noise_band, A/A noise).
    """
    b, c = _as_array(baseline), _as_array(candidate)
    bad = _insufficient(b, c, decision, paired)
    if bad is not None:
        if bad.point is not None and aggregation != "median":
            bad = SpeedupResult(**{**bad.as_dict(), "point": aggregate(b, aggregation) / aggregate(c, aggregation)})
        return bad
    point = aggregate(b, aggregation) / aggregate(c, aggregation)
    noise = aa_noise_value
    if noise is None and not paired:  # pairing cancels the drift that the halves would measure
        noise = aa_noise(b, decision, aggregation)
    delta = max(decision.noise_band, noise or 0.0)
    p_value, superiority = mann_whitney(b, c)
    common = dict(point=point, delta=delta, mann_whitney_p=p_value, prob_candidate_faster=superiority,
                  n_baseline=int(b.size), n_candidate=int(c.size), method=decision.method,
                  aa_noise=noise, paired=paired)
    if decision.method == "relative_band":
        verdict = verdict_from_point(point, delta)
        return SpeedupResult(ci_low=None, ci_high=None, verdict=verdict, reason_code=BAND_REASONS[verdict],
                             **common)
    rng = np.random.default_rng(decision.rng_seed)
    draws = log_speedup_draws(b, c, aggregation, decision.resamples, rng, paired)
    low, high = _percentile_ci(draws, decision.confidence)
    verdict = verdict_from_ci(low, high, delta)
    return SpeedupResult(ci_low=low, ci_high=high, verdict=verdict, reason_code=REASONS[verdict], **common)


def suite_draws(pairs: Sequence[tuple[np.ndarray, np.ndarray]], aggregation: str, resamples: int,
                rng: np.random.Generator, paired: bool = False) -> np.ndarray:
    """Hierarchical bootstrap draws of the equal-weight mean speed-up (cases fixed, repeats resampled)."""
    total = np.zeros(resamples)
    for baseline, candidate in pairs:
        total += np.exp(log_speedup_draws(baseline, candidate, aggregation, resamples, rng, paired))
    return total / len(pairs)


def suite_score(per_case: Mapping[str, tuple[Sequence[float], Sequence[float]]], target_ids: Sequence[str],
                decision: Decision, paired: bool = False,
                aggregation: str = protocol.DEFAULT_AGGREGATION) -> SuiteResult:
    """Equal-weight arithmetic mean (and geomean) of per-case speed-ups over ``target_ids``.

    Any target case without usable samples makes the suite not computable (all numbers None,
    ``reason_code`` names the case problem); missing is never zero.
    """
    if not target_ids:
        raise ValueError("suite score needs at least one target case")
    pairs = []
    for case_id in target_ids:
        if case_id not in per_case:
            return SuiteResult(None, None, None, None, len(target_ids), decision.method, "case_missing")
        b, c = (_as_array(x) for x in per_case[case_id])
        bad = _insufficient(b, c, decision, paired)
        if bad is not None:
            return SuiteResult(None, None, None, None, len(target_ids), decision.method, f"case_{bad.reason_code}")
        pairs.append((b, c))
    speedups = np.array([aggregate(b, aggregation) / aggregate(c, aggregation) for b, c in pairs])
    mean, geomean = float(speedups.mean()), float(np.exp(np.log(speedups).mean()))
    if decision.method == "relative_band":
        return SuiteResult(mean, geomean, None, None, len(pairs), decision.method, "point_only")
    rng = np.random.default_rng([decision.rng_seed, 2])
    draws = suite_draws(pairs, aggregation, decision.resamples, rng, paired)
    alpha = (1.0 - decision.confidence) / 2.0
    low, high = np.quantile(draws, [alpha, 1.0 - alpha])
    return SuiteResult(mean, geomean, float(low), float(high), len(pairs), decision.method, "hierarchical_bootstrap")
