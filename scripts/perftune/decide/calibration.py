"""Noise calibration before any candidate: the effective band δ_eff = max(frozen band, measured A/A noise).

``compare_perf.py calibrate`` measures the A/A noise of the unchanged (baseline) code and writes
``docs/perf/calibration.json`` once, before any quick result or candidate round exists; every later
decision (formal and quick compare, selection, confirm, stage5_check) uses δ_eff through
:func:`apply`, which recomputes the calibration from the raw files of its rounds and refuses a
mismatch. Rules (docs/statistics.md, "Noise calibration"):

- two rounds of the baseline code (independent processes): per target case the bootstrap CI (frozen
  level, frozen aggregation) of round 1 / round 2 — the between-process noise an independent
  comparison meets; one round: its first half against its second half (halves of whole processes
  when it has at least four, else within-round noise only). Two-level CIs when processes are recorded.
- a case's noise = ``max(hi, 1/lo) − 1`` (the CI's reach away from 1); the measured noise is the
  largest over the target cases; δ_eff = max(frozen noise_band, measured), rounded up to 1e-4.
- an independent comparison's suite CIs are widened by the measured noise (:func:`widen`).
- no calibration: an independent comparison's between-round noise is unmeasured, so none of its
  verdicts may claim a size (:func:`directional` into ``stats.case_verdict``, :func:`suite_verdict`; statistics.md
  "Independent rounds without calibration"): per case and suite ``inconclusive``
  (``independent_not_calibrated``), no acceptance, no promotion. Paired rounds are exempt.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from .. import fsio
from ..contract import protocol
from ..contract.manifest import Manifest, load_manifest
from ..errors import ContractError
from . import stats

CALIBRATION_NAME = "calibration.json"
SOURCE = "compare_perf.py calibrate"


def path_of(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / CALIBRATION_NAME


def measure(rounds: list[dict[str, list[float]]], manifest: Manifest,
            groups: list[dict[str, list[int] | None]] | None = None) -> dict[str, Any]:
    """The calibration numbers from the samples of one or two baseline rounds (pure); ``groups``: the
    process index of every sample per round and case (two-level CI; halves of whole processes)."""
    proto = manifest.protocol
    dec, per_case = proto.decision, {}
    for k, case in enumerate(manifest.target_case_ids):
        g = [(groups[i] if groups else {}).get(case) for i in range(len(rounds))]
        if len(rounds) == 2:
            a, b = np.asarray(rounds[0][case], float), np.asarray(rounds[1][case], float)
            ga, gb = g
        else:
            a, b, ga, gb = stats.halves(np.asarray(rounds[0][case], float), g[0])
        if stats.sample_problem(a, min(dec.min_repeats, 3)) or stats.sample_problem(b, min(dec.min_repeats, 3)):
            raise ContractError(SOURCE, case, "too few usable samples to calibrate",
                                "collect the baseline round with the frozen repeats")
        rng = np.random.default_rng([dec.rng_seed, 4, k])
        draws = stats.log_speedup_draws(a, b, proto.aggregation, dec.resamples, rng, groups_b=ga, groups_c=gb)
        low, high = np.exp(np.quantile(draws, [(1 - dec.confidence) / 2, (1 + dec.confidence) / 2]))
        per_case[case] = float(max(high, 1.0 / low) - 1.0)
    measured = max(per_case.values())
    effective = max(dec.noise_band, math.ceil(measured * 1e4) / 1e4)
    return {"kind": "two_rounds" if len(rounds) == 2 else "halves_of_one_round", "per_case_noise": per_case,
            "measured_noise": measured, "frozen_noise_band": dec.noise_band, "effective_band": effective}


UNCALIBRATED = stats.UNCALIBRATED   # reason code of the rule below (owned by stats.case_verdict)


def directional(paired: bool, calibrated: bool) -> bool:
    """Whether a comparison may claim a size: paired (drift cancels in each pair) or calibrated. Without
    it a case's verdict is ``inconclusive`` instead of any that claims a size (``stats.case_verdict``:
    its between-round noise was never measured; the within-round CI misses drift between rounds: 22 %
    false A/A verdicts on a loaded host, #27)."""
    return paired or calibrated


def suite_verdict(ci: list[float] | None, paired: bool, calibrated: bool) -> tuple[str, str]:
    """(verdict, reason) of a suite CI: ``faster`` entirely above 1, ``slower`` entirely below 1, else
    ``inconclusive``; always ``inconclusive`` for an independent comparison without calibration."""
    if not directional(paired, calibrated):
        return "inconclusive", UNCALIBRATED
    if ci is None or ci[0] is None:
        return "inconclusive", "no_ci"
    if ci[0] > 1.0:
        return "faster", "ci_above_one"
    return ("slower", "ci_below_one") if ci[1] < 1.0 else ("inconclusive", "ci_contains_one")


