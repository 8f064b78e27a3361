"""Best-version selection (DESIGN §4.6, §7): suite scores, the gate, the anchor, the tie set, the choice.

Pure: the caller (:mod:`perftune.decide.candidates`) loads the rounds and checks the evidence on disk;
this module only decides. Rules, frozen in the manifest before any result (docs/statistics.md,
"Selection"):

- score of a version = the frozen ``aggregate_metric`` (default the article's equal-weight
  arithmetic mean, ``geomean_speedup`` as the frozen option; both reported) over
  ``optimization_target`` of its per-case speed-up over the frozen baseline (the round of
  ``evaluation_order`` 0), one protocol per number: ranked on an independent round, aggregate(baseline
  samples) / aggregate(version samples); ranked on a round paired with partner P, P's speed-up times
  aggregate(partner arm) / aggregate(own arm) of that round (a chain of paired links, drift-free).
- eligibility = the final compare gate: a version with any target case ``slower`` than the
  baseline (``stats.case_verdict``, the compare's own function: its multiplicity correction and its
  calibration rule, so an uncalibrated independent ranking claims no ``slower``) is ineligible
  (``would_fail_gate``) and can never be chosen.
- δ = the frozen ``decision.noise_band``; data never widen it. Baseline drift is reported
  (``rule.baseline_drift``) and marks the selection ``stable: false``.
- anchor = the eligible version with the raw top score (exact ties: smaller evaluation_order).
- tie set (non-inferiority): a version is tied when the lower bound of the bootstrap CI of
  score/anchor-score is ≥ 1/(1+δ). The ratio is bootstrapped jointly: one resample of the baseline
  per draw shared by every independent score, each link resampled from its own seeded stream
  (``[rng_seed, 3, evaluation_order, case index, 2 | 3]``) and added along the chain, so shared links
  share their noise and adding a candidate never changes another's numbers. Method
  ``relative_band``: the point ratio is ≥ 1/(1+δ).
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

from . import calibration, stats
from ..contract.manifest import Manifest


@dataclass(frozen=True)
class Entry:
    """One version as the selection sees it; ``problem`` set by the I/O edge makes it ineligible.

    ``partner``: the version its ranking round was paired with (None: an independent round); the
    paired arms ``{case: (partner samples, own samples)}`` then come in ``select``'s ``links``.
    """

    version_id: str
    evaluation_order: int
    problem: str | None = None
    partner: str | None = None


def rule_of(manifest: Manifest) -> dict:
    proto = manifest.protocol
    return {"aggregate_metric": proto.aggregate_metric, "aggregation": proto.aggregation,
            "decision": dict(proto.decision.__dict__), "tie_break": proto.tie_break,
            "target_case_ids": list(manifest.target_case_ids)}


def delta_of(manifest: Manifest) -> float:
    """The frozen band δ (never widened by data)."""
    return manifest.protocol.decision.noise_band


def drift_of(baseline: Mapping[str, Sequence[float]], manifest: Manifest) -> dict[str, float | None]:
    """Per target case: the drift the baseline proves between its halves (reported, never decisive)."""
    proto = manifest.protocol
    return {c: stats.aa_noise(baseline[c], proto.decision, proto.aggregation)
            for c in manifest.target_case_ids if c in baseline}


def _score_draws(log_draws: np.ndarray, metric: str) -> np.ndarray:
    arith, geo = stats.suite_means(log_draws)
    return geo if metric == "geomean_speedup" else arith


def _tied(ratio: float, ci: Sequence[float] | None, delta: float) -> bool:
    """Non-inferiority to the anchor: the lower CI bound (or, without a CI, the point) ≥ 1/(1+δ)."""
    return (ratio if ci is None else ci[0]) >= stats.band(delta)[0]


@dataclass
class _Chain:
    """One version's per-case log speed-ups over the baseline: point (K,), draws (resamples, K) or None."""

    point: np.ndarray | None
    draws: np.ndarray | None
    path: list[str]
    p_values: list[np.ndarray]   # per link, per case: the link's rank-test p (relative_band gate)
    problem: str | None = None
    paired: bool = True          # every link of the chain is a paired round (drift cancels in each)


def _usable(arms: Sequence, manifest: Manifest, paired: bool) -> str | None:
    problem = stats.insufficient(np.asarray(arms[0], float), np.asarray(arms[1], float),
                                  manifest.protocol.decision, paired)
    return None if problem is None else f"score_not_computable:case_{problem}"


