"""One owner of "slower" (#38 Deliver 3): one pair of rounds fed through the formal compare, the item
acceptance and the selection gate gets the same answer from all three, in each protocol: an independent
pair without calibration proves nothing slower (compare `inconclusive`, acceptance `no_stable_gain`,
selection eligible), a calibrated or a paired one proves the halved case slower in all three."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from perftune.contract import manifest
from perftune.decide import compare, selection
from perftune.decide.selection import Entry

RECORD = {"path": "PERFORMANCE_CASES.json", "sha256": "0" * 64, "size_bytes": 1, "schema_version": 2}
# case a: the candidate takes twice as long (clearly slower); case b: unchanged
# (8 pairs: the smallest two-sided Wilcoxon p, 2/256, is below relative_band's Bonferroni level)
BASE = {"a": [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 100.8, 99.2],
        "b": [50.0, 50.5, 49.5, 50.2, 49.8, 50.1, 50.3, 49.7]}
CAND = {"a": [200.0, 202.0, 198.0, 201.0, 199.0, 200.4, 201.6, 198.4],
        "b": [50.1, 50.4, 49.6, 50.0, 49.9, 50.2, 50.3, 49.6]}


def make_manifest(method: str) -> manifest.Manifest:
    proto = manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=8, op_name="k",
                                   decision={"method": method, "noise_band": 0.05, "resamples": 2000})
    cases = tuple(manifest.Case(c, "[1]", "float32") for c in ("a", "b"))
    return manifest.Manifest(2, cases, ("a", "b"), "user_selected", proto)


def as_round(name: str, samples: dict, partner: dict | None = None) -> SimpleNamespace:
    collection = {"collection_id": name, "backend": "cpu", "device_id": 0, "seed": 42, "warmup": 1, "repeats": 8,
                  "target_op_name": "k", "selector": {}, "protocol": {"processes": 1}}
    if partner is not None:
        collection["paired"] = {"baseline_version": "v000"}
    cases = {c: SimpleNamespace(samples_us=v, processes=None, repeats=(),
                                baseline_samples_us=None if partner is None else partner[c])
             for c, v in samples.items()}
    return SimpleNamespace(collection=collection, cases=cases, partner=None)


def through_all_three(method: str, protocol: str) -> tuple[dict, dict, dict]:
    """(per-case compare verdicts, item_acceptance, the candidate's selection row) of the one pair."""
    man = make_manifest(method)
    paired, calibrated = protocol == "paired", protocol == "calibrated"
    cand = as_round("c2", CAND, BASE if paired else None)
    perf = compare.build_performance(task="t", manifest=man, manifest_record=RECORD, baseline=as_round("c1", BASE),
                                     candidate=cand, golden_us=None, round_noise=0.001 if calibrated else None)
    entries = [Entry("v000", 0), Entry("v1", 1, partner="v000" if paired else None)]
    links = {"v1": {c: (BASE[c], CAND[c]) for c in BASE}} if paired else None
    chosen = selection.select(entries, {"v000": BASE, "v1": CAND}, man, links, calibrated=calibrated)
    row = next(r for r in chosen["candidates"] if r["version_id"] == "v1")
    return {r["case"]: r["verdict"] for r in perf["per_case"]}, perf["item_acceptance"], row


@pytest.mark.parametrize("method", ["bootstrap", "relative_band"])
def test_an_uncalibrated_independent_pair_is_slower_nowhere(method):
    verdicts, accepted, row = through_all_three(method, "independent")
    assert verdicts == {"a": "inconclusive", "b": "inconclusive"}
    assert (accepted["status"], accepted["reason_code"]) == ("rejected", "no_stable_gain")
    assert row["eligible"] and row["ineligible_reason"] is None


@pytest.mark.parametrize("method", ["bootstrap", "relative_band"])
@pytest.mark.parametrize("protocol", ["calibrated", "paired"])
def test_a_calibrated_or_paired_pair_is_slower_in_all_three(method, protocol):
    verdicts, accepted, row = through_all_three(method, protocol)
    assert verdicts["a"] == "slower" and verdicts["b"] != "slower"
    assert (accepted["status"], accepted["reason_code"], accepted["slower_target_cases"]) == ("rejected", "slower", ["a"])
    assert row["ineligible_reason"] == "would_fail_gate: slower target cases ['a']"