def widen(ci: list[float] | None, noise: float | None) -> list[float] | None:
    """A suite CI of an independent comparison with the calibrated between-round noise ``m`` folded in:
    ``[lo / (1 + m), hi · (1 + m)]`` (the ratio's CI times the range an A/A ratio of two rounds reached).
    The suite decision has no band, so without this the drift between two rounds reads as a gain;
    per-case verdicts are covered by δ_eff instead. ``None`` noise (paired, or no calibration): unchanged."""
    if ci is None or not noise:
        return ci
    return [ci[0] / (1.0 + noise), ci[1] * (1.0 + noise)]


def _rounds(op_dir: Path, refs: list[str], manifest_sha: str) -> tuple[list[Any], list[dict[str, list[float]]], list]:
    from ..measure import evidence
    loaded = [evidence.load_round(op_dir, ref) for ref in refs]
    for rnd in loaded:
        col = rnd.collection
        if col.get("mode") != "compare" or col.get("status") != "complete" or rnd.paired:
            raise ContractError(SOURCE, "--rounds", f"{rnd.collection_id} is not a complete independent formal round",
                                "calibrate on formal rounds of the baseline code")
        if col["performance_cases"]["sha256"] != manifest_sha:
            raise ContractError(SOURCE, "--rounds", f"{rnd.collection_id} used another manifest", "re-collect")
    if len({r.collection["executable_sha256"] for r in loaded}) != 1 or len({r.collection_id for r in loaded}) != len(loaded):
        raise ContractError(SOURCE, "--rounds", "rounds are not distinct rounds of the same (baseline) code",
                            "give one or two rounds of the unchanged baseline code")
    return (loaded, [{cid: c.samples_us for cid, c in r.cases.items()} for r in loaded],
            [{cid: c.processes for cid, c in r.cases.items()} for r in loaded])


def calibrate(op_dir: str | Path, refs: list[str]) -> dict[str, Any]:
    """Measure and write calibration.json (once, before any candidate is seen)."""
    from ..measure import evidence
    root = Path(op_dir)
    man = load_manifest(root / protocol.MANIFEST_NAME)
    out = path_of(root)
    if out.exists():
        raise ContractError(out, "-", "a calibration already exists and is never overwritten", "use it as it is")
    if not 1 <= len(refs) <= 2:
        raise ContractError(SOURCE, "--rounds", f"{len(refs)} rounds given", "give one or two baseline rounds")
    manifest_sha = fsio.sha256_file(root / protocol.MANIFEST_NAME)
    loaded, samples, groups = _rounds(root, refs, manifest_sha)
    names = {r.path.name for r in loaded}
    later = [r["name"] for r in evidence.list_rounds(root) if r["name"] not in names]
    quick = evidence.perf_dir(root) / evidence.QUICK_DIR
    if later or (quick.is_dir() and any(quick.iterdir())):
        raise ContractError(SOURCE, "--rounds", f"other rounds or quick results exist ({later or 'quick'})",
                            "calibrate right after the baseline, before any candidate is measured")
    obj = {"schema_version": 1, "manifest_sha256": manifest_sha, "rounds": [r.collection_id for r in loaded],
           "executable_sha256": loaded[0].collection["executable_sha256"], **measure(samples, man, groups)}
    fsio.write_json(out, obj, overwrite=False)
    return obj


def apply(op_dir: str | Path, manifest: Manifest) -> tuple[Manifest, dict[str, Any] | None]:
    """The manifest with δ_eff as its noise band (recomputed from the calibration rounds), and the record."""
    root, path = Path(op_dir), path_of(op_dir)
    if manifest.protocol is None or not path.exists():
        return manifest, None
    stored = fsio.read_json(path, what="calibration")
    manifest_sha = fsio.sha256_file(root / protocol.MANIFEST_NAME)
    if stored.get("manifest_sha256") != manifest_sha:
        raise ContractError(path, "manifest_sha256", "calibration was made under another manifest", "re-freeze")
    _, samples, groups = _rounds(root, list(stored.get("rounds") or []), manifest_sha)
    fresh = measure(samples, manifest, groups)
    if any(stored.get(k) != v for k, v in fresh.items()):
        raise ContractError(path, "effective_band", "does not match the recomputation from its rounds",
                            "calibration.json is never edited; restore it")
    decision = dataclasses.replace(manifest.protocol.decision, noise_band=fresh["effective_band"])
    proto = dataclasses.replace(manifest.protocol, decision=decision)
    return dataclasses.replace(manifest, protocol=proto), stored
