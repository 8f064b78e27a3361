"""Best-version selection (DESIGN §4.6, §7): suite scores, the anchor, the tie set and the choice.

Pure: the caller (:mod:`perftune.decide.candidates`) loads the rounds and checks the evidence on disk;
this module only decides. Rules, frozen in the manifest before any result:

- score of a version = equal-weight arithmetic mean over ``optimization_target`` of
  aggregate(frozen baseline samples) / aggregate(version samples), with its hierarchical-bootstrap
  CI (:func:`perftune.decide.stats.suite_score`, the same numbers compare_perf reports). The frozen
  baseline is the round of the candidate with ``evaluation_order`` 0; always unpaired here, so
  every version is scored against the same samples.
- anchor = the eligible version with the raw top score (exact ties: smaller evaluation_order).
- δ = max(decision.noise_band, the largest A/A noise the baseline proves over the target cases).
- tie set (method ``bootstrap``): versions whose ratio score/anchor-score has a bootstrap CI that
  overlaps the band [1-δ, 1+δ]. The ratio is bootstrapped jointly: one resample of the baseline per
  draw shared by both scores, each version's samples resampled from its own seeded stream
  (``[rng_seed, 3, evaluation_order, case index]``), so adding a candidate never changes another's
  numbers. Method ``relative_band``: the point ratio lies inside the band.
- chosen = the smallest evaluation_order in the tie set. Ineligible versions are listed with
  their reason and never rank; quick results never reach this module.
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


def delta_of(baseline: Mapping[str, Sequence[float]], manifest: Manifest) -> float:
    """The stability band δ: the frozen noise band or the baseline's proven A/A noise if larger."""
    proto = manifest.protocol
    noise = [stats.aa_noise(baseline[c], proto.decision, proto.aggregation)
             for c in manifest.target_case_ids if c in baseline]
    return max([proto.decision.noise_band] + [n for n in noise if n is not None])


def _draws(baseline: Mapping[str, np.ndarray], versions: Mapping[int, Mapping[str, np.ndarray]],
           manifest: Manifest) -> dict[int, np.ndarray]:
    """Joint bootstrap draws of every version's suite score (shared baseline resample per draw)."""
    proto = manifest.protocol
    seed, count = proto.decision.rng_seed, proto.decision.resamples
    totals = {order: np.zeros(count) for order in versions}
    for k, case in enumerate(manifest.target_case_ids):
        b = baseline[case]
        rng = np.random.default_rng([seed, 3, 0, k, 1])
        b_agg = stats.aggregate_rows(b[rng.integers(0, b.size, size=(count, b.size))], proto.aggregation)
        for order, samples in versions.items():
            c = samples[case]
            rng = np.random.default_rng([seed, 3, order, k, 2])
            totals[order] += b_agg / stats.aggregate_rows(c[rng.integers(0, c.size, size=(count, c.size))],
                                                          proto.aggregation)
    return {order: total / len(manifest.target_case_ids) for order, total in totals.items()}


def _tied(ratio: float, ci: tuple[float, float] | None, delta: float) -> bool:
    if ci is None:
        return 1 - delta <= ratio <= 1 + delta
    return ci[1] >= 1 - delta and ci[0] <= 1 + delta


def _scores(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
            baseline: Mapping[str, Sequence[float]], manifest: Manifest) -> dict[str, dict]:
    proto = manifest.protocol
    out = {}
    for entry in entries:
        samples = rounds.get(entry.version_id)
        suite = None if samples is None else stats.suite_score(
            {c: (baseline[c], samples[c]) for c in manifest.target_case_ids if c in samples and c in baseline},
            manifest.target_case_ids, proto.decision, aggregation=proto.aggregation)
        problem = entry.problem or (None if suite and suite.mean_case_speedup is not None
                                    else f"score_not_computable:{suite.reason_code if suite else 'no_round'}")
        out[entry.version_id] = {
            "version_id": entry.version_id, "evaluation_order": entry.evaluation_order,
            "score": suite.mean_case_speedup if suite else None,
            "geomean": suite.geomean_speedup if suite else None,
            "ci": [suite.ci_low, suite.ci_high] if suite and suite.ci_low is not None else None,
            "eligible": problem is None, "ineligible_reason": problem, "rank": None,
            "in_tie_set": False, "ratio_to_anchor": None, "ratio_ci": None}
    return out


