"""Baseline round vs candidate round → the ``performance.json`` content (DESIGN §4.4, §7).

Pure core: takes loaded rounds (``evidence.RoundEvidence``-like objects: ``.collection`` dict,
``.cases[id].samples_us``, ``.baseline_samples_us`` for paired rounds, ``.repeats[].bound_route``),
the manifest, its file record and the golden per-iteration times; no file access, no clock.
Every number is recomputed from the samples; nothing is read from an earlier performance.json.
Thin I/O edge (:func:`load_formal`, :func:`load_quick_compare`): load the manifest, the rounds
(``evidence.load_round`` recomputes samples from raw files) and the golden report; the files of a
compare are written by :mod:`perftune.report.formal` (figures first, ``performance.json`` last).

Decisions where DESIGN is silent (see also docs/statistics.md):
- The candidate must be the newest complete formal round: the root deliverables always describe
  the final round, and re-comparing an older round (cherry-picking) is refused.
- A paired candidate round carries its own baseline samples: the speed-up, CI and verdict use the
  paired arms; the independent ``--baseline`` round is still cited (``baseline_collection_id``) and must
  have measured the partner's code (by hash; a round paired with other code is refused, exit 2).
- ``target_met`` per case and ``*_status`` use the point estimates (a speed-up user target with an
  ``inconclusive``/``insufficient`` target case is ``unproven``, never ``met``): ``default`` =
  ``golden_per_iteration_us / final_us >= 1.0`` over every P0 case; a user target
  (``speedup`` or ``golden_reference_ratio`` >= threshold) is judged over the target cases and
  takes precedence (``effective_target``). Any case in scope without valid evidence (or without a
  golden time for ratio metrics) makes the status ``unavailable``, never ``not_met``.
- ``bound_route`` of a case = the most frequent repeat label of the final round (ties in
  ``protocol.BOUND_LABELS`` order); null when no repeat carries one (cpu backend).
- Target cases are decided as one family (Bonferroni-widened per-case CIs when the frozen
  ``decision.multiplicity`` is ``bonferroni``); non-target cases at the frozen level.
- ``item_acceptance``: the frozen ``protocol.acceptance`` rule applied to this compare
  (:mod:`perftune.decide.acceptance`), so the item decision is never made by eye.
- An independent comparison without a calibration claims no size (``stats.case_verdict`` with ``calibration.directional``):
  per case and suite ``inconclusive`` / ``independent_not_calibrated``, hence no acceptance.
- Quick comparisons: :mod:`perftune.decide.quick` (the same statistics, ``never_ranks: true``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from . import acceptance, attempts, calibration, stats
from ..measure import comparable
from ..errors import ContractError
from ..contract.manifest import Decision, Manifest, load_manifest

SCHEMA_VERSION = 1


def _decision(manifest: Manifest, collection: Mapping[str, Any]) -> tuple[Decision, str]:
    """The frozen decision rule and aggregation (v1 manifests: from the round's recorded protocol)."""
    if manifest.protocol is not None:
        return manifest.protocol.decision, manifest.protocol.aggregation
    recorded = collection.get("protocol") or {}
    rule = {**protocol.DEFAULT_DECISION, **(recorded.get("decision") or {})}
    return Decision(**rule), recorded.get("aggregation", protocol.DEFAULT_AGGREGATION)


def check_rounds(manifest: Manifest, manifest_sha256: str, baseline: Any, candidate: Any,
                 source: str = "compare_perf.py") -> None:
    """Refuse a comparison the contract does not allow (ContractError, exit 2)."""
    b, c = baseline.collection, candidate.collection
    if b["collection_id"] == c["collection_id"]:
        raise ContractError(source, "--candidate", f"is the baseline round itself ({b['collection_id']})",
                            "compare two different formal rounds")
    for name, col in (("--baseline", b), ("--candidate", c)):
        if col.get("mode") != "compare" or col.get("status") != "complete":
            raise ContractError(source, name, f"round {col['collection_id']} is mode={col.get('mode')} "
                                f"status={col.get('status')}, not a complete formal round",
                                "give a complete formal round; quick results use the 'quick' sub-command")
        missing = sorted(set(manifest.case_ids) - set(col["expected_cases"]))
        extra = sorted(set(col["expected_cases"]) - set(manifest.case_ids))
        if missing or extra:
            raise ContractError(source, name, f"round {col['collection_id']} cases differ from the manifest "
                                f"(missing {missing}, unknown {extra})", "collect every frozen case")
    partner = candidate.partner or {}
    if partner and partner.get("baseline_executable_sha256") != b.get("executable_sha256"):
        raise ContractError(source, "--candidate", f"round {c['collection_id']} was paired with other code "
                            f"({partner.get('baseline_version')}) than the baseline round {b['collection_id']} "
                            "measured; a paired speed-up is against its partner, so the two must be the same code",
                            "pair the candidate with the baseline round's saved version (collect_perf.py formal "
                            "--paired-with DIR/docs/perf/versions/<its version>) or compare against that "
                            "version's round")
    frozen = (comparable.frozen_fields(manifest, manifest_sha256, protocol_keys=False)
              if manifest.protocol is not None
              else {comparable.MANIFEST_FIELD: manifest_sha256})   # the recorded protocols must agree (below)
    for name, rnd in (("--baseline", baseline), ("--candidate", candidate)):
        for key, recorded, value in comparable.mismatches(rnd, frozen):
            if key == comparable.MANIFEST_FIELD:
                raise ContractError(source, name, f"round {rnd.collection['collection_id']} was collected against "
                                    "a different PERFORMANCE_CASES.json (sha256 differs)",
                                    "the manifest is frozen; re-collect")
            raise ContractError(source, _field(key), f"round {rnd.collection['collection_id']} has {recorded!r}, manifest "
                                f"froze {value!r}", "re-collect with the frozen protocol")
    for key, recorded, value in comparable.mismatches(candidate, comparable.recorded_fields(baseline)):
        raise ContractError(source, _field(key), f"baseline has {value!r}, candidate has {recorded!r}",
                            "both rounds must use the frozen protocol and the frozen case selector")


def _field(key: str) -> str:
    return key if "." in key else f"protocol.{key}"


def bound_route(repeats: Any) -> dict[str, Any] | None:
    """Most frequent repeat label (diagnostic only), with the per-label counts; None when absent."""
    labels = [r.bound_route.get("label") for r in repeats or () if getattr(r, "bound_route", None)]
    labels = [x for x in labels if x]
    if not labels:
        return None
    counts = Counter(labels)
    order = {name: i for i, name in enumerate(protocol.BOUND_LABELS)}
    top = sorted(counts, key=lambda x: (-counts[x], order.get(x, len(order)), x))[0]
    return {"label": top, "counts": dict(sorted(counts.items()))}


def _ratio(golden_us: float | None, final_us: float | None) -> float | None:
    if golden_us is None or final_us is None:
        return None
    return golden_us / final_us


def case_entry(case: Any, result: stats.SpeedupResult, b: list[float], c: list[float],
               golden_us: float | None, aggregation: str, is_target: bool, route: Any) -> dict[str, Any]:
    """One ``per_case[]`` row (``target_met`` is filled in by :func:`target_block`)."""
    valid = result.verdict != "insufficient"
    base_us = stats.aggregate(b, aggregation) if valid else None
    final_us = stats.aggregate(c, aggregation) if valid else None
    ci = [result.ci_low, result.ci_high] if result.ci_low is not None else None
    return {
        "case": case.id, "shape": case.shape, "dtype": case.dtype, "target": is_target,
        "baseline_us": base_us, "final_us": final_us, "speedup": result.point if valid else None,
        "speedup_ci": ci, "verdict": result.verdict, "reason_code": result.reason_code,
        "delta": result.delta, "aa_noise": result.aa_noise, "mann_whitney_p": result.mann_whitney_p,
        "prob_candidate_faster": result.prob_candidate_faster, "rank_test": result.rank_test,
        "ci_level": result.ci_level, "stable": result.stable, "n_baseline": result.n_baseline,
        "n_final": result.n_candidate, "samples": {"baseline": list(b), "final": list(c)},
        "ci_method": result.ci_method, "n_processes": result.n_processes,
        "golden_per_iteration_us": golden_us, "golden_reference_ratio": _ratio(golden_us, final_us),
        "target_met": None, "bound_route": route,
    }


def _status(values: list[float | None], threshold: float) -> str:
    if not values or any(v is None for v in values):
        return "unavailable"
    return "met" if all(v >= threshold for v in values) else "not_met"


UNPROVEN = ("inconclusive", "insufficient")


def target_block(per_case: list[dict[str, Any]], user_target: Mapping[str, Any] | None,
                 golden_available: bool) -> dict[str, Any]:
    """Default (golden) target, user target, effective target; sets ``target_met`` per case.

    A ``speedup`` user target whose points all reach the threshold is ``unproven`` (not ``met``)
    while any target case's verdict is ``inconclusive`` or ``insufficient``: its CI does not even
    separate it from the baseline; those cases are listed as ``unproven_cases``."""
    threshold = protocol.DEFAULT_TARGET_THRESHOLD
    ratios = [row["golden_reference_ratio"] for row in per_case]
    valid = golden_available and all(r is not None for r in ratios)
    block: dict[str, Any] = {
        "default_target_metric": protocol.DEFAULT_TARGET_METRIC, "default_target_threshold": threshold,
        "default_target_status": _status(ratios, threshold) if golden_available else "unavailable",
        "valid_for_target_met": valid, "user_target": None,
    }
    scope, key, limit = per_case, "golden_reference_ratio", threshold
    effective = {"source": "default", "metric": "golden_reference_ratio", "threshold": threshold,
                 "status": block["default_target_status"]}
    if user_target:
        key = "speedup" if user_target["metric"] == "speedup" else "golden_reference_ratio"
        scope, limit = [row for row in per_case if row["target"]], float(user_target["threshold"])
        status = _status([row[key] for row in scope], limit)
        unproven = [row["case"] for row in scope if row["verdict"] in UNPROVEN] if key == "speedup" else []
        status = "unproven" if status == "met" and unproven else status
        extra = {"unproven_cases": unproven} if unproven else {}
        block["user_target"] = {"metric": user_target["metric"], "threshold": limit, "status": status, **extra}
        effective = {"source": "user", "metric": user_target["metric"], "threshold": limit, "status": status, **extra}
    for row in scope:
        row["target_met"] = None if row[key] is None else bool(row[key] >= limit)
    block["effective_target"] = effective
    return block


def _protocol_block(collection: Mapping[str, Any], aggregation: str, decision: Decision) -> dict[str, Any]:
    selector = collection.get("selector") or {}
    return {
        "backend": collection["backend"], "device_id": collection["device_id"], "seed": collection["seed"],
        "warmup": collection["warmup"], "repeats": collection["repeats"],
        "op_name": collection["target_op_name"], "selector_kind": selector.get("kind"),
        "aggregation": aggregation, "decision": dict(decision.__dict__),
        "processes": (collection.get("protocol") or {}).get("processes", protocol.DEFAULT_PROCESSES),
    }


def _pairs(manifest: Manifest, baseline: Any, candidate: Any) -> dict[str, tuple]:
    """Per case (baseline samples, candidate samples, baseline process groups, candidate process
    groups); a paired candidate brings its own baseline (both arms of a repeat share a process)."""
    out = {}
    for case_id in manifest.case_ids:
        final = candidate.cases[case_id]
        paired = getattr(final, "baseline_samples_us", None)
        groups = getattr(final, "processes", None)
        if paired is not None:
            out[case_id] = (list(paired), list(final.samples_us), groups, groups)
        else:
            base = baseline.cases[case_id]
            out[case_id] = (list(base.samples_us), list(final.samples_us), getattr(base, "processes", None), groups)
    return out


def _statistics(manifest: Manifest, baseline: Any, candidate: Any, decision: Decision, aggregation: str,
                round_noise: float | None) -> tuple[dict, dict[str, stats.SpeedupResult], Any]:
    """The pairs, per-case results and suite result of one compared round (every figure of it)."""
    paired = "paired" in candidate.collection
    pairs = _pairs(manifest, baseline, candidate)
    targets = set(manifest.target_case_ids or manifest.case_ids)
    results = {}
    for case in manifest.cases:
        b, c, groups_b, groups_c = pairs[case.id]
        results[case.id] = stats.compare_samples(
            b, c, decision, paired=paired, aggregation=aggregation,
            family_size=len(targets) if case.id in targets else 1, groups_b=groups_b, groups_c=groups_c,
            directional=calibration.directional(paired, round_noise is not None))
    target_ids = [cid for cid in manifest.case_ids if cid in targets]
    suite = stats.suite_score(pairs, target_ids, decision, paired=paired, aggregation=aggregation,
                              metric=suite_metric(manifest))
    return pairs, results, suite


def _suite_figures(suite: Any, widen: Any = lambda ci: ci) -> dict[str, Any]:
    return {"mean_case_speedup": suite.mean_case_speedup, "geomean_speedup": suite.geomean_speedup,
            "ci": widen([suite.ci_low, suite.ci_high] if suite.ci_low is not None else None),
            "score": suite.score, "mean_ci": widen(_ci(suite.mean_ci)), "geomean_ci": widen(_ci(suite.geomean_ci))}


def _every_attempt(perf: dict[str, Any], manifest: Manifest, baseline: Any, candidate: Any,
                   earlier: Sequence[tuple[str, Any]], decision: Decision, aggregation: str) -> None:
    """The delivered figures by the rule over every attempt (:mod:`perftune.decide.attempts`), in place;
    the compared round is named by its folder (its collection id when no path is known)."""
    before = [(name, *_statistics(manifest, baseline, rnd, decision, aggregation, None)[1:]) for name, rnd in earlier]
    name = Path(perf["final_round"]).name if perf["final_round"] else perf["final_collection_id"]
    for row in (r for r in perf["per_case"] if r["target"]):
        points = [(n, results[row["case"]]) for n, results, _suite in before]
        attempts.apply_case(row, [(n, r.point, None if r.ci_low is None else [r.ci_low, r.ci_high])
                                  for n, r in points], name)
    attempts.apply_suite(perf["suite"], [(n, _suite_figures(suite)) for n, _results, suite in before], name)


def build_performance(*, task: str, manifest: Manifest, manifest_record: Mapping[str, Any], baseline: Any,
                      candidate: Any, golden_us: Mapping[str, float] | None,
                      golden_record: Mapping[str, Any] | None = None,
                      round_paths: tuple[str, str] | None = None,
                      round_noise: float | None = None, earlier: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
    """The ``performance.json`` dict of a formal compare (call :func:`check_rounds` first).
    ``round_noise``: the calibrated between-round noise (None: not calibrated); it widens the suite CIs
    of an independent comparison (:func:`calibration.widen`), never of a paired one; an independent
    comparison without it gives no sized verdict (``stats.case_verdict``, ``calibration.directional``).
    ``earlier``: (round name, round) of the attempts before ``candidate`` (``attempts.rounds``); the
    delivered figures follow the rule over all of them (the verdicts and the item acceptance do not)."""
    col = candidate.collection
    decision, aggregation = _decision(manifest, col)
    paired = "paired" in col
    pairs, results, suite = _statistics(manifest, baseline, candidate, decision, aggregation, round_noise)
    targets = set(manifest.target_case_ids or manifest.case_ids)
    per_case = []
    for case in manifest.cases:
        b, c, _groups_b, _groups_c = pairs[case.id]
        golden = None if golden_us is None else golden_us.get(case.id)
        per_case.append(case_entry(case, results[case.id], b, c, golden, aggregation, case.id in targets,
                                   bound_route(getattr(candidate.cases[case.id], "repeats", ()))))
    target_ids = [cid for cid in manifest.case_ids if cid in targets]
    slower = [row["case"] for row in per_case if row["target"] and row["verdict"] == "slower"]
    drift = None if paired or not round_noise else round_noise
    widen = lambda ci: calibration.widen(ci, drift)  # noqa: E731
    figures = _suite_figures(suite, widen)
    verdict, why = calibration.suite_verdict(figures["ci"], paired, round_noise is not None)
    perf = {
        "schema_version": SCHEMA_VERSION, "mode": "compare", "task": task,
        "n_cases_total": len(per_case),
        "n_cases_valid": sum(row["verdict"] != "insufficient" for row in per_case),
        "protocol": _protocol_block(col, aggregation, decision),
        "baseline_collection_id": baseline.collection["collection_id"],
        "final_collection_id": col["collection_id"],
        "baseline_completed_at": baseline.collection.get("completed_at"),
        "final_completed_at": col.get("completed_at"),
        "baseline_round": round_paths[0] if round_paths else None,
        "final_round": round_paths[1] if round_paths else None,
        "paired": paired, "paired_baseline_version": (col.get("paired") or {}).get("baseline_version"),
        "manifest": dict(manifest_record), "target_case_ids": target_ids,
        "golden_source": dict(golden_record) if golden_record else None,
        "per_case": per_case,
        "suite": {**figures, "verdict": verdict, "verdict_reason": why,
                  "confidence": decision.confidence, "n_cases": suite.n_cases,
                  "method": suite.method, "reason_code": suite.reason_code, "metric": suite_metric(manifest),
                  "between_round_noise": drift},
        "slower_target_cases": slower,
        "unstable_cases": [row["case"] for row in per_case if row["stable"] is False],
    }
    rule = manifest.protocol.rule("acceptance") if manifest.protocol else dict(protocol.DEFAULT_ACCEPTANCE)
    perf["item_acceptance"] = acceptance.accept(per_case, perf["suite"], rule, decision.noise_band)
    if paired:   # every attempt counts: after the item decision (one round's rule), before the targets
        _every_attempt(perf, manifest, baseline, candidate, earlier, decision, aggregation)
    perf.update(target_block(per_case, manifest.user_target, golden_us is not None))
    return perf


def suite_metric(manifest: Manifest) -> str:
    return manifest.protocol.aggregate_metric if manifest.protocol else protocol.AGGREGATE_METRIC


def _ci(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [pair[0], pair[1]]


def exit_code(performance: Mapping[str, Any]) -> int:
    """0 when no target case is ``slower``, 1 when any is (DESIGN §5)."""
    return 1 if performance["slower_target_cases"] else 0


# --- thin I/O edge -------------------------------------------------------------------------

def _earlier(root: Path, man: Manifest, manifest_sha256: str, base: Any, cand: Any) -> list[tuple[str, Any]]:
    """The attempts before ``cand`` on disk (``attempts.rounds``), loaded and checked like the compared round."""
    from ..measure import evidence
    out = []
    for name in attempts.rounds(root, base, cand):
        if name != cand.path.name:
            rnd = evidence.load_round(root, name)
            check_rounds(man, manifest_sha256, base, rnd)
            out.append((name, rnd))
    return out


def _load_manifest(root: Path) -> tuple[Manifest, dict[str, Any]]:
    path = root / protocol.MANIFEST_NAME
    man = load_manifest(path)
    return man, {**fsio.file_record(path, root), "schema_version": man.schema_version}


def load_formal(op_dir: str | Path, baseline_ref: str, candidate_ref: str, *, newest: bool = True) -> dict[str, Any]:
    """Recompute the formal compare of two rounds on disk; the validated ``performance.json`` dict.
    ``newest=False``: an earlier item decision is recomputed (the candidate need not be the newest round)."""
    from ..measure import evidence, fingerprint  # I/O modules, imported at the edge only
    from ..contract import golden
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the operator directory")
    man, record = _load_manifest(root)
    man, calibrated = calibration.apply(root, man)
    base, cand = evidence.load_round(root, baseline_ref), evidence.load_round(root, candidate_ref)
    check_rounds(man, record["sha256"], base, cand)
    if (different := fingerprint.mismatch(base.collection, cand.collection)):
        raise ContractError(cand.path / evidence.COLLECTION_JSON, "environment", f"measured on another machine or "
                            f"toolchain than the baseline: {different}", "collect baseline and final in one environment")
    latest = [r["name"] for r in evidence.list_rounds(root) if r["status"] == "complete" and r["mode"] == "compare"]
    if newest and latest and cand.path.name != latest[-1]:
        raise ContractError("compare_perf.py", "--candidate", f"{cand.path.name} is not the newest complete formal "
                            f"round ({latest[-1]} is)", "performance.json always describes the final round; "
                            "compare the newest round")
    report = golden.load_golden(root, man)
    golden_us = None if report is None else {cid: g.per_iteration_e2e_us for cid, g in report.cases.items()}
    golden_record = None if report is None else fsio.file_record(root / protocol.GOLDEN_REPORT_NAME, root)
    perf = build_performance(task=root.resolve().name, manifest=man, manifest_record=record, baseline=base,
                             candidate=cand, golden_us=golden_us, golden_record=golden_record,
                             round_paths=(fsio.display_path(base.path, root), fsio.display_path(cand.path, root)),
                             round_noise=None if calibrated is None else calibrated["measured_noise"],
                             earlier=_earlier(root, man, record["sha256"], base, cand))
    perf["calibration"] = None if calibrated is None else {
        k: calibrated[k] for k in ("kind", "rounds", "measured_noise", "frozen_noise_band", "effective_band")}
    schemas.validate(perf, "performance", protocol.PERFORMANCE_JSON)
    return perf
