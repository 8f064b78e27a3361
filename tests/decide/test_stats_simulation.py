"""stats.py on simulations with a known truth (DESIGN §7; measured rates in docs/statistics.md).

Log-normal timing noise of 2 % (sigma of log time), 10 repeats per arm, the frozen default
decision (bootstrap, 95 %, 10,000 resamples, band 1 %, seed 42), 200 comparisons per scenario.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from perftune.decide import stats
from perftune.contract.manifest import Decision

DECISION = Decision("bootstrap", 0.95, 0.01, 10000, 42, 5)
N_SIM, REPEATS, NOISE = 200, 10, 0.02


def simulate(true_speedup: float, seed: int, aggregation: str = "median", paired: bool = False) -> Counter:
    rng = np.random.default_rng(seed)
    verdicts: Counter = Counter()
    for _ in range(N_SIM):
        baseline = 100.0 * rng.lognormal(0.0, NOISE, REPEATS)
        candidate = 100.0 / true_speedup * rng.lognormal(0.0, NOISE, REPEATS)
        verdicts[stats.compare_samples(baseline, candidate, DECISION, paired=paired,
                                       aggregation=aggregation).verdict] += 1
    return verdicts


@pytest.mark.parametrize("aggregation", ["median", "trimmed_mean"])
def test_aa_false_positive_rate_at_most_5_percent(aggregation):
    verdicts = simulate(1.0, seed=11, aggregation=aggregation)
    false_calls = verdicts["faster"] + verdicts["slower"]
    assert false_calls / N_SIM <= 0.05, verdicts
    assert verdicts["insufficient"] == 0


@pytest.mark.parametrize("aggregation", ["median", "trimmed_mean"])
def test_true_5_percent_speedup_is_found_at_least_90_percent(aggregation):
    verdicts = simulate(1.05, seed=12, aggregation=aggregation)
    assert verdicts["faster"] / N_SIM >= 0.90, verdicts
    assert verdicts["slower"] == 0


def test_true_5_percent_slowdown_is_called_slower():
    verdicts = simulate(1 / 1.05, seed=13)
    assert verdicts["slower"] / N_SIM >= 0.90, verdicts
    assert verdicts["faster"] == 0
