"""The ledger as a specification: enumeration, transitions, closure problems (pure, in memory)."""

import pytest

from perftune.decide import ledger
from perftune.contract import schemas
from perftune.errors import ContractError
from perftune.decide.ledger import DiskFacts, ItemChange
from perftune.decide.ledger_sources import Enumeration, SourceItem, parse_index, parse_kb_selection

CASES = ("a", "b")
SHA = "0" * 64
AT = "2025-01-01T00:00:00Z"

KB = {"classes": [{"class_id": "softmax",
                   "optional_patterns": [{"req_id": "p1", "kind": "validation_scope", "reference": "r", "text": "t"}],
                   "required_constraints": [
                       {"req_id": "accum-fp32", "kind": "obligation", "reference": "SPEC.md#2", "text": "fp32"},
                       {"req_id": "one-launch", "kind": "precondition", "reference": "SPEC.md#1", "text": "once"},
                       {"req_id": "out", "kind": "obligation", "reference": "SPEC.md#1", "text": "y", "case_scope": "b"}]}]}

INDEX = """# methods

| id | title | lifecycle | optimization_eligible | file | anchor | case_scope | expected_metric |
|----|-------|-----------|-----------------------|------|--------|------------|-----------------|
| general-18 | narrow | active | yes | g18.md | #g18 | all | bytes |
| general-21 | dma | active | no | g21.md | #g21 | all | overlap |
| general-04 | recip | deprecated | yes | g04.md | | all | div |
| general-13 | tile | Active | Yes | g13.md |  | a, b | traffic |

after the table
"""


def src(item_id, kind="general_method"):
    return SourceItem(item_id, kind, item_id, "f.md", "#" + item_id, SHA, CASES, "metric")


def enum(*items):
    records = {k: {"path": k, "sha256": SHA, "size_bytes": 1}
               for k in ("kb_selected", "general_method", "knowledge_card", "template")}
    return Enumeration(tuple(items), records)


def fresh():
    return ledger.init_ledger(enum(src("kb-x-1", "kb_selected"), src("general-18"), src("card-1", "knowledge_card"),
                                   src("template-1", "template")), at=AT, actor="t")


def close_all(led):
    for item in led["items"]:
        if not ledger.is_terminal(item["status"]):
            status = "already_implemented" if item["source_kind"] == "kb_selected" else "not_applicable"
            led = ledger.update_item(led, item["item_id"], ItemChange(status=status, note="grounds"), at=AT, actor="t")
    return led


FACTS = DiskFacts({"round_002": "complete", "cid-2": "complete", "round_003": "failed"},
                  frozenset({"quick_001"}), frozenset({"c001-00000000"}))


def test_kb_obligations_only_in_file_order_with_identity_anchor():
    items = parse_kb_selection(KB, file="KB_SELECTION.json", sha256=SHA, case_ids=CASES)
    assert [i.item_id for i in items] == ["kb-softmax-accum-fp32", "kb-softmax-out"]
    assert items[0].anchor == "classes[softmax].required_constraints[accum-fp32]@SPEC.md#2"
    assert items[0].case_scope == CASES and items[1].case_scope == ("b",)


@pytest.mark.parametrize("bad, field", [
    ({"classes": {}}, "classes"),
    ({"classes": [{"class_id": "../x"}]}, "class_id"),
    ({"classes": [{"class_id": "c", "required_constraints": [{"req_id": "r", "kind": "must", "reference": "x",
                                                              "text": "t"}]}]}, "kind"),
    ({"classes": [{"class_id": "c", "required_constraints": [{"req_id": "r", "kind": "obligation",
                                                              "reference": "x", "text": "t", "case_scope": "zz"}]}]},
     "case_scope"),
])
def test_kb_selection_malformed_is_a_contract_error(bad, field):
    with pytest.raises(ContractError) as err:
        parse_kb_selection(bad, file="KB_SELECTION.json", sha256=SHA, case_ids=CASES)
    assert field in err.value.line()


def test_index_enumerates_active_eligible_rows_only():
    rows = parse_index(INDEX)
    assert [(r.item_id, r.file, r.anchor) for r in rows] == [("general-18", "g18.md", "#g18"),
                                                              ("general-13", "g13.md", "#general-13")]
    assert rows[1].case_scope == "a, b" and rows[1].expected_metric == "traffic"


def test_index_without_required_columns_is_refused():
    with pytest.raises(ContractError, match="missing columns"):
        parse_index("| id | title |\n|---|---|\n| a | b |\n")
    with pytest.raises(ContractError, match="no markdown table"):
        parse_index("no table here")