def select(entries: Sequence[Entry], rounds: Mapping[str, Mapping[str, Sequence[float]]],
           manifest: Manifest) -> dict:
    """The ``selection.json`` content (without input file records) for ``entries`` (pure)."""
    ordered = sorted(entries, key=lambda e: e.evaluation_order)
    base_entry = ordered[0] if ordered and ordered[0].evaluation_order == 0 else None
    if base_entry is None or base_entry.version_id not in rounds:
        raise ValueError("selection needs the frozen baseline (evaluation_order 0) and its round")
    baseline = rounds[base_entry.version_id]
    rows = _scores(ordered, rounds, baseline, manifest)
    eligible = [rows[e.version_id] for e in ordered if rows[e.version_id]["eligible"]]
    delta = delta_of(baseline, manifest)
    result = {"candidates": [rows[e.version_id] for e in ordered], "rule": {**rule_of(manifest), "delta": delta},
              "anchor": None, "tie_set": [], "chosen": None}
    if not eligible:
        result["reason"] = "no eligible candidate: every version lacks evidence or has open KB gaps"
        return result
    for rank, row in enumerate(sorted(eligible, key=lambda r: (-r["score"], r["evaluation_order"])), 1):
        row["rank"] = rank
    anchor = min(eligible, key=lambda r: r["rank"])
    bootstrap = manifest.protocol.decision.method == "bootstrap"
    draws = _draws({c: np.asarray(baseline[c], float) for c in manifest.target_case_ids},
                   {r["evaluation_order"]: {c: np.asarray(v, float) for c, v in rounds[r["version_id"]].items()}
                    for r in eligible}, manifest) if bootstrap else {}
    alpha = (1 - manifest.protocol.decision.confidence) / 2
    for row in eligible:
        row["ratio_to_anchor"] = row["score"] / anchor["score"]
        if bootstrap:
            ratio = draws[row["evaluation_order"]] / draws[anchor["evaluation_order"]]
            row["ratio_ci"] = [float(x) for x in np.quantile(ratio, [alpha, 1 - alpha])]
        row["in_tie_set"] = _tied(row["ratio_to_anchor"], row["ratio_ci"] and tuple(row["ratio_ci"]), delta)
    tie = sorted((r for r in eligible if r["in_tie_set"]), key=lambda r: r["evaluation_order"])
    chosen = tie[0]
    how = "bootstrap CI of score/anchor overlaps" if bootstrap else "point ratio score/anchor within"
    result.update(anchor=anchor["version_id"], tie_set=[r["version_id"] for r in tie], chosen=chosen["version_id"],
                  reason=(f"anchor {anchor['version_id']} has the raw top score {anchor['score']:.4f}; tie set "
                          f"{[r['version_id'] for r in tie]} ({how} 1±{delta:.4f}); chose {chosen['version_id']}: "
                          f"the smallest evaluation_order ({chosen['evaluation_order']}) in the tie set"))
    return result


def confirm(ranking_samples: Mapping[str, Sequence[float]], final_samples: Mapping[str, Sequence[float]],
            baseline: Mapping[str, Sequence[float]], manifest: Manifest) -> dict:
    """Compare the chosen version's independent final round with its ranking round (pure).

    ``consistent`` is False when the final score differs from the ranking score by more than the
    stability band: bootstrap CI of final/ranking entirely outside [1-δ, 1+δ] (relative_band: the
    point ratio outside). The fix is to re-measure with the same protocol, never to cherry-pick.
    """
    rounds = {"ranking": ranking_samples, "final": final_samples, "baseline": baseline}
    rows = _scores([Entry("baseline", 0), Entry("ranking", 1), Entry("final", 2)], rounds, baseline, manifest)
    if rows["ranking"]["score"] is None or rows["final"]["score"] is None:
        raise ValueError("ranking or final score is not computable")
    delta = delta_of(baseline, manifest)
    ratio = rows["final"]["score"] / rows["ranking"]["score"]
    ci = None
    if manifest.protocol.decision.method == "bootstrap":
        arrays = {o: {c: np.asarray(v[c], float) for c in manifest.target_case_ids}
                  for o, v in ((1, ranking_samples), (2, final_samples))}
        draws = _draws({c: np.asarray(baseline[c], float) for c in manifest.target_case_ids}, arrays, manifest)
        alpha = (1 - manifest.protocol.decision.confidence) / 2
        ci = [float(x) for x in np.quantile(draws[2] / draws[1], [alpha, 1 - alpha])]
    consistent = _tied(ratio, ci and tuple(ci), delta)
    return {"ranking_score": rows["ranking"]["score"], "final_score": rows["final"]["score"], "ratio": ratio,
            "ratio_ci": ci, "delta": delta, "consistent": consistent,
            "action": "none" if consistent else "re-measure the affected candidates with the same protocol "
                                                "(formal round, then select_best.py record --supersedes <version>) "
                                                "and choose again; never cherry-pick a favourable round"}

