"""Case routing: at most three cases of the same operator type and bound, best evidence first."""

import json

import pytest

from conftest import assert_one_line_error, run_script
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
    assert proc.returncode == 0 and proc.stdout.startswith("no case of op_type 'softmax'") and "attention" in proc.stdout
    proc = run_script("cases.py", "--op-type", "matmul", "--bound", "compute")
    assert proc.returncode == 0 and [ln.split()[0] for ln in proc.stdout.splitlines() if ln.startswith("case-")] == ["case-pypto-03", "case-peer-02"]
    assert_one_line_error(run_script("cases.py", "--op-type", "matmul", "--bound", "mixed"), 2, "bound family")
    assert_one_line_error(run_script("cases.py", "--op-type", "matmul", "--bound", "compute", "--limit", "0"), 2, "--limit")
