"""The stage-check judgement behind guard:complete_stage.check_pass (pure), and its file edge."""

from __future__ import annotations

import json

import pytest

from perftune import fsio
from perftune.orchestrate import stage_gate

RECORD = {"path": "SPEC.md", "sha256": "a" * 64, "size_bytes": 3}
PASS1 = {"verdict": "PASS", "stage": 1, "operator": "softmax", "inputs": {"SPEC.md": RECORD}}
ENTRY = {"target_case_ids": ["a", "b"], "selection_mode": "user_selected"}
PASS5 = {"verdict": "PASS", "operator": "softmax", "inputs": {"manifest": RECORD},
         "target": {"case_ids": ["b", "a"], "selection_mode": "user_selected"}}


@pytest.mark.parametrize("obj, stage, stale, entry, expected", [
    (PASS1, 1, [], None, None),
    ({**PASS1, "verdict": "FAIL"}, 1, [], None, "docs/stages/stage1_check.json says FAIL, not PASS"),
    (PASS1, 2, [], None, "docs/stages/stage2_check.json is the check of stage 1"),
    ({**PASS1, "operator": "rmsnorm"}, 1, [], None,
     "docs/stages/stage1_check.json checked operator 'rmsnorm', not 'softmax'"),
    ({**PASS1, "inputs": {}}, 1, [], None, "docs/stages/stage1_check.json records no input files"),
    (PASS1, 1, ["SPEC.md"], None, "docs/stages/stage1_check.json PASSed for other files: SPEC.md changed since "
                                  "the check"),
    (PASS5, 5, [], ENTRY, None),
    ({**PASS5, "target": {"case_ids": ["a"], "selection_mode": "user_selected"}}, 5, [], ENTRY,
     "docs/perf/stage5_check.json checked target {'case_ids': ['a'], 'selection_mode': 'user_selected'}, "
     "the entry confirmation froze another"),
    ({**PASS5, "remeasure": {"status": "not_run", "default": "on"}}, 5, [], ENTRY,
     "docs/perf/stage5_check.json ran without the verifier's re-measurement (P10); run stage5_check.py with it "
     "(the default on cpu and pypto-sim; --remeasure on msprof, on the machine with the card)"),
    ({**PASS5, "remeasure": {"status": "not_run", "default": "off"}}, 5, [], ENTRY,   # msprof without --remeasure
     "docs/perf/stage5_check.json ran without the verifier's re-measurement (P10); run stage5_check.py with it "
     "(the default on cpu and pypto-sim; --remeasure on msprof, on the machine with the card)"),
    ({**PASS5, "remeasure": {"status": "not_run", "budget_s": 900}}, 5, [], ENTRY, None),   # the frozen budget
    ({**PASS5, "remeasure": {"status": "run"}}, 5, [], ENTRY, None),
])
def test_judge(obj, stage, stale, entry, expected):
    assert stage_gate.judge(obj, stage, "softmax", stale, entry) == expected


def test_check_problem_reads_the_file_and_compares_every_record(tmp_path):
    state = {"operator_name": "softmax"}
    assert stage_gate.check_problem(tmp_path, 1, state) == "docs/stages/stage1_check.json does not exist"
    (tmp_path / "SPEC.md").write_text("# SPEC\n")
    verdict = {"schema_version": 1, "stage": 1, "operator": "softmax", "verdict": "PASS",
               "checks": [{"id": "SPEC.md", "status": "PASS", "detail": "ok"}], "failures": [], "categories": [],
               "primary_failure_category": None, "inputs": {"SPEC.md": fsio.file_record(tmp_path / "SPEC.md", tmp_path)}}
    path = tmp_path / "docs/stages/stage1_check.json"
    fsio.write_json(path, verdict)
    assert stage_gate.check_problem(tmp_path, 1, state) is None
    (tmp_path / "SPEC.md").write_text("# SPEC, edited\n")
    assert "SPEC.md changed since the check" in stage_gate.check_problem(tmp_path, 1, state)
    path.write_text(json.dumps({**verdict, "verdict": "MAYBE"}))
    assert "does not match schema stage_check" in stage_gate.check_problem(tmp_path, 1, state)
    path.write_text("{")
    assert "malformed JSON" in stage_gate.check_problem(tmp_path, 1, state)
