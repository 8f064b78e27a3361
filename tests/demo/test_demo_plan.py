"""demo_plan: the demo's plan parsing and summary (pure)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import EXAMPLE
from perftune.demo import plan as demo_plan
from perftune.errors import ContractError

PLAN = json.loads((EXAMPLE / "variants" / "variants.json").read_text())


def test_the_shipped_plan_parses_and_covers_the_example_sources():
    plan = demo_plan.parse_plan(PLAN)
    assert [e.version_id for e in plan.experiments] == ["v1_fp32_accum", "v2_inplace", "v3_row_blocks", "v4_rowloop"]
    shipped = ["kb-softmax-output-by-kernel", "kb-softmax-accum-fp32", "general-07", "general-13", "general-18",
               "general-19", "card-vec-01", "template-row-block"]
    assert demo_plan.unplanned(plan, [{"item_id": i} for i in shipped]) == []
    assert demo_plan.unplanned(plan, [{"item_id": i} for i in [*shipped, "general-99"]]) == ["general-99"]
    twin = next(c for c in plan.closures if c.item_id == "template-row-block")
    assert twin.same_as == "general-13" and twin.status is None
    assert len(plan.sweep_findings) == 3


def test_plan_refuses_a_field_the_run_ignores_a_duplicate_id_and_a_closure_with_both_forms():
    bad = copy.deepcopy(PLAN)
    bad["variants"][1]["parent"] = "v1_fp32_accum"     # each experiment runs on the current best
    with pytest.raises(ContractError, match="variants\\[1\\].parent: is not a field of an experiment"):
        demo_plan.parse_plan(bad)
    bad = copy.deepcopy(PLAN)
    bad["variants"][1]["version_id"] = "v1_fp32_accum"
    with pytest.raises(ContractError, match="variants\\[1\\].version_id: 'v1_fp32_accum' duplicates"):
        demo_plan.parse_plan(bad)
    bad = copy.deepcopy(PLAN)
    bad["closures"][0]["same_as"] = "general-13"
    with pytest.raises(ContractError, match="exactly one of status / same_as"):
        demo_plan.parse_plan(bad)
    for closure, needle in (({"note": "n", "status": "not_applicable"}, "exactly one of item_id / match"),
                            ({"item_id": "x", "match": {"keyword": "k"}, "note": "n", "status": "s"}, "item_id / match"),
                            ({"match": {"title": "k"}, "note": "n", "status": "s"}, "closures\\[0\\].match"),
                            ({"match": {}, "note": "n", "status": "s"}, "is not a rule"),
                            ({"match": {"gate": " "}, "note": "n", "status": "s"}, "match.gate: is missing or empty"),
                            ({"item_id": "x", "note": "n", "status": "s", "why": "?"}, "closures\\[0\\].why")):
        with pytest.raises(ContractError, match=needle):
            demo_plan.parse_plan({**PLAN, "closures": [closure]})
    bad = copy.deepcopy(PLAN)
    bad["variants"][0]["hypothesis"] = " "
    with pytest.raises(ContractError, match="hypothesis"):
        demo_plan.parse_plan(bad)


def test_the_demo_has_no_decision_or_value_of_its_own():
    # one owner: the flow asks next_step (perf_next) for every step; it carries no value between steps
    assert not hasattr(demo_plan, "acceptance")
    flow = (Path(demo_plan.__file__).parent / "flow.py").read_text()
    assert "next_step.next_steps(" in flow
    for gone in ("d.values", "BASELINE_ROUND=", "BEST_ROUND", "promote", "d.best"):
        assert gone not in flow, gone


def test_summary_and_its_lines():
    perf = {"per_case": [{"case": "c0", "baseline_us": 10.0, "final_us": 5.0, "speedup": 2.0,
                          "speedup_ci": [1.9, 2.1], "verdict": "faster"}],
            "suite": {"mean_case_speedup": 2.0, "ci": [1.9, 2.1]}}
    result = demo_plan.summary(perf, {"chosen": "v2", "reason": "top"}, {"primary_failure_category": None},
                               "/r.md", "Stage 5 verification PASSED.")
    assert result["chosen_version"] == "v2" and result["cases"][0]["speedup_ci"] == [1.9, 2.1]
    text = "\n".join(demo_plan.summary_lines(result))
    assert "c0" in text and "2.000  [1.900, 2.100]  faster" in text
    assert "chosen version: v2 (top)" in text and "Stage 5 verification PASSED." in text


def test_items_a_failing_gate_closes_need_no_plan_entry(op_dir):
    """With the plugin's references on cpu, the plan covers only what close_gated leaves (SKILL step 9):
    an item whose recorded gate fails here is not asked of the plan, every other one is."""
    import shutil
    from conftest import freeze_example, run_script
    from perftune.demo import flow
    shutil.rmtree(op_dir / "sources")
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)["items"]
    ids = [i["item_id"] for i in items]
    plan = demo_plan.parse_plan({**PLAN, "variants": [], "closures": []})
    left = flow.unplanned(op_dir, plan, items)
    assert "kb-softmax-output-by-kernel" in left and "card-cube-01" not in left and len(left) < len(items) / 2
    assert sorted(demo_plan.unplanned(plan, items)) == sorted(ids)   # what the demo asked for before: all
    # a plan written before the freeze: one experiment, one closure by id, the rest by rule
    ruled = demo_plan.parse_plan({**PLAN, "variants": [PLAN["variants"][0]], "closures": [
        {"item_id": "general-12", "status": "not_applicable", "note": "by id"},
        {"match": {"source_kind": "kb_selected"}, "status": "already_implemented", "note": "kb"},
        {"match": {"gate": "bound", "keyword": "SCALAR_candidate"}, "status": "not_applicable", "note": "scalar"},
        {"match": {"keyword": "tile"}, "same_as": "general-18", "note": "a tile size"},
        {"match": {"source_kind": "general_method"}, "status": "not_applicable", "note": "other methods"},
        {"match": {"source_kind": "knowledge_card"}, "status": "not_applicable", "note": "cards"},
        {"match": {"source_kind": "template"}, "status": "not_applicable", "note": "templates"}]})
    by = {i["item_id"]: (ruled.closure_for(i) or demo_plan.Closure(None, "-")).note for i in items}
    assert by["general-12"] == "by id" and by["kb-softmax-accum-fp32"] == "kb"
    assert by["general-01"] == "scalar"                      # gates.bound 'scalar_candidate', before 'other methods'
    assert by["general-03"] == "a tile size"                 # 'Enlarge the legal tile per iteration'
    assert by["general-06"] == "other methods" and by["card-pipe-04"] == "cards"
    assert by["card-mem-01"] == "a tile size"                # "... with a rotating tile group": the first rule wins
    assert by["template-cv-preload-pipeline"] == "templates" and by["template-multi-row-task"] == "scalar"
    assert by[PLAN["variants"][0]["item_id"]] == "-"         # an experiment's item is tried, never closed by rule
    assert flow.unplanned(op_dir, ruled, items) == []


def test_a_failed_verdict_line_names_every_failed_check_id_once_in_order():
    from perftune.demo import flow
    verdict = {"verdict": "FAIL", "primary_failure_category": "measurement_invalid",
               "failures": [{"check": "P3.launch_count", "category": "measurement_invalid"},
                            {"check": "P10.remeasure", "category": "measurement_invalid"},
                            {"check": "P3.launch_count", "category": "measurement_invalid"},
                            {"gate": "P6", "category": "measurement_invalid"}]}   # a finding without a check id
    assert flow.verdict_failed(verdict) == ("Stage 5 verification FAILED: P3.launch_count, P10.remeasure, P6 "
                                            "(failure_category measurement_invalid).")
