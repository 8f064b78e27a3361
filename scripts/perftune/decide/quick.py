"""A quick screen vs the current best → ``quick_compare.json`` (never ranks) with the promotion decision.

A quick screen collected with ``collect_perf.py quick --paired-with <best's version>`` carries both
arms, interleaved per repeat like a formal paired round: the speed-ups, CIs and the promotion use
those pairs (drift cancels inside each pair), and ``--baseline`` must be a round of the same code
as the partner (by hash). An unpaired screen is an independent comparison with the baseline round:
without a calibration it claims no size (``stats.case_verdict``: ``inconclusive``, never
promoted; docs/statistics.md "Independent rounds without calibration"). Promotion is the frozen
``protocol.promotion`` rule (:mod:`acceptance`) over the item's case scope (``--cases``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from ..contract.manifest import Manifest
from ..errors import ContractError
from . import acceptance, calibration, stats
from .compare import SCHEMA_VERSION, _decision, _load_manifest

QUICK_COMPARE_NAME = "quick_compare.json"


def check_quick(manifest: Manifest, manifest_sha256: str, baseline: Any, quick: Mapping[str, Any],
                source: str = "compare_perf.py") -> None:
    """A quick result must be complete, quick, against the same manifest and protocol as the baseline;
    a paired one against a baseline round of its partner's code."""
    b = baseline.collection
    if quick.get("mode") != "quick" or quick.get("status") != "complete":
        raise ContractError(source, "--quick", f"{quick.get('collection_id')} is mode={quick.get('mode')} "
                            f"status={quick.get('status')}", "give a complete quick result")
    if quick["performance_cases"]["sha256"] != manifest_sha256 or b["performance_cases"]["sha256"] != manifest_sha256:
        raise ContractError(source, "performance_cases", "quick result or baseline was collected against a "
                            "different PERFORMANCE_CASES.json", "the manifest is frozen; re-collect")
    if b.get("mode") != "compare" or b.get("status") != "complete":
        raise ContractError(source, "--baseline", f"{b['collection_id']} is not a complete formal round",
                            "give the formal baseline round")
    for key in ("backend", "device_id", "seed", "warmup", "target_op_name"):
        if b.get(key) != quick.get(key):
            raise ContractError(source, f"protocol.{key}", f"baseline has {b.get(key)!r}, quick has "
                                f"{quick.get(key)!r}", "quick runs use the frozen protocol")
    partner = quick.get("paired") or {}
    if partner and partner.get("baseline_executable_sha256") != b.get("executable_sha256"):
        raise ContractError(source, "--baseline", f"the quick screen was paired with "
                            f"{partner.get('baseline_version')}, other code than round {b['collection_id']} "
                            "measured", "give the round of the version the screen was paired with (BEST_COLLECTION)")


def build_quick(*, task: str, manifest: Manifest, baseline: Any, quick: Mapping[str, Any],
                quick_samples: Mapping[str, list[float]], scope: list[str] | None = None,
                pairs: Mapping[str, tuple[list[float], list[int] | None]] | None = None,
                calibrated: bool = False) -> dict[str, Any]:
    """Quick screen vs the current best: informational, ``never_ranks: true``, with promotion.

    ``scope`` = the item's cases (a subset of the target cases); promotion looks only at them.
    ``pairs``: per case the paired baseline arm and the process of every pair (a paired screen).
    """
    decision, aggregation = _decision(manifest, baseline.collection)
    paired = pairs is not None
    targets = [cid for cid in manifest.case_ids if cid in set(manifest.target_case_ids or manifest.case_ids)]
    rule = manifest.protocol.rule("promotion") if manifest.protocol else dict(protocol.DEFAULT_PROMOTION)
    chosen = targets if not scope or rule["scope"] == "target_cases" else [c for c in targets if c in set(scope)]
    outside = sorted(set(scope or ()) - set(targets))
    if outside:
        raise ContractError("compare_perf.py", "--cases", f"{outside} are not target cases",
                            f"name target cases only: {targets}")
    missing = sorted(set(chosen) - set(quick_samples))
    if missing:
        raise ContractError("compare_perf.py", "--quick", f"quick result lacks cases {missing}",
                            "run quick on every case of the item's scope")
    rows, arms = [], {}
    for case_id in chosen:
        q = list(quick_samples[case_id])
        if paired:
            b, groups = list(pairs[case_id][0]), pairs[case_id][1]
            arms[case_id] = (b, q, groups, groups)
        else:
            b, groups = list(baseline.cases[case_id].samples_us), getattr(baseline.cases[case_id], "processes", None)
            arms[case_id] = (b, q, groups, None)
        result = stats.compare_samples(
            b, q, decision, paired=paired, aggregation=aggregation, family_size=len(chosen),
            groups_b=arms[case_id][2], groups_c=arms[case_id][3], directional=calibration.directional(paired, calibrated))
        rows.append({"case": case_id, "baseline_us": stats.aggregate(b, aggregation),
                     "quick_us": stats.aggregate(q, aggregation), "speedup": result.point,
                     "speedup_ci": [result.ci_low, result.ci_high] if result.ci_low is not None else None,
                     "verdict": result.verdict, "reason_code": result.reason_code,
                     "samples": {"baseline": b, "quick": q}})
    metric = manifest.protocol.aggregate_metric if manifest.protocol else protocol.AGGREGATE_METRIC
    suite = stats.suite_score(arms, chosen, decision, paired=paired, aggregation=aggregation, metric=metric)
    promote, text = acceptance.promote(suite, rule, decision.noise_band)
    if not calibration.directional(paired, calibrated):
        promote, text = False, f"{calibration.UNCALIBRATED}: an unpaired screen without calibration never promotes"
    return {
        "schema_version": SCHEMA_VERSION, "mode": "quick", "never_ranks": True, "task": task,
        "baseline_collection_id": baseline.collection["collection_id"],
        "quick_collection_id": quick["collection_id"], "paired": paired,
        "paired_baseline_version": (quick.get("paired") or {}).get("baseline_version"), "per_case": rows,
        "promotion": {"rule": rule["rule"], "rule_text": text, "threshold": float(rule["quick_min_speedup"]),
                      "scope_case_ids": chosen, "metric": metric, "score": suite.score,
                      "score_ci": [suite.ci_low, suite.ci_high] if suite.ci_low is not None else None,
                      "mean_case_speedup": suite.mean_case_speedup,
                      "slower_target_cases": [r["case"] for r in rows if r["verdict"] == "slower"],
                      "promote": promote},
    }


