"""Best-version selection (DESIGN §4.6, §7): suite scores, the gate, the anchor, the tie set, the choice.

Pure: the caller (:mod:`perftune.decide.candidates`) loads the rounds and checks the evidence on disk;
this module only decides. Rules, frozen in the manifest before any result (docs/statistics.md,
"Selection"):

- score of a version = the frozen ``aggregate_metric`` (default the article's equal-weight
  arithmetic mean, ``geomean_speedup`` as the frozen option; both reported) over
  ``optimization_target`` of aggregate(frozen baseline samples) / aggregate(version samples). The
  frozen baseline is the round of the version with ``evaluation_order`` 0; every version is scored
  against the same samples (one protocol: independent samples of each version's round).
- eligibility = the final compare gate: a version with any target case ``slower`` than the
  baseline (same verdict rule and multiplicity correction as ``compare_perf.py formal``) is
  ineligible (``would_fail_gate``) and can never be chosen.
- δ = the frozen ``decision.noise_band``; data never widen it. Baseline drift is reported
  (``rule.baseline_drift``) and marks the selection ``stable: false``.
- anchor = the eligible version with the raw top score (exact ties: smaller evaluation_order).
- tie set (non-inferiority): a version is tied when the lower bound of the bootstrap CI of
  score/anchor-score is ≥ 1/(1+δ). The ratio is bootstrapped jointly: one resample of the baseline
  per draw shared by both scores, each version's samples resampled from its own seeded stream
  (``[rng_seed, 3, evaluation_order, case index]``), so adding a candidate never changes another's
  numbers. Method ``relative_band``: the point ratio is ≥ 1/(1+δ).
- chosen = the smallest evaluation_order in the tie set.
- confirm (equivalence): a new round of the chosen version that repeats its ranking comparison (a
  paired ranking round: paired with the same partner code, and scores are partner/chosen inside each
  round, so drift and the partner's effect on the machine cancel; an independent one: independent,
  scored against the baseline round) is ``consistent`` when the CI of final/ranking score lies
  inside the band, ``inconsistent`` when it lies entirely outside, else ``unresolved`` (disclosed;
  re-measure only within the frozen limit); ``refuted`` when the round proves the chosen version
  slower than the reference it was chosen over (the verifier fails only this).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import stats
from ..contract.manifest import Manifest


@dataclass(frozen=True)
class Entry:
    """One version as the selection sees it; ``problem`` set by the I/O edge makes it ineligible."""

    version_id: str
    evaluation_order: int
    problem: str | None = None


def rule_of(manifest: Manifest) -> dict:
    proto = manifest.protocol
    return {"aggregate_metric": proto.aggregate_metric, "aggregation": proto.aggregation,
            "decision": dict(proto.decision.__dict__), "tie_break": proto.tie_break,
            "target_case_ids": list(manifest.target_case_ids)}


def delta_of(manifest: Manifest) -> float:
    """The frozen band δ (never widened by data)."""
    return manifest.protocol.decision.noise_band


Groups = Mapping[str, Mapping[str, Sequence[int] | None]]  # version → case → process index per sample


def _groups(groups: Groups | None, version: str, case: str) -> Sequence[int] | None:
    return None if groups is None else (groups.get(version) or {}).get(case)


def drift_of(baseline: Mapping[str, Sequence[float]], manifest: Manifest,
             groups: Mapping[str, Sequence[int] | None] | None = None) -> dict[str, float | None]:
    """Per target case: the drift the baseline proves between its halves (reported, never decisive)."""
    proto = manifest.protocol
    return {c: stats.aa_noise(baseline[c], proto.decision, proto.aggregation, (groups or {}).get(c))
            for c in manifest.target_case_ids if c in baseline}


def _log_draws(baseline: Mapping[str, np.ndarray], versions: Mapping[int, Mapping[str, np.ndarray]],
               manifest: Manifest, base_groups: Mapping[str, Sequence[int] | None] | None = None,
               version_groups: Mapping[int, Mapping[str, Sequence[int] | None]] | None = None) -> dict[int, np.ndarray]:
    """Joint bootstrap draws (resamples, cases) of every version's log case speed-ups (shared baseline);
    two-level for samples from several processes (``stats.resample``)."""
    proto = manifest.protocol
    seed, count = proto.decision.rng_seed, proto.decision.resamples
    out = {order: np.empty((count, len(manifest.target_case_ids))) for order in versions}
    for k, case in enumerate(manifest.target_case_ids):
        rng = np.random.default_rng([seed, 3, 0, k, 1])
        drawn = stats.resample(baseline[case], (base_groups or {}).get(case), count, rng)
        b_agg = np.log(stats.aggregate_rows(drawn, proto.aggregation))
        for order, samples in versions.items():
            rng = np.random.default_rng([seed, 3, order, k, 2])
            drawn = stats.resample(samples[case], ((version_groups or {}).get(order) or {}).get(case), count, rng)
            out[order][:, k] = b_agg - np.log(stats.aggregate_rows(drawn, proto.aggregation))
    return out


def _score_draws(log_draws: np.ndarray, metric: str) -> np.ndarray:
    arith, geo = stats.suite_means(log_draws)
    return geo if metric == "geomean_speedup" else arith


def _tied(ratio: float, ci: Sequence[float] | None, delta: float) -> bool:
    """Non-inferiority to the anchor: the lower CI bound (or, without a CI, the point) ≥ 1/(1+δ)."""
    return (ratio if ci is None else ci[0]) >= stats.band(delta)[0]


def _gate(baseline: Mapping[str, Sequence[float]], samples: Mapping[str, Sequence[float]],
          manifest: Manifest, groups: Groups | None = None, version: str = "", base: str = "") -> list[str]:
    """Target cases the final compare gate would call ``slower`` against the baseline."""
    proto, targets = manifest.protocol, manifest.target_case_ids
    return [c for c in targets if stats.compare_samples(
        baseline[c], samples[c], proto.decision, aggregation=proto.aggregation, family_size=len(targets),
        groups_b=_groups(groups, base, c), groups_c=_groups(groups, version, c)).verdict == "slower"]


def _scores(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
            baseline: Mapping[str, Sequence[float]], manifest: Manifest, gate: bool = True,
            groups: Groups | None = None, base: str = "") -> dict[str, dict]:
    proto = manifest.protocol
    out = {}
    for entry in entries:
        samples, v = rounds.get(entry.version_id), entry.version_id
        suite = None if samples is None else stats.suite_score(
            {c: (baseline[c], samples[c], _groups(groups, base, c), _groups(groups, v, c))
             for c in manifest.target_case_ids if c in samples and c in baseline},
            manifest.target_case_ids, proto.decision, aggregation=proto.aggregation, metric=proto.aggregate_metric)
        problem = entry.problem or (None if suite and suite.score is not None
                                    else f"score_not_computable:{suite.reason_code if suite else 'no_round'}")
        if problem is None and gate and entry.evaluation_order > 0:
            slower = _gate(baseline, samples, manifest, groups, v, base)
            problem = f"would_fail_gate: slower target cases {slower}" if slower else None
        out[entry.version_id] = {
            "version_id": entry.version_id, "evaluation_order": entry.evaluation_order,
            "score": suite.score if suite else None,
            "mean": suite.mean_case_speedup if suite else None,
            "geomean": suite.geomean_speedup if suite else None,
            "ci": [suite.ci_low, suite.ci_high] if suite and suite.ci_low is not None else None,
            "eligible": problem is None, "ineligible_reason": problem, "rank": None,
            "in_tie_set": False, "ratio_to_anchor": None, "ratio_ci": None}
    return out


def select(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
           manifest: Manifest, groups: Groups | None = None) -> dict:
    """The ``selection.json`` content (without input file records) for ``entries`` (pure);
    ``groups``: the process index of every sample, per version and case (None: one process)."""
    ordered = sorted(entries, key=lambda e: e.evaluation_order)
    base_entry = ordered[0] if ordered and ordered[0].evaluation_order == 0 else None
    if base_entry is None or base_entry.version_id not in rounds:
        raise ValueError("selection needs the frozen baseline (evaluation_order 0) and its round")
    baseline, base = rounds[base_entry.version_id], base_entry.version_id
    rows = _scores(ordered, rounds, baseline, manifest, groups=groups, base=base)
    eligible = [rows[e.version_id] for e in ordered if rows[e.version_id]["eligible"]]
    delta = delta_of(manifest)
    drift = drift_of(baseline, manifest, (groups or {}).get(base))
    result = {"candidates": [rows[e.version_id] for e in ordered],
              "rule": {**rule_of(manifest), "delta": delta, "baseline_drift": drift,
                       "stable": all(not d for d in drift.values())},
              "anchor": None, "tie_set": [], "chosen": None}
    if not eligible:
        result["reason"] = "no eligible candidate: every version lacks evidence or has open KB gaps"
        return result
    for rank, row in enumerate(sorted(eligible, key=lambda r: (-r["score"], r["evaluation_order"])), 1):
        row["rank"] = rank
    anchor = min(eligible, key=lambda r: r["rank"])
    bootstrap = manifest.protocol.decision.method == "bootstrap"
    metric = manifest.protocol.aggregate_metric
    draws = {o: _score_draws(d, metric) for o, d in _log_draws(
        {c: np.asarray(baseline[c], float) for c in manifest.target_case_ids},
        {r["evaluation_order"]: {c: np.asarray(v, float) for c, v in rounds[r["version_id"]].items()}
         for r in eligible}, manifest, (groups or {}).get(base),
        {r["evaluation_order"]: (groups or {}).get(r["version_id"]) for r in eligible}).items()} if bootstrap else {}
    alpha = (1 - manifest.protocol.decision.confidence) / 2
    for row in eligible:
        row["ratio_to_anchor"] = row["score"] / anchor["score"]
        if bootstrap:
            ratio = draws[row["evaluation_order"]] / draws[anchor["evaluation_order"]]
            row["ratio_ci"] = [float(x) for x in np.quantile(ratio, [alpha, 1 - alpha])]
        row["in_tie_set"] = _tied(row["ratio_to_anchor"], row["ratio_ci"], delta)
    tie = sorted((r for r in eligible if r["in_tie_set"]), key=lambda r: r["evaluation_order"])
    chosen = tie[0]
    how = "lower CI bound of score/anchor ≥" if bootstrap else "point ratio score/anchor ≥"
    result.update(anchor=anchor["version_id"], tie_set=[r["version_id"] for r in tie], chosen=chosen["version_id"],
                  reason=(f"anchor {anchor['version_id']} has the raw top score {anchor['score']:.4f}; tie set "
                          f"{[r['version_id'] for r in tie]} ({how} 1/(1+{delta:.4f})); chose {chosen['version_id']}: "
                          f"the smallest evaluation_order ({chosen['evaluation_order']}) in the tie set"))
    return result


def _refuted(final: float, draws: np.ndarray | None, manifest: Manifest) -> tuple[bool, list[float] | None]:
    """(the confirm round proves the chosen version slower than its reference, that score's CI): the
    formal compare's ``slower`` rule (CI entirely below 1; relative_band: the point below 1/(1+δ))."""
    if draws is None:
        return final < stats.band(delta_of(manifest))[0], None
    alpha = (1 - manifest.protocol.decision.confidence) / 2
    ci = [float(x) for x in np.quantile(draws, [alpha, 1 - alpha])]
    return ci[1] < 1.0, ci


def _equivalence(ratio: float, ci: Sequence[float] | None, delta: float) -> dict:
    lower, upper = stats.band(delta)
    low, high = (ratio, ratio) if ci is None else ci
    status = ("consistent" if lower <= low and high <= upper
              else "inconsistent" if high < lower or low > upper else "unresolved")
    return {"ratio": ratio, "ratio_ci": None if ci is None else [float(x) for x in ci], "delta": delta,
            "band": [lower, upper], "status": status, "consistent": status == "consistent",
            "action": "none" if status == "consistent" else
            "re-measure the chosen version with the same protocol (formal round, then select_best.py record "
            "--supersedes <version>, choose, confirm) within protocol.max_remeasurements; never cherry-pick"}


def confirm(ranking_samples: Mapping[str, Sequence[float]], final_samples: Mapping[str, Sequence[float]],
            baseline: Mapping[str, Sequence[float]], manifest: Manifest, groups: Groups | None = None) -> dict:
    """Equivalence of an independent final round with an independent ranking round (pure).

    Both are scored against the shared baseline round. ``status``: ``consistent`` when the bootstrap
    CI of final/ranking score lies inside [1/(1+δ), 1+δ] (relative_band: the point ratio),
    ``inconsistent`` when it lies entirely outside, else ``unresolved``. ``refuted``: the final round
    proves the chosen version slower than the baseline (the decision it was chosen on does not hold).
    ``groups``: process indices keyed ``ranking``/``final``/``baseline`` → case (None: one process).
    """
    rounds = {"ranking": ranking_samples, "final": final_samples, "baseline": baseline}
    rows = _scores([Entry("baseline", 0), Entry("ranking", 1), Entry("final", 2)], rounds, baseline, manifest,
                   gate=False, groups=groups, base="baseline")
    if rows["ranking"]["score"] is None or rows["final"]["score"] is None:
        raise ValueError("ranking or final score is not computable")
    ratio = rows["final"]["score"] / rows["ranking"]["score"]
    ci = None
    if manifest.protocol.decision.method == "bootstrap":
        arrays = {o: {c: np.asarray(v[c], float) for c in manifest.target_case_ids}
                  for o, v in ((1, ranking_samples), (2, final_samples))}
        logs = _log_draws({c: np.asarray(baseline[c], float) for c in manifest.target_case_ids}, arrays, manifest,
                          (groups or {}).get("baseline"), {1: (groups or {}).get("ranking"), 2: (groups or {}).get("final")})
        metric = manifest.protocol.aggregate_metric
        alpha = (1 - manifest.protocol.decision.confidence) / 2
        final_draws = _score_draws(logs[2], metric)
        ci = np.quantile(final_draws / _score_draws(logs[1], metric), [alpha, 1 - alpha])
    refuted, final_ci = _refuted(rows["final"]["score"], None if ci is None else final_draws, manifest)
    return {"ranking_score": rows["ranking"]["score"], "final_score": rows["final"]["score"],
            "final_score_ci": final_ci, "refuted": refuted, **_equivalence(ratio, ci, delta_of(manifest))}


def _paired_score(arms: Mapping[str, tuple], manifest: Manifest, stream: int) -> tuple[float, np.ndarray | None]:
    """(score, bootstrap draws or None) of one paired round: partner arm over chosen arm per target case."""
    proto = manifest.protocol
    suite = stats.suite_score(arms, manifest.target_case_ids, proto.decision, paired=True,
                              aggregation=proto.aggregation, metric=proto.aggregate_metric)
    if suite.score is None:
        raise ValueError(f"paired score is not computable ({suite.reason_code})")
    if proto.decision.method != "bootstrap":
        return suite.score, None
    rng = np.random.default_rng([proto.decision.rng_seed, 4, stream])
    logs = stats.suite_log_draws([arms[c] for c in manifest.target_case_ids], proto.aggregation,
                                 proto.decision.resamples, rng, paired=True)
    return suite.score, _score_draws(logs, proto.aggregate_metric)


def confirm_paired(ranking_arms: Mapping[str, tuple] | None, final_arms: Mapping[str, tuple],
                   manifest: Manifest) -> dict:
    """Equivalence of a replicated paired comparison with the one the chosen version was ranked on (pure).

    Each arm map is ``{case: (partner samples, chosen samples)}`` of one paired round with the same
    partner code, so drift and the partner's effect on the machine cancel inside each round; the
    ratio compared is final score / ranking score. ``ranking_arms`` None: the chosen version is the
    partner itself (the baseline), its ranking score is 1 by definition and the final round is A/A.
    ``refuted``: the round proves the chosen version slower than its partner, i.e. the comparison that
    made it the best is reversed (a magnitude that differs, ``inconsistent``, is disclosed: a paired
    ratio moves with the machine's load, since two codes contend for it differently).
    """
    final, f_draws = _paired_score(final_arms, manifest, 2)
    ranking, r_draws = (1.0, None) if ranking_arms is None else _paired_score(ranking_arms, manifest, 1)
    ci = None
    if f_draws is not None:
        alpha = (1 - manifest.protocol.decision.confidence) / 2
        ci = np.quantile(f_draws / (1.0 if r_draws is None else r_draws), [alpha, 1 - alpha])
    refuted, final_ci = _refuted(final, f_draws, manifest)
    return {"ranking_score": ranking, "final_score": final, "final_score_ci": final_ci,
            "refuted": refuted and ranking_arms is not None, **_equivalence(final / ranking, ci, delta_of(manifest))}
