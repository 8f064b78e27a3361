"""Decision-quality simulation: timing samples with a known truth, judged by three rules.

Samples (per arm, n repeats): ``base_us * lognormal(0, noise)``; with probability
``OUTLIER_P`` a sample is hit by an interruption and multiplied by U(1.2, 1.6) (right-skewed,
like a context switch or a clock dip). The candidate's base time is ``base_us / (1 + effect)``,
so ``effect`` is the true speed-up minus 1. Both arms come from one seeded generator per setting;
all three rules judge exactly the same pairs.

Between-process variance (#23): with ``process_noise > 0`` each arm's repeats are spread over
``processes`` processes and every process multiplies its repeats by its own
``lognormal(0, process_noise)`` draw (process state: memory placement, core, page luck), drawn once
per process; ``ours`` then gets the process index of every sample (two-level bootstrap), the other
rules see the flat samples as they would.

Rules, each returning ``faster``, ``slower`` or ``same``:
- ``ours``: :func:`perftune.decide.stats.compare_samples` with the frozen default decision
  (``manifest.make_protocol`` defaults: bootstrap, 95 %, band 1 %, 10,000 resamples, seed 42,
  min_repeats 5) and the default aggregation (median); ``insufficient``, ``equivalent`` and
  ``inconclusive`` count as ``same`` (no speed-up claimed).
- ``pyperf``: pyperf's own ``compare_to`` decision (``pyperf._compare.CompareResult`` on two
  ``pyperf.Benchmark`` objects: Student t-test, 95 %, ``--min-speed`` unset); significant and the
  changed mean lower = ``faster``.
- ``upstream``: trimmed mean of the repeats (drop one min and one max when n >= 3), ratio
  baseline/candidate against a fixed 1 % band: > 1.01 ``faster``, < 1/1.01 ``slower``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perftune.contract import protocol
from perftune.decide import stats
from perftune.contract.manifest import make_protocol

OUTLIER_P = 0.03
OUTLIER_RANGE = (1.2, 1.6)
BASE_US = 100.0
UPSTREAM_BAND = 0.01
DECISION = make_protocol(backend="cpu", device_id=0, warmup=1, repeats=10, op_name="k").decision
AGGREGATION = protocol.DEFAULT_AGGREGATION


@dataclass(frozen=True)
class Setting:
    repeats: int
    noise: float
    effect: float
    process_noise: float = 0.0
    processes: int = 1


def samples(setting: Setting, sims: int, seed: int = protocol.SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(baseline, candidate)`` arrays of shape (sims, repeats), in microseconds."""
    key = [seed, setting.repeats, round(setting.noise * 1e4), round(setting.effect * 1e4)]
    if setting.process_noise:
        key += [round(setting.process_noise * 1e4), setting.processes]
    rng = np.random.default_rng(key)

    def arm(centre: float) -> np.ndarray:
        values = centre * rng.lognormal(0.0, setting.noise, (sims, setting.repeats))
        if setting.process_noise:
            per = rng.lognormal(0.0, setting.process_noise, (sims, setting.processes))
            values = values * np.repeat(per, setting.repeats // setting.processes, axis=1)
        hit = rng.random((sims, setting.repeats)) < OUTLIER_P
        return np.where(hit, values * rng.uniform(*OUTLIER_RANGE, (sims, setting.repeats)), values)

    baseline = arm(BASE_US)
    return baseline, arm(BASE_US / (1.0 + setting.effect))


def ours(baseline: np.ndarray, candidate: np.ndarray, processes: int = 1) -> str:
    groups = np.repeat(np.arange(processes), baseline.size // processes).tolist() if processes > 1 else None
    verdict = stats.compare_samples(baseline, candidate, DECISION, aggregation=AGGREGATION,
                                    groups_b=groups, groups_c=groups).verdict
    return verdict if verdict in ("faster", "slower") else "same"


def _bench(values: np.ndarray):
    import pyperf
    run = pyperf.Run([float(v) * 1e-6 for v in values], metadata={"name": "case", "unit": "second"},
                     collect_metadata=False)
    return pyperf.Benchmark([run])


def pyperf_rule(baseline: np.ndarray, candidate: np.ndarray) -> str:
    from pyperf._compare import CompareData, CompareResult
    result = CompareResult(CompareData("ref", _bench(baseline)), CompareData("changed", _bench(candidate)))
    if not result.significant:
        return "same"
    return "faster" if result.norm_mean < 1.0 else "slower"


def upstream(baseline: np.ndarray, candidate: np.ndarray) -> str:
    ratio = stats.aggregate(baseline, "trimmed_mean") / stats.aggregate(candidate, "trimmed_mean")
    if ratio > 1.0 + UPSTREAM_BAND:
        return "faster"
    if ratio < 1.0 / (1.0 + UPSTREAM_BAND):
        return "slower"
    return "same"


RULES = {"ours": ours, "pyperf": pyperf_rule, "upstream": upstream}


def rates(setting: Setting, sims: int) -> dict:
    """Share of ``faster`` / ``slower`` calls of every rule on the same ``sims`` sample pairs."""
    baseline, candidate = samples(setting, sims)
    out = {}
    for name, rule in RULES.items():
        extra = (setting.processes,) if name == "ours" else ()
        calls = [rule(b, c, *extra) for b, c in zip(baseline, candidate)]
        out[name] = {"faster": calls.count("faster") / sims, "slower": calls.count("slower") / sims}
        out[name]["any"] = out[name]["faster"] + out[name]["slower"]
    return {"repeats": setting.repeats, "noise": setting.noise, "effect": setting.effect, "sims": sims,
            "process_noise": setting.process_noise, "processes": setting.processes, "rates": out}


# --- the confirm rule (select_best.py confirm, #27 item 1) -----------------------------------------

CONFIRM_CASES = ("a", "b")


def _confirm_manifest(delta: float, repeats: int, resamples: int):
    from perftune.contract import manifest
    proto = make_protocol(backend="cpu", device_id=0, warmup=1, repeats=repeats, op_name="k",
                          decision={"noise_band": delta, "resamples": resamples})
    cases = tuple(manifest.Case(c, "[1]", "float32") for c in CONFIRM_CASES)
    return manifest.Manifest(2, cases, CONFIRM_CASES, "user_selected", proto)


def _paired_round(rng, effect: float, noise: float, repeats: int) -> dict:
    """One paired round: per case (partner arm, chosen arm), the chosen code truly ``1 + effect`` faster;
    a round-wide load factor multiplies both arms alike (drift, cancelled inside each pair)."""
    load = rng.lognormal(0.0, 0.10)
    return {c: ((BASE_US * load * rng.lognormal(0.0, noise, repeats)).tolist(),
                (BASE_US * load / (1.0 + effect) * rng.lognormal(0.0, noise, repeats)).tolist())
            for c in CONFIRM_CASES}


def confirm_end(ranking_effect: float, confirm_effect: float, noise: float, repeats: int, delta: float,
                sims: int, max_remeasurements: int = 1, resamples: int = 2000, seed: int = protocol.SEED) -> dict:
    """Share of each end verdict of the confirm rule (``selection.confirm_paired`` per attempt, the stated end
    of ``candidates`` after at most ``1 + max_remeasurements`` attempts): the chosen version was ranked on a
    paired round whose truth is ``ranking_effect``; every confirm round's truth is ``confirm_effect``
    (equal: the ranking holds, ``consistent`` is right; different: a ``consistent`` is false)."""
    from perftune.decide import candidates, selection
    man = _confirm_manifest(delta, repeats, resamples)
    rng = np.random.default_rng([seed, 5, round(ranking_effect * 1e4), round(confirm_effect * 1e4),
                                 round(noise * 1e4), repeats, round(delta * 1e4)])
    ends: dict[str, int] = {}
    attempts = 0
    limit = 1 + max_remeasurements
    for _ in range(sims):
        ranking = _paired_round(rng, ranking_effect, noise, repeats)
        for number in range(1, limit + 1):
            attempts += 1
            result = selection.confirm_paired(ranking, _paired_round(rng, confirm_effect, noise, repeats), man)
            verdict = candidates._verdict({**result, "partner": "v000"}, number, limit)["verdict"]
            if verdict != "remeasure":
                break
        ends[verdict] = ends.get(verdict, 0) + 1
    return {"ranking_effect": ranking_effect, "confirm_effect": confirm_effect, "noise": noise, "repeats": repeats,
            "delta": delta, "sims": sims, "max_remeasurements": max_remeasurements,
            "mean_attempts": attempts / sims, "ends": {k: v / sims for k, v in sorted(ends.items())},
            "consistent": ends.get("consistent", 0) / sims}
