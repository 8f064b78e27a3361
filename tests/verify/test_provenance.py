"""The baseline is what Stage 4 delivered (issue 28 item 4): the baseline round's sources and the
frozen inputs against the last stage4-check PASS (docs/stages/stage4_check.json)."""

from __future__ import annotations

import json
from pathlib import Path

from perftune.verify import provenance

A, B = "a" * 64, "b" * 64


def stage4(op: Path, verdict: str = "PASS", **files: str) -> None:
    (op / "docs/stages").mkdir(parents=True, exist_ok=True)
    inputs = {name: {"path": name, "sha256": sha, "size_bytes": 1} for name, sha in files.items()}
    (op / "docs/stages/stage4_check.json").write_text(json.dumps({"verdict": verdict, "inputs": inputs}))


def baseline(**files: str) -> dict:
    return {"collection_id": "compare_1", "source_files": [{"path": n, "sha256": s, "size_bytes": 1}
                                                           for n, s in files.items()]}


def test_without_a_stage4_record_the_origin_is_unverified_and_nothing_fails(tmp_path):
    problems, note = provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": A}))
    assert problems == [] and note["baseline_origin"] == "unverified" and "standalone" in note["reason"]
    stage4(tmp_path, "FAIL", **{"test_op.py": B})
    problems, note = provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": A}))
    assert problems == [] and note["baseline_origin"] == "unverified"


def test_the_baseline_code_must_be_the_code_stage4_validated(tmp_path):
    stage4(tmp_path, **{"test_op.py": A})
    assert provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": A}))[1]["baseline_origin"] == "verified"
    problems, note = provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": B}))
    assert [(p[0], p[1], p[3], p[4]) for p in problems] == [("P3.baseline_origin", "cheating", A, B)]
    assert note["baseline_origin"] == "mismatch"


def test_a_module_stage4_never_saw_leaves_the_origin_unverified_for_it(tmp_path):
    stage4(tmp_path, **{"test_op.py": A})
    problems, note = provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": A, "helper.py": B}))
    assert problems == [] and note["baseline_origin"] == "unverified"
    assert note["not_validated_by_stage4"] == ["helper.py"]


def test_a_frozen_input_other_than_stage4s_blocks_the_contract(tmp_path):
    stage4(tmp_path, **{"SPEC.md": A, "test_op.py": A})
    record = tmp_path / "FROZEN_INPUTS.json"
    record.write_text(json.dumps({"files": {"SPEC.md": A, "PERFORMANCE_CASES.json": B}, "schema_version": 1}))
    assert provenance.frozen_input_problems(tmp_path) == []
    record.write_text(json.dumps({"files": {"SPEC.md": B}, "schema_version": 1}))
    found = provenance.frozen_input_problems(tmp_path)
    assert [(p[0], p[1]) for p in found] == [("P2.stage4_inputs", "stage5_contract_blocked")] and "SPEC.md" in found[0][2]


def test_an_orchestrated_run_without_the_stage4_record_is_blocked(tmp_path):
    (tmp_path / ".orchestrator_state.json").write_text("{}")
    problems, note = provenance.baseline_problems(tmp_path, baseline(**{"test_op.py": A}))
    assert [(p[0], p[1]) for p in problems] == [("P3.baseline_origin", "stage5_contract_blocked")]
    assert note["baseline_origin"] == "unverified"