def _link(arms: Mapping[str, Sequence], manifest: Manifest, order: int, paired: bool,
          base_draws: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(point, draws, p) of log(aggregate(reference)/aggregate(version)) per target case of one round.

    Independent: the reference is the baseline round, resampled once per draw (``base_draws``, shared
    by every version); paired: the round's own partner arm, resampled jointly with the version's arm.
    """
    proto = manifest.protocol
    seed, count, agg = proto.decision.rng_seed, proto.decision.resamples, proto.aggregation
    boot = proto.decision.method == "bootstrap"
    k_cases = len(manifest.target_case_ids)
    point, p_val = np.empty(k_cases), np.empty(k_cases)
    draws = np.empty((count, k_cases)) if boot else None
    for k, case in enumerate(manifest.target_case_ids):
        ref, own = (np.asarray(x, float) for x in arms[case][:2])
        point[k] = np.log(stats.aggregate(ref, agg) / stats.aggregate(own, agg))
        p_val[k] = stats.wilcoxon_log(ref, own) if paired else stats.mann_whitney(ref, own)[0]
        if not boot:
            continue
        if paired:
            rng = np.random.default_rng([seed, 3, order, k, 3])
            draws[:, k] = stats.log_speedup_draws(ref, own, agg, count, rng, paired=True)
        else:
            rng = np.random.default_rng([seed, 3, order, k, 2])
            draws[:, k] = base_draws[:, k] - np.log(stats.aggregate_rows(
                own[rng.integers(0, own.size, size=(count, own.size))], agg))
    return point, draws, p_val


def _chains(ordered: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
            links: Mapping[str, Mapping[str, Sequence]], manifest: Manifest) -> dict[str, _Chain]:
    """Every version's chain of one-protocol comparisons back to the baseline.

    A version ranked on an independent round: its samples against the baseline round's. A version
    ranked on a round paired with partner P: P's chain plus the paired comparison inside that round,
    so independent and paired samples never meet in one number and drift cancels in every link.
    """
    proto, targets = manifest.protocol, manifest.target_case_ids
    base = ordered[0].version_id
    baseline = {c: np.asarray(rounds[base][c], float) for c in targets if c in rounds[base]}
    boot = proto.decision.method == "bootstrap"
    base_draws = None
    if boot and len(baseline) == len(targets):
        count = proto.decision.resamples
        base_draws = np.empty((count, len(targets)))
        for k, case in enumerate(targets):
            rng = np.random.default_rng([proto.decision.rng_seed, 3, 0, k, 1])
            b = baseline[case]
            base_draws[:, k] = np.log(stats.aggregate_rows(b[rng.integers(0, b.size, size=(count, b.size))],
                                                           proto.aggregation))
    out: dict[str, _Chain] = {}
    for entry in ordered:
        if entry.partner is None:
            samples = rounds.get(entry.version_id)
            arms = None if samples is None else {c: (baseline.get(c), samples.get(c)) for c in targets}
            prev, paired = _Chain(np.zeros(len(targets)), None if base_draws is None else
                                  np.zeros_like(base_draws), [base], []), False
        else:
            arms, prev, paired = links.get(entry.version_id), out.get(entry.partner), True
            if prev is None or prev.point is None:
                out[entry.version_id] = _Chain(None, None, [], [], f"score_not_computable:partner_{entry.partner}")
                continue
        problem = "score_not_computable:no_round" if arms is None else None
        for case in targets if arms is not None else ():
            if case not in arms or arms[case][0] is None or arms[case][1] is None:
                problem = "score_not_computable:case_missing"
            problem = problem or _usable(arms[case], manifest, paired)
            if problem:
                break
        if problem:
            out[entry.version_id] = _Chain(None, None, [], [], problem)
            continue
        if entry.version_id == base:
            out[base] = prev
            continue
        point, draws, p_val = _link(arms, manifest, entry.evaluation_order, paired, base_draws)
        out[entry.version_id] = _Chain(prev.point + point, None if draws is None else prev.draws + draws,
                                       prev.path + [entry.version_id], prev.p_values + [p_val],
                                       paired=paired and prev.paired)
    return out


def _slower(chain: _Chain, manifest: Manifest, calibrated: bool) -> list[str]:
    """Target cases the compare gate would call ``slower`` against the baseline, on the chained numbers:
    ``stats.case_verdict`` (the compare's verdict, its multiplicity correction and its calibration rule:
    a chain with an independent link claims no size unless calibrated; relative_band: the point and
    every link's rank test)."""
    proto, targets = manifest.protocol, manifest.target_case_ids
    level = stats.family_level(proto.decision.confidence,
                               len(targets) if proto.decision.multiplicity == "bonferroni" else 1)
    directional = calibration.directional(chain.paired, calibrated)
    out = []
    for k, case in enumerate(targets):
        p_value = max((float(p[k]) for p in chain.p_values), default=1.0)
        verdict = stats.case_verdict(proto.decision.noise_band, level,
                                     log_draws=None if chain.draws is None else chain.draws[:, k],
                                     point=float(np.exp(chain.point[k])), p_value=p_value,
                                     directional=directional)[0]
        if verdict == "slower":
            out.append(case)
    return out


def _scores(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
            manifest: Manifest, links: Mapping[str, Mapping[str, Sequence]] | None = None,
            gate: bool = True, calibrated: bool = False) -> tuple[dict[str, dict], dict[str, _Chain]]:
    proto = manifest.protocol
    chains = _chains(sorted(entries, key=lambda e: e.evaluation_order), rounds, links or {}, manifest)
    alpha = (1 - proto.decision.confidence) / 2
    out = {}
    for entry in entries:
        chain = chains[entry.version_id]
        problem = entry.problem or chain.problem
        mean = geomean = score = ci = None
        if chain.point is not None:
            mean, geomean = (float(x) for x in stats.suite_means(chain.point))
            score = geomean if proto.aggregate_metric == "geomean_speedup" else mean
            if chain.draws is not None and entry.evaluation_order > 0:
                ci = [float(x) for x in np.quantile(_score_draws(chain.draws, proto.aggregate_metric),
                                                    [alpha, 1 - alpha])]
        if problem is None and gate and entry.evaluation_order > 0:
            slower = _slower(chain, manifest, calibrated)
            problem = f"would_fail_gate: slower target cases {slower}" if slower else None
        out[entry.version_id] = {
            "version_id": entry.version_id, "evaluation_order": entry.evaluation_order,
            "score": score, "mean": mean, "geomean": geomean, "ci": ci,
            "protocol": ("baseline" if entry.evaluation_order == 0 else
                         ("paired chain " if entry.partner else "independent vs ") + " > ".join(chain.path)
                         if chain.path else None),
            "eligible": problem is None, "ineligible_reason": problem, "rank": None,
            "in_tie_set": False, "ratio_to_anchor": None, "ratio_ci": None}
    return out, chains


def select(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
           manifest: Manifest, links: Mapping[str, Mapping[str, Sequence]] | None = None,
           calibrated: bool = False) -> dict:
    """The ``selection.json`` content (without input file records) for ``entries`` (pure).

    ``rounds``: each version's own samples per case; ``links``: for a version with a ``partner``, the
    paired arms ``{case: (partner samples, own samples)}`` of its ranking round; ``calibrated``: the
    manifest's band is the calibration's δ_eff (an independent link may then claim a size).
    """
    ordered = sorted(entries, key=lambda e: e.evaluation_order)
    base_entry = ordered[0] if ordered and ordered[0].evaluation_order == 0 else None
    if base_entry is None or base_entry.version_id not in rounds or base_entry.partner is not None:
        raise ValueError("selection needs the frozen baseline (evaluation_order 0) and its round")
    orders = {e.version_id: e.evaluation_order for e in ordered}
    for e in ordered:
        if e.partner is not None and not (orders.get(e.partner, e.evaluation_order) < e.evaluation_order):
            raise ValueError(f"{e.version_id}: its ranking round's partner {e.partner} is not an earlier version")
    baseline = rounds[base_entry.version_id]
    rows, chains = _scores(ordered, rounds, manifest, links, calibrated=calibrated)
    eligible = [rows[e.version_id] for e in ordered if rows[e.version_id]["eligible"]]
    delta = delta_of(manifest)
    drift = drift_of(baseline, manifest)
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
    alpha = (1 - manifest.protocol.decision.confidence) / 2
    anchor_draws = _score_draws(chains[anchor["version_id"]].draws, metric) if bootstrap else None
    for row in eligible:
        row["ratio_to_anchor"] = row["score"] / anchor["score"]
        if bootstrap:
            ratio = _score_draws(chains[row["version_id"]].draws, metric) / anchor_draws
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
            baseline: Mapping[str, Sequence[float]], manifest: Manifest) -> dict:
    """Equivalence of an independent final round with an independent ranking round (pure).

    Both are scored against the shared baseline round. ``status``: ``consistent`` when the bootstrap
    CI of final/ranking score lies inside [1/(1+δ), 1+δ] (relative_band: the point ratio),
    ``inconsistent`` when it lies entirely outside, else ``unresolved``. ``refuted``: the final round
    proves the chosen version slower than the baseline (the decision it was chosen on does not hold).
    """
    rounds = {"ranking": ranking_samples, "final": final_samples, "baseline": baseline}
    rows, chains = _scores([Entry("baseline", 0), Entry("ranking", 1), Entry("final", 2)], rounds, manifest,
                           gate=False)
    if rows["ranking"]["score"] is None or rows["final"]["score"] is None:
        raise ValueError("ranking or final score is not computable")
    ratio = rows["final"]["score"] / rows["ranking"]["score"]
    ci = None
    if manifest.protocol.decision.method == "bootstrap":
        metric = manifest.protocol.aggregate_metric
        alpha = (1 - manifest.protocol.decision.confidence) / 2
        final_draws = _score_draws(chains["final"].draws, metric)
        ci = np.quantile(final_draws / _score_draws(chains["ranking"].draws, metric), [alpha, 1 - alpha])
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
