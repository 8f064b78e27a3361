"""Statistics of a performance comparison: bootstrap CIs, rank tests, verdicts, suite score.

Pure (numpy + scipy.stats), no file access, no clock. Every random draw comes from
``numpy.random.default_rng`` seeded with the frozen ``decision.rng_seed`` in a fixed order, so the
same samples and decision always give bit-identical results. The rules and their formulas are owned
by ``docs/statistics.md`` (one page, the test behind each rule); the short form:

- band: ``[1/(1+δ), 1+δ]`` with δ = the frozen ``decision.noise_band`` (data never widen it; the
  calibration step may raise it at freeze, before any candidate). :func:`band` is its only home.
- CI: percentile bootstrap of log speed-up; two-level when the samples carry process groups
  (resample processes, then repeats within each drawn process); paired rounds draw one index per
  pair (per process) for both arms. Target cases use a Bonferroni-widened level when
  ``decision.multiplicity == "bonferroni"`` (level ``1 - (1-c)/k`` over k target cases).
- verdict from the CI only; ``relative_band`` (no CI) may call a direction only when the point is
  outside the band *and* the rank test rejects at the same level; inside the band it is
  ``inconclusive`` (a point cannot prove equivalence).
- drift (``aa_noise``): the bootstrap CI of first half / second half of the baseline (halves of the
  processes when there are at least two per half); its bound nearest to 1 when the CI excludes 1.
  Drift marks the comparison ``stable: false``; it never moves the band.
- rank test (reported, never decisive alone): ``scipy.stats.mannwhitneyu`` on independent rounds,
  ``scipy.stats.wilcoxon`` on the log differences of paired rounds.

Why numpy and not ``scipy.stats.bootstrap`` for the resampling: the hierarchical draw (processes
then repeats), the draw shared by two arms of a pair and by several versions in a selection, and the
fixed draw order that keeps results bit-identical are not expressible through its interface.
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
REASONS = {"faster": "ci_above_band", "slower": "ci_below_band", "equivalent": "ci_inside_band",
           "inconclusive": "ci_straddles_band"}
SIZED = ("faster", "slower", "equivalent")      # verdicts that claim the effect's size
UNCALIBRATED = "independent_not_calibrated"     # reason code: an independent comparison without calibration


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
    ci_level: float | None = None
    rank_test: str | None = None
    stable: bool | None = None
    n_processes: int | None = None
    ci_method: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SuiteResult:
    """Suite score over the target cases: both means, the frozen one's name, bootstrap CIs."""

    mean_case_speedup: float | None
    geomean_speedup: float | None
    ci_low: float | None
    ci_high: float | None
    n_cases: int
    method: str
    reason_code: str
    metric: str = protocol.AGGREGATE_METRIC
    geomean_ci: tuple[float, float] | None = None
    mean_ci: tuple[float, float] | None = None

    @property
    def score(self) -> float | None:
        return self.geomean_speedup if self.metric == "geomean_speedup" else self.mean_case_speedup

    def as_dict(self) -> dict:
        return asdict(self)


def band(delta: float) -> tuple[float, float]:
    """The one band definition: ratios in ``[1/(1+δ), 1+δ]`` are within noise."""
    return 1.0 / (1.0 + delta), 1.0 + delta


def family_level(confidence: float, family_size: int) -> float:
    """Bonferroni: the per-case CI level that keeps the family-wise error at ``1 - confidence``."""
    return 1.0 - (1.0 - confidence) / max(1, family_size)


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


