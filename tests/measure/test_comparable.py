"""measure.comparable: the one rule "this round used the frozen protocol", as (field, recorded, frozen)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from perftune.contract import manifest
from perftune.decide import compare
from perftune.errors import ContractError
from perftune.measure import comparable
from perftune.measure.evidence import RoundEvidence

SHA = "a" * 64


def man() -> manifest.Manifest:
    proto = manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=5, op_name="k")
    return manifest.parse_manifest({"schema_version": 2, "protocol": proto.as_dict(),
                                    "cases": [{"id": "c1", "shape": "[4]", "dtype": "float32", "p0": True,
                                               "test_function": "test_c1"}],
                                    "optimization_target": {"case_ids": ["c1"], "selection_mode": "user_selected"}})


def rnd(cid: str, **changes) -> RoundEvidence:
    m = man()
    col = {"collection_id": cid, "mode": "compare", "status": "complete", "backend": "cpu", "device_id": 0,
           "seed": 42, "warmup": 1, "repeats": 5, "target_op_name": "k", "expected_cases": ["c1"],
           "protocol": copy.deepcopy(m.protocol.as_dict()), "executable_sha256": "e" * 64,
           "performance_cases": {"sha256": SHA}, "selector": {"kind": "function_adapter"}}
    for key, value in changes.items():
        target, _, leaf = key.rpartition(".")
        (col[target] if target else col)[leaf] = value
    return RoundEvidence(Path(cid), col, {})


def test_a_round_of_the_frozen_protocol_has_no_mismatch_and_each_departure_is_named_once():
    frozen = comparable.frozen_fields(man(), SHA)
    assert comparable.mismatches(rnd("a"), frozen) == []
    assert comparable.mismatches(rnd("a", warmup=3, **{"protocol.seed": 7}), frozen) == [
        ("warmup", 3, 1), ("protocol.seed", 7, 42)]
    assert comparable.mismatches(rnd("a", **{"performance_cases.sha256": "b" * 64}), frozen) == [
        ("performance_cases.sha256", "b" * 64, SHA)]


def test_typed_properties_of_a_round():
    r = rnd("a", paired={"baseline_version": "v0", "baseline_executable_sha256": "f" * 64, "order": []})
    assert (r.protocol["seed"], r.executable_sha256, r.environment, r.paired, r.partner["baseline_version"]) == (
        42, "e" * 64, None, True, "v0")


@pytest.mark.parametrize("changes, field", [({"repeats": 7}, "protocol.repeats"),
                                            ({"selector.kind": "cli"}, "selector.kind")])
def test_compare_refuses_through_the_same_rule_with_exit_2(changes, field):
    with pytest.raises(ContractError) as info:
        compare.check_rounds(man(), SHA, rnd("a"), rnd("b", **changes))
    assert info.value.exit_code == 2 and info.value.field == field