def test_init_creates_pending_items_with_history_and_valid_schema():
    led = fresh()
    schemas.validate(led, "ledger")
    assert led["revision"] == 1 and [i["status"] for i in led["items"]] == ["pending"] * 4
    assert led["items"][0]["history"] == [{"revision": 1, "at": AT, "actor": "t", "action": "init", "from": None,
                                           "to": "pending", "note": "enumerated from f.md##kb-x-1"}]
    assert led["sources"]["kb_selected"]["count"] == 1


def test_status_vocabulary_depends_on_the_source_kind():
    led = fresh()
    with pytest.raises(ContractError, match="not allowed for kb_selected"):
        ledger.update_item(led, "kb-x-1", ItemChange(status="accepted", note="n"), at=AT, actor="t")
    with pytest.raises(ContractError, match="not allowed for general_method"):
        ledger.update_item(led, "general-18", ItemChange(status="implemented", note="n"), at=AT, actor="t")


def test_closing_needs_grounds_and_evidence():
    led = fresh()
    with pytest.raises(ContractError, match="without grounds"):
        ledger.update_item(led, "general-18", ItemChange(status="not_applicable"), at=AT, actor="t")
    with pytest.raises(ContractError, match="rejected needs a reason_code"):
        ledger.update_item(led, "general-18", ItemChange(status="rejected", note="n"), at=AT, actor="t")
    with pytest.raises(ContractError, match="needs evidence.quick"):
        ledger.update_item(led, "general-18", ItemChange(status="rejected", reason_code="quick_not_promoted",
                                                         note="n"), at=AT, actor="t")
    with pytest.raises(ContractError, match="accepted needs a correctness run"):
        ledger.update_item(led, "general-18", ItemChange(status="accepted", formal=("round_002",), note="n"),
                           at=AT, actor="t")
    done = ledger.update_item(led, "general-18", ItemChange(status="rejected", reason_code="quick_not_promoted",
                                                            quick=("quick_001",), note="0.98x"), at=AT, actor="t")
    item = ledger.find_item(done, "general-18")
    assert (item["status"], item["reason_code"], item["evidence"]["quick"]) == ("rejected", "quick_not_promoted",
                                                                               ["quick_001"])
    assert item["history"][-1] == {"revision": 2, "at": AT, "actor": "t", "action": "update", "from": "pending",
                                   "to": "rejected", "note": "0.98x"}
    assert ledger.find_item(led, "general-18")["status"] == "pending"  # edits never mutate their input


def test_terminal_changes_only_through_reopen_and_history_keeps_the_old_conclusion():
    led = ledger.update_item(fresh(), "general-18", ItemChange(status="not_applicable", note="n"), at=AT, actor="t")
    with pytest.raises(ContractError, match="use 'ledger.py reopen'"):
        ledger.update_item(led, "general-18", ItemChange(status="pending"), at=AT, actor="t")
    with pytest.raises(ContractError, match="is not terminal"):
        ledger.reopen_item(led, "card-1", note="x", by=None, at=AT, actor="t")
    led = ledger.reopen_item(led, "general-18", note="v3 changed the accumulation", by="card-1", at=AT, actor="t")
    item = ledger.find_item(led, "general-18")
    assert item["status"] == "pending" and [h["to"] for h in item["history"]] == ["pending", "not_applicable", "pending"]
    assert ledger.find_item(led, "card-1")["relations"] == [{"kind": "reopens", "item_id": "general-18"}]


def test_relations_need_known_kinds_and_existing_targets():
    led = fresh()
    with pytest.raises(ContractError, match="no item 'nope'"):
        ledger.update_item(led, "general-18", ItemChange(relations=(("overlap", "nope"),)), at=AT, actor="t")
    with pytest.raises(ContractError, match="unknown"):
        ledger.update_item(led, "general-18", ItemChange(relations=(("friend", "card-1"),)), at=AT, actor="t")
    led = ledger.update_item(led, "general-18", ItemChange(relations=(("requires", "kb-x-1"),) * 2), at=AT, actor="t")
    assert ledger.find_item(led, "general-18")["relations"] == [{"kind": "requires", "item_id": "kb-x-1"}]


def test_bottleneck_derived_only_after_every_preset_is_terminal():
    led = ledger.update_item(fresh(), "general-18", ItemChange(status="enabler", note="n"), at=AT, actor="t")
    with pytest.raises(ContractError, match="4 preset items still open"):
        ledger.add_derived(led, src("bd-1", "bottleneck_derived"), hypothesis="h", at=AT, actor="t")
    led = close_all(led)
    led = ledger.add_derived(led, src("bd-1", "bottleneck_derived"), hypothesis="exp dominates", at=AT, actor="t")
    assert ledger.find_item(led, "bd-1")["history"][0]["action"] == "add"
    with pytest.raises(ContractError, match="already exists"):
        ledger.add_derived(led, src("bd-1", "bottleneck_derived"), hypothesis="h", at=AT, actor="t")


