"""Case routing: at most three cases of the same operator type and bound, best evidence first."""

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, call_script, run_script
from perftune.errors import ContractError
from perftune.knowledge import cases

INDEX = """| id | title | op_type | bound | evidence_grade | lifecycle | file |
|----|-------|---------|-------|----------------|-----------|------|
| c-4 | d | matmul | compute | described | active | c-4.md |
| c-1 | a | matmul | compute | measured_third_party | active | c-1.md |
| c-3 | c | matmul | compute | measured_public_doc | active | c-3.md |
| c-2 | b | matmul | compute | measured_public_doc | active | c-2.md |
| c-5 | e | matmul | data_movement | measured_public_doc | active | c-5.md |
| c-6 | f | matmul | compute | measured_public_doc | retired | c-6.md |
"""


def test_route_keeps_same_type_and_bound_best_grade_first_at_most_three():
    rows = cases.parse_cases(INDEX)
    assert [c.case_id for c in cases.route(rows, "matmul", "compute_candidate")] == ["c-2", "c-3", "c-1"]
    assert [c.case_id for c in cases.route(rows, "MatMul", "data_movement_bound")] == ["c-5"]
    assert [c.case_id for c in cases.route(rows, "matmul", "compute", limit=9)] == ["c-2", "c-3", "c-1"]
    assert cases.route(rows, "softmax", "compute") == []


def test_unknown_bound_is_a_contract_error():
    with pytest.raises(ContractError, match="not a bound family"):
        cases.bound_family("mixed")


def test_cli_routes_the_shipped_library():
    proc = run_script("cases.py", "--op-type", "fused_prolog", "--bound", "data_movement_candidate", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["bound"] == "data_movement" and [c["case_id"] for c in out["cases"]] == ["case-pypto-08"]
    assert "matmul" in out["known_op_types"]
    proc = run_script("cases.py", "--op-type", "softmax", "--bound", "compute")
    assert proc.returncode == 0 and "\nno case of op_type 'softmax'" in proc.stdout and "attention" in proc.stdout
    assert proc.stdout.startswith("card-")                     # the compute cards come first, never a dead end
    proc = run_script("cases.py", "--op-type", "matmul", "--bound", "compute")
    assert proc.returncode == 0 and [ln.split()[0] for ln in proc.stdout.splitlines() if ln.startswith("case-")] == ["case-pypto-03", "case-peer-02"]
    assert_one_line_error(run_script("cases.py", "--op-type", "matmul", "--bound", "mixed"), 2, "bound family")
    assert_one_line_error(run_script("cases.py", "--op-type", "matmul", "--bound", "compute", "--limit", "0"), 2, "--limit")


DIAGNOSIS_LABELS = ("aicpu_bound", "insufficient_evidence", "occupancy_bound", "cube_bound", "vector_bound",
                    "mte2_bound", "mte3_bound", "data_movement_bound", "scalar_bound", "launch_bound",
                    "latency_bound", "no_dominant_pipe")


@pytest.mark.parametrize("label", DIAGNOSIS_LABELS)
def test_every_diagnosis_label_routes_to_a_card_method_or_template(label):
    """No dead end (issue 37): the shipped tables give every label at least one enumerable source."""
    proc = call_script("cases.py", "--op-type", "elementwise", "--bound", label, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sources"], label
    assert all(s["bound_hint"] in out["families"] for s in out["sources"])
    assert all(Path(s["path"]).is_file() for s in out["sources"])


def test_nothing_dominates_reaches_overlap_and_block_dim_and_the_elementwise_cases():
    out = json.loads(call_script("cases.py", "--op-type", "elementwise", "--bound", "launch_bound", "--json").stdout)
    assert out["families"] == ["wait", "any"]
    ids = [s["item_id"] for s in out["sources"]]
    assert {"card-pipe-01", "general-05", "card-scalar-04", "general-18"} <= set(ids)
    assert ids.index("card-pipe-01") < ids.index("general-18")            # first family first
    assert [c["case_id"] for c in out["cases"]] == ["case-peer-05", "case-peer-04"]
    occ = json.loads(call_script("cases.py", "--op-type", "elementwise", "--bound", "occupancy_bound", "--json").stdout)
    assert [c["case_id"] for c in occ["cases"]] == ["case-peer-04"]
    assert {s["bound_hint"] for s in occ["sources"]} == {"any"}


def test_sources_follow_the_index_lifecycle_and_eligibility():
    texts = {"knowledge_card": "| id | title | lifecycle | optimization_eligible | file | bound_hint |\n|---|---|---|---|---|---|\n"
             "| k-1 | a | active | yes | a.md | wait |\n| k-2 | b | draft | no | b.md | wait |\n"
             "| k-3 | c | active | no | c.md | wait |\n| k-4 | d | active | yes | d.md | compute |\n"}
    rows = cases.parse_sources(texts)
    assert [r.item_id for r in cases.sources(rows, "latency_bound")] == ["k-1"]
    assert [r.item_id for r in cases.sources(rows, "vector_bound")] == ["k-4"]
    assert cases.sources(rows, "scalar_bound") == []