def interval(log_draws: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile CI at ``level`` of bootstrap draws of a log speed-up, as speed-ups."""
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(log_draws, [alpha, 1.0 - alpha], axis=-1)
    return float(np.exp(low)), float(np.exp(high))


def _grouped(values: np.ndarray, groups: Sequence[int] | None, ordered: bool = False) -> np.ndarray:
    """Samples as a (processes, repeats) matrix, each row sorted (canonical order) unless already
    ``ordered`` (paired samples come in their arm-symmetric order); one row if no groups."""
    canon = (lambda v: v) if ordered else np.sort
    if groups is None or len(set(groups)) < 2:
        return canon(values)[None, :]
    labels = np.asarray(groups)
    rows = [canon(values[labels == g]) for g in sorted(set(labels.tolist()))]
    if len({r.size for r in rows}) != 1:
        raise ValueError("process groups must hold the same number of repeats")
    return np.stack(rows)


def ci_method(groups_b: Sequence[int] | None, groups_c: Sequence[int] | None) -> str:
    """``two_level_bootstrap`` when an arm's samples come from ≥ 2 processes, else ``bootstrap``."""
    many = any(g is not None and len(set(g)) > 1 for g in (groups_b, groups_c))
    return "two_level_bootstrap" if many else "bootstrap"


def _draw(matrix: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Two-level bootstrap indices → (resamples, processes*repeats) resampled values."""
    g, n = matrix.shape
    rows = rng.integers(0, g, size=(resamples, g)) if g > 1 else np.zeros((resamples, 1), dtype=int)
    cols = rng.integers(0, n, size=(resamples, g, n))
    return matrix[rows[:, :, None], cols].reshape(resamples, g * n)


def log_speedup_draws(baseline: np.ndarray, candidate: np.ndarray, aggregation: str, resamples: int,
                      rng: np.random.Generator, paired: bool = False, groups_b: Sequence[int] | None = None,
                      groups_c: Sequence[int] | None = None) -> np.ndarray:
    """``resamples`` bootstrap draws of log(aggregate(baseline) / aggregate(candidate))."""
    if paired:
        if baseline.size != candidate.size:
            raise ValueError("paired samples need arms of equal length")
        # a pair is one complex number; canonical order symmetric in the arms: repeat order never
        # moves the CI, and swapping the arms inverts it exactly
        lo, hi = np.minimum(baseline, candidate), np.maximum(baseline, candidate)
        labels = np.zeros(baseline.size, dtype=int) if groups_b is None else np.asarray(groups_b)
        order = np.lexsort((baseline, hi, lo, labels))
        pairs = _grouped((baseline + 1j * candidate)[order], None if groups_b is None else labels[order].tolist(),
                         ordered=True)
        drawn = _draw(pairs, resamples, rng)
        b_draw, c_draw = drawn.real, drawn.imag
    else:
        b_draw = _draw(_grouped(baseline, groups_b), resamples, rng)
        c_draw = _draw(_grouped(candidate, groups_c), resamples, rng)
    return np.log(aggregate_rows(b_draw, aggregation)) - np.log(aggregate_rows(c_draw, aggregation))


def halves(values: np.ndarray, groups: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray, list | None, list | None]:
    """First and second half in recorded order: whole processes when there are ≥ 4, else repeats."""
    if groups is not None and len(set(groups)) >= 4:
        ids = list(dict.fromkeys(groups))
        half = len(ids) // 2
        first, second = set(ids[:half]), set(ids[half:2 * half])
        pick = lambda keep: [i for i, g in enumerate(groups) if g in keep]  # noqa: E731
        a, b = pick(first), pick(second)
        return values[a], values[b], [groups[i] for i in a], [groups[i] for i in b]
    half = values.size // 2
    return values[:half], values[half:2 * half], None, None


def aa_noise(baseline: Sequence[float] | np.ndarray, decision: Decision, aggregation: str,
             groups: Sequence[int] | None = None) -> float | None:
    """The drift the baseline proves between its halves (bound nearest to 1); None if n is too small."""
    values = _as_array(baseline)
    first, second, g1, g2 = halves(values, None if groups is None else list(groups))
    if min(first.size, second.size) < decision.min_repeats or sample_problem(values, 2 * decision.min_repeats):
        return None
    rng = np.random.default_rng([decision.rng_seed, 1])
    draws = log_speedup_draws(first, second, aggregation, decision.resamples, rng, groups_b=g1, groups_c=g2)
    low, high = interval(draws, decision.confidence)
    if low > 1.0:
        return low - 1.0
    if high < 1.0:
        return 1.0 / high - 1.0
    return 0.0


def verdict_from_ci(ci_low: float, ci_high: float, delta: float) -> str:
    """The verdict table on a speed-up CI and the band (docs/statistics.md)."""
    lower, upper = band(delta)
    if ci_low > upper:
        return "faster"
    if ci_high < lower:
        return "slower"
    if ci_low >= lower and ci_high <= upper:
        return "equivalent"
    return "inconclusive"


def verdict_from_point(point: float, delta: float, p_value: float | None, level: float) -> tuple[str, str]:
    """``relative_band``: a direction needs the point outside the band and the rank test at ``level``."""
    lower, upper = band(delta)
    if lower <= point <= upper:
        return "inconclusive", "point_inside_band"
    if p_value is None or p_value >= 1.0 - level:
        return "inconclusive", "rank_test_not_significant"
    return ("faster", "point_above_band") if point > upper else ("slower", "point_below_band")


def case_verdict(delta: float, level: float, *, log_draws: np.ndarray | None = None, point: float | None = None,
                 p_value: float | None = None, directional: bool = True) -> tuple[str, str, float | None, float | None]:
    """(verdict, reason code, CI low, CI high) of one case: the one owner of ``faster``/``slower``/
    ``equivalent`` for the formal and quick compare, acceptance (which reads these verdicts) and selection.
    With bootstrap ``log_draws``: the verdict table on their CI at ``level``; without (``relative_band``):
    :func:`verdict_from_point`. ``directional`` False (an independent comparison without calibration,
    ``calibration.directional``): no verdict claims a size, ``inconclusive`` / :data:`UNCALIBRATED`."""
    low = high = None
    if log_draws is not None:
        low, high = interval(log_draws, level)
        verdict = verdict_from_ci(low, high, delta)
        reason = REASONS[verdict]
    else:
        verdict, reason = verdict_from_point(point, delta, p_value, level)
    if not directional and verdict in SIZED:
        verdict, reason = "inconclusive", UNCALIBRATED
    return verdict, reason, low, high


def mann_whitney(baseline: Sequence[float] | np.ndarray,
                 candidate: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney p (``scipy.stats.mannwhitneyu``) and U_b/(n_b·n_c).

    U_b = #{(b, c): c < b} + ½ #{c = b}; exact null without ties and both n ≤ ``EXACT_MAX_N``,
    else the normal approximation with tie and continuity correction.
    """
    b, c = _as_array(baseline), _as_array(candidate)
    if np.all(b == b[0]) and np.all(c == b[0]):
        return 1.0, 0.5
    exact = np.unique(np.concatenate([b, c])).size == b.size + c.size and max(b.size, c.size) <= EXACT_MAX_N
    from scipy import stats as sps  # ~1 s to import: only a compare that runs a rank test pays it
    res = sps.mannwhitneyu(b, c, alternative="two-sided", method="exact" if exact else "asymptotic")
    return float(min(1.0, res.pvalue)), float(res.statistic) / (b.size * c.size)


def wilcoxon_log(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p on log(b) − log(c) of paired rounds (``scipy.stats.wilcoxon``)."""
    diff = np.log(_as_array(baseline)) - np.log(_as_array(candidate))
    if np.all(diff == 0):
        return 1.0
    from scipy import stats as sps
    return float(sps.wilcoxon(diff, zero_method="wilcox", alternative="two-sided").pvalue)


def _floor(decision: Decision) -> int:
    if decision.method == "relative_band":
        return min(decision.min_repeats, protocol.RELATIVE_BAND_MIN_REPEATS)
    return decision.min_repeats


def insufficient(b: np.ndarray, c: np.ndarray, decision: Decision, paired: bool) -> str | None:
    floor = _floor(decision)
    for arm, values in (("baseline", b), ("candidate", c)):
        problem = sample_problem(values, floor)
        if problem:
            return f"{arm}_{problem}"
    return "paired_length_mismatch" if paired and b.size != c.size else None


def compare_samples(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray,
                    decision: Decision, paired: bool = False, aa_noise_value: float | None = None,
                    aggregation: str = protocol.DEFAULT_AGGREGATION, family_size: int = 1,
                    groups_b: Sequence[int] | None = None, groups_c: Sequence[int] | None = None,
                    directional: bool = True) -> SpeedupResult:
    """Speed-up of ``candidate`` over ``baseline`` with its CI and verdict (docs/statistics.md).

    ``family_size`` = number of target cases decided together (Bonferroni when the frozen
    ``multiplicity`` asks for it); ``groups_*`` = process index of every sample (two-level CI).
    ``aa_noise_value`` replaces the drift measured on ``baseline`` (reported, never widens δ).
    ``directional``: whether the comparison may claim a size (:func:`case_verdict`).
    """
    b, c = _as_array(baseline), _as_array(candidate)
    delta = decision.noise_band
    problem = insufficient(b, c, decision, paired)
    if problem is not None:
        point = None
        if b.ndim == c.ndim == 1 and not sample_problem(b, 1) and not sample_problem(c, 1):
            point = aggregate(b, aggregation) / aggregate(c, aggregation)
            point = point if math.isfinite(point) and point > 0 else None  # an underflow is missing, never 0
        return SpeedupResult(point, None, None, "insufficient", problem, delta, None, None, int(b.size),
                             int(c.size), decision.method, None, paired)
    level = family_level(decision.confidence, family_size if decision.multiplicity == "bonferroni" else 1)
    point = aggregate(b, aggregation) / aggregate(c, aggregation)
    noise = aa_noise_value
    if noise is None and not paired:  # pairing cancels the drift that the halves would measure
        noise = aa_noise(b, decision, aggregation, groups_b)
    if paired:
        p_value, test = wilcoxon_log(b, c), "wilcoxon_signed_rank_log"
        superiority = float(np.mean(np.sign(np.log(b) - np.log(c)) * 0.5 + 0.5))
    else:
        (p_value, superiority), test = mann_whitney(b, c), "mann_whitney_u"
    processes = len(set(groups_c)) if groups_c is not None else None
    method = None if decision.method == "relative_band" else ci_method(groups_b, groups_c)
    common = dict(ci_method=method, point=point, delta=delta, mann_whitney_p=p_value, prob_candidate_faster=superiority,
                  n_baseline=int(b.size), n_candidate=int(c.size), method=decision.method, aa_noise=noise,
                  paired=paired, rank_test=test, stable=None if noise is None else noise == 0.0,
                  n_processes=processes)
    draws = None
    if decision.method != "relative_band":
        rng = np.random.default_rng(decision.rng_seed)
        draws = log_speedup_draws(b, c, aggregation, decision.resamples, rng, paired, groups_b, groups_c)
    verdict, reason, low, high = case_verdict(delta, level, log_draws=draws, point=point, p_value=p_value,
                                              directional=directional)
    return SpeedupResult(ci_low=low, ci_high=high, verdict=verdict, reason_code=reason, ci_level=level, **common)


Arms = tuple  # (baseline, candidate[, groups_b, groups_c])


def suite_log_draws(pairs: Sequence[Arms], aggregation: str, resamples: int, rng: np.random.Generator,
                    paired: bool = False) -> np.ndarray:
    """(resamples, cases) bootstrap draws of every case's log speed-up; cases fixed, one stream."""
    out = np.empty((resamples, len(pairs)))
    for k, arms in enumerate(pairs):
        b, c, gb, gc = (tuple(arms) + (None, None))[:4]
        out[:, k] = log_speedup_draws(_as_array(b), _as_array(c), aggregation, resamples, rng, paired, gb, gc)
    return out


def suite_means(log_draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(arithmetic mean, geometric mean) of the case speed-ups along the last axis."""
    return np.exp(log_draws).mean(axis=-1), np.exp(log_draws.mean(axis=-1))


def suite_score(per_case: Mapping[str, Arms], target_ids: Sequence[str], decision: Decision,
                paired: bool = False, aggregation: str = protocol.DEFAULT_AGGREGATION,
                metric: str = protocol.AGGREGATE_METRIC) -> SuiteResult:
    """Arithmetic and geometric mean of per-case speed-ups over ``target_ids`` with bootstrap CIs.

    ``metric`` (frozen ``aggregate_metric``) names the decisive one; ``ci_low``/``ci_high`` are its
    CI. A target case without usable samples makes the suite not computable (None, never zero).
    """
    if not target_ids:
        raise ValueError("suite score needs at least one target case")
    pairs = []
    for case_id in target_ids:
        if case_id not in per_case:
            return SuiteResult(None, None, None, None, len(target_ids), decision.method, "case_missing", metric)
        arms = tuple(per_case[case_id])
        problem = insufficient(_as_array(arms[0]), _as_array(arms[1]), decision, paired)
        if problem is not None:
            return SuiteResult(None, None, None, None, len(target_ids), decision.method, f"case_{problem}", metric)
        pairs.append(arms)
    speedups = np.array([aggregate(a[0], aggregation) / aggregate(a[1], aggregation) for a in pairs])
    mean, geomean = float(speedups.mean()), float(np.exp(np.log(speedups).mean()))
    if decision.method == "relative_band":
        return SuiteResult(mean, geomean, None, None, len(pairs), decision.method, "point_only", metric)
    rng = np.random.default_rng([decision.rng_seed, 2])
    arith, geo = suite_means(suite_log_draws(pairs, aggregation, decision.resamples, rng, paired))
    alpha = (1.0 - decision.confidence) / 2.0
    mean_ci = tuple(float(x) for x in np.quantile(arith, [alpha, 1.0 - alpha]))
    geo_ci = tuple(float(x) for x in np.quantile(geo, [alpha, 1.0 - alpha]))
    low, high = geo_ci if metric == "geomean_speedup" else mean_ci
    grouped = any(len(tuple(a)) > 2 and a[2] is not None for a in pairs)
    return SuiteResult(mean, geomean, low, high, len(pairs), decision.method,
                       "two_level_bootstrap" if grouped else "case_bootstrap", metric, geo_ci, mean_ci)