def test_sweep_refused_while_open_and_dangling_findings_refused():
    with pytest.raises(ContractError, match="4 items still open"):
        ledger.record_sweep(fresh(), scope="s", examined=["x"], findings=[], at=AT, actor="t")
    led = close_all(fresh())
    with pytest.raises(ContractError, match="unknown target"):
        ledger.record_sweep(led, scope="s", examined=["x"], findings=[{"finding": "f", "maps_to": "zz", "note": ""}],
                            at=AT, actor="t")


def test_check_of_a_fresh_ledger_lists_every_open_item_and_the_missing_sweep():
    problems = ledger.check_ledger(fresh(), enum(src("kb-x-1", "kb_selected"), src("general-18"),
                                                 src("card-1", "knowledge_card"), src("template-1", "template")), FACTS)
    assert [(p.code, p.item_id) for p in problems] == [
        ("non_terminal", "card-1"), ("non_terminal", "general-18"), ("non_terminal", "kb-x-1"),
        ("non_terminal", "template-1"), ("sweep_missing", "-")]


def test_check_of_a_closed_ledger_is_empty_and_every_later_edit_makes_the_sweep_stale():
    sources = enum(src("kb-x-1", "kb_selected"), src("general-18"), src("card-1", "knowledge_card"),
                   src("template-1", "template"))
    led = close_all(fresh())
    led = ledger.record_sweep(led, scope="final code", examined=["round_002"], at=AT, actor="t",
                              findings=[{"finding": "exp dominates", "maps_to": "general-18", "note": "covered"},
                                        {"finding": "fp16 cast", "maps_to": "frozen_contract", "note": "SPEC dtype"}])
    assert ledger.check_ledger(led, sources, FACTS) == []
    later = ledger.update_item(led, "card-1", ItemChange(mechanism="re-read"), at=AT, actor="t")
    assert [p.code for p in ledger.check_ledger(later, sources, FACTS)] == ["sweep_stale"]


def test_check_coverage_against_the_sources_enumerated_now():
    led = close_all(fresh())
    changed = SourceItem("general-18", "general_method", "g", "f.md", "#general-18", "1" * 64, CASES, "m")
    now = enum(src("kb-x-1", "kb_selected"), changed, src("card-1", "knowledge_card"), src("new-1"))
    codes = [(p.code, p.item_id) for p in ledger.check_ledger(led, now, FACTS) if p.code != "sweep_missing"]
    assert codes == [("coverage_extra", "template-1"), ("coverage_missing", "new-1"), ("source_changed", "general-18")]


def test_check_evidence_ids_conflicts_and_reason_codes():
    led = close_all(fresh())
    led["items"][1].update(status="accepted", reason_code=None)
    led["items"][1]["evidence"].update(correctness="c009-00000000", formal=["round_003", "cid-2"], quick=["q9"])
    led["items"][2].update(status="accepted")
    led["items"][2]["evidence"].update(correctness="c001-00000000", formal=["round_002"])
    led["items"][2]["relations"].append({"kind": "conflict", "item_id": "general-18"})
    led["items"][3].update(status="rejected", reason_code=None)
    led["items"][3]["relations"].append({"kind": "covers", "item_id": "ghost"})
    sources = enum(src("kb-x-1", "kb_selected"), src("general-18"), src("card-1", "knowledge_card"),
                   src("template-1", "template"))
    found = [(p.code, p.item_id) for p in ledger.check_ledger(led, sources, FACTS)]
    assert found == [("closing_evidence", "template-1"), ("conflict_accepted", "card-1"),
                     ("correctness_missing", "general-18"), ("formal_missing", "general-18"),
                     ("quick_missing", "general-18"), ("relation_target", "template-1"), ("sweep_missing", "-")]


def test_check_flags_a_derived_item_created_while_presets_were_open():
    led = close_all(fresh())
    led = ledger.add_derived(led, src("bd-1", "bottleneck_derived"), hypothesis="h", at=AT, actor="t")
    led = ledger.reopen_item(led, "general-18", note="invalidated", by=None, at=AT, actor="t")
    led = ledger.update_item(led, "general-18", ItemChange(status="not_applicable", note="again"), at=AT, actor="t")
    sources = enum(src("kb-x-1", "kb_selected"), src("general-18"), src("card-1", "knowledge_card"),
                   src("template-1", "template"))
    assert [p.code for p in ledger.check_ledger(led, sources, FACTS)] == ["non_terminal", "sweep_missing"]
    led["items"][-1]["history"][0]["revision"] = 1  # pretend it was added at init time
    assert "derived_too_early" in [p.code for p in ledger.check_ledger(led, sources, FACTS)]