# --- thin I/O edge -------------------------------------------------------------------------

def _find_quick(root: Path, ref: str) -> Path:
    from ..measure import evidence
    quick_root = evidence.perf_dir(root) / evidence.QUICK_DIR
    if re.fullmatch(rf"{evidence.QUICK_PREFIX}\d+", ref):
        return fsio.safe_join(quick_root, ref, field="--quick", source=quick_root)
    path = Path(ref) if Path(ref).is_absolute() else root / ref   # the folder or its file, as printed (#27)
    folder = path.parent if path.name == protocol.QUICK_NAME else path
    if re.fullmatch(rf"{evidence.QUICK_PREFIX}\d+", folder.name) and folder.resolve().parent == quick_root.resolve():
        return fsio.safe_join(quick_root, folder.name, field="--quick", source=quick_root)
    for folder in sorted(quick_root.glob(f"{evidence.QUICK_PREFIX}*")) if quick_root.is_dir() else []:
        try:
            if fsio.read_json(folder / protocol.QUICK_NAME).get("collection_id") == ref:
                return folder
        except (ContractError, AttributeError):
            continue
    raise ContractError(quick_root, "--quick", f"no quick result {ref!r}", "give quick_NNN or its collection id")


def _quick_samples(root: Path, quick: Mapping[str, Any], source: Path) -> tuple[dict[str, list[float]], dict | None]:
    """Quick samples recomputed from the raw repeat files (never from quick_performance.json); a paired
    screen: also per case (baseline arm, process of every pair), read from ``repeat_NNN/<arm>``."""
    from ..measure.backends import get_backend, repeat_dir_name
    backend, out, pairs = get_backend(quick["backend"]), {}, ({} if quick.get("paired") else None)
    for row in quick["cases"]:
        raw = fsio.safe_join(root, row["raw_dir"], field="cases[].raw_dir", source=source)
        values, base, groups = [], [], []
        for index in range(1, quick["repeats"] + 1):
            folder = raw / repeat_dir_name(index)
            if not folder.is_dir() or folder.is_symlink():
                raise ContractError(folder, "-", "quick raw repeat folder is missing", "re-run the quick screen")
            if pairs is None:
                values.append(backend.read_quick_repeat(folder, quick["target_op_name"]))
                continue
            cand, arm = (backend.read_repeat(folder / a, quick["target_op_name"]) for a in ("candidate", "baseline"))
            if cand.process != arm.process:
                raise ContractError(folder, "process", "the arms of a paired repeat come from different processes",
                                    "re-run the quick screen")
            values.append(cand.duration_us)
            base.append(arm.duration_us)
            groups.append(cand.process)
        out[row["case"]] = values
        if pairs is not None:
            pairs[row["case"]] = (base, None if None in groups else groups)
    return out, pairs


def load_quick_compare(op_dir: str | Path, baseline_ref: str, quick_ref: str,
                       scope: list[str] | None = None) -> tuple[dict[str, Any], Path]:
    """The quick-vs-best dict (``never_ranks: true``) and where it belongs (inside the quick dir)."""
    from ..measure import evidence, evidence_format
    root = Path(op_dir)
    man, record = _load_manifest(root)
    man, calibrated = calibration.apply(root, man)
    base = evidence.load_round(root, baseline_ref)
    folder = _find_quick(root, quick_ref)
    path = folder / protocol.QUICK_NAME
    quick = fsio.read_json(path, what="quick_performance.json")
    evidence_format.format_version(path, quick, protocol.QUICK_NAME)
    schemas.validate(quick, "quick_performance", path)
    check_quick(man, record["sha256"], base, quick)
    samples, pairs = _quick_samples(root, quick, path)
    result = build_quick(task=root.resolve().name, manifest=man, baseline=base, quick=quick, quick_samples=samples,
                         scope=scope, pairs=pairs, calibrated=calibrated is not None)
    schemas.validate(result, "quick_compare", folder / QUICK_COMPARE_NAME)
    return result, folder / QUICK_COMPARE_NAME
