"""The way forward after a stage5_check FAIL (decide/way_forward.py), as a rule over failures: the delivered
experiment at fault is rejected by its items and the version before it restored; failed evidence is
rebuilt by its step; anything else stops with the check ids. The end-to-end run through perf_next is
tests/cheats/test_way_forward.py."""

from __future__ import annotations

from perftune.decide import candidates, way_forward


def _fail(check: str, category: str) -> dict:
    return {"gate": check.split(".")[0], "check": check, "category": category, "message": "m"}


def _version(vid: str, order: int, items: list[str]) -> dict:
    return {"version_id": vid, "evaluation_order": order, "items": items}


REGISTER = [_version("v000", 0, []), _version("v001", 1, ["gm-a"]), _version("v002", 2, ["gm-b", "kb-x"])]
ITEMS = [{"item_id": "gm-a", "status": "accepted", "evidence": {"restore_point": None}},
         {"item_id": "gm-b", "status": "accepted", "hypothesis": "h", "evidence": {
             "restore_point": None, "correctness": "c004-0000abcd", "quick": ["q1"], "formal": ["f2", "f1"],
             "code_ref": "docs/perf/versions/v002", "mechanism": None}},
         {"item_id": "kb-x", "status": "already_implemented", "evidence": {"restore_point": None}}]


def test_a_cheating_finding_on_an_experiment_rejects_its_accepted_items_and_restores_the_version_before_it():
    out = way_forward.plan([_fail("P9.sampled_values", "cheating"), _fail("P4.recomputation", "x")],
                           REGISTER[2], REGISTER, ITEMS)
    assert [key for key, _, _ in out] == ["failed", "reopen", "close_item", "restore"]
    assert out[1][2] == {"ITEM_ID": "gm-b", "NOTE": "stage5_check FAIL on v002: P9.sampled_values (cheating)"}
    closing = out[2][2]
    assert (closing["ITEM_ID"], closing["STATUS"], closing["REASON_CODE"], closing["BEST_VERSION"]) == (
        "gm-b", "rejected", "contract_violation", "v001")
    # the close cites the evidence the reopen kept: the printed command has every value (issue 38 item 1)
    assert (closing["RUN_ID"], closing["QUICK_ID"], closing["FORMAL_IDS"], closing["CODE_REF"], closing["HYPOTHESIS"]) \
        == ("c004-0000abcd", ["q1"], ["f2", "f1"], "docs/perf/versions/v002", "h")
    assert out[3][2] == {"VERSION_ID": "v001"}


def test_the_items_restore_point_wins_over_the_version_recorded_before():
    items = [{**ITEMS[1], "evidence": {"restore_point": "v000"}}, ITEMS[2]]
    out = way_forward.plan([_fail("P5.tests_pass", "precision_failure")], REGISTER[2], REGISTER, items)
    assert out[-1] == ("restore", out[-1][1], {"VERSION_ID": "v000"})


def test_the_baseline_itself_at_fault_stops_and_a_cheating_finding_outside_the_code_gates_is_no_rejection():
    assert [k for k, _, _ in way_forward.plan([_fail("P9.tail_inputs", "cheating")], REGISTER[0], REGISTER, ITEMS)] \
        == ["stop"]
    out = way_forward.plan([_fail("P3.baseline_origin", "cheating")], REGISTER[1], REGISTER, ITEMS)
    assert [k for k, _, _ in out] == ["stop"] and "P3.baseline_origin (cheating)" in out[0][1]


def test_failed_evidence_names_the_step_that_rebuilds_it():
    for check, key in (("P1.citations", "report"), ("P4.recomputation", "final_compare"),
                       ("P8.terminal_evidence", "terminal"), ("P10.reproduced", "final_formal")):
        out = way_forward.plan([_fail(check, "performance_evidence_invalid")], REGISTER[1], REGISTER, ITEMS)
        assert [k for k, _, _ in out] == ["failed", key], check


def test_the_rejected_items_of_a_version_are_its_linked_items_closed_rejected():
    items = [{**ITEMS[1], "status": "rejected"}, ITEMS[2]]
    assert candidates.rejected_items(REGISTER[2], items) == ["gm-b"]
    assert candidates.rejected_items(REGISTER[1], items) == []
