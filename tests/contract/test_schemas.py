"""Every schema in schemas/: a real artefact written by the scripts validates, and broken copies do not.

Valid examples are the files the real pipeline wrote (the session's demo deliverable, plus one run of
env_check.py and orchestrator_state.py); invalid examples remove each required field in turn, put a
wrong-typed value in each required field, and replace the document by a list.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLE, run_script
from perftune.contract import schemas


V1_MANIFEST = {"schema_version": 1, "cases": [{"id": "a", "shape": "[4,8]", "dtype": "fp16", "test_function": "test_a"}],
               "optimization_target": {"case_ids": ["a"], "selection_mode": "single_p0"}}
WRONG_VALUES = ({"__wrong__": True}, "wrong", 1.5, None, [], -1)


def _first(folder: Path, pattern: str) -> Path:
    return sorted(folder.glob(pattern))[0]


@pytest.fixture(scope="module")
def artefacts(demo_delivery, tmp_path_factory) -> dict[str, object]:
    op, _ = demo_delivery
    perf = op / "docs/perf"
    files = {
        "performance_cases": op / "PERFORMANCE_CASES.json",
        "golden_perf_report": op / "GOLDEN_PERF_REPORT.json",
        "collection": perf / "round_001/collection.json",
        "measurement": _first(perf / "round_001", "case_*/measurement.json"),
        "evidence_status": _first(perf / "round_001", "case_*/repeat_001/evidence_status.json"),
        "quick_performance": _first(perf / "quick", "quick_*/quick_performance.json"),
        "quick_compare": _first(perf / "quick", "quick_*/quick_compare.json"),
        "performance": op / "performance.json",
        "ledger": perf / "ledger.json", "candidates": perf / "candidates.json",
        "selection": perf / "selection.json", "stage5_check": perf / "stage5_check.json",
        "terminal_evidence": perf / "terminal_evidence.json", "platform": perf / "platform_cpu.json",
        "correctness": _first(perf / "correctness", "c*.json"),
    }
    out = {name: json.loads(path.read_text()) for name, path in files.items()}
    work = tmp_path_factory.mktemp("schemas")
    run_script("env_check.py", "--output", work / "env_report.json", "--timeout", "5")
    out["env_report"] = json.loads((work / "env_report.json").read_text())
    state_op = work / "custom" / "softmax"
    state_op.mkdir(parents=True)
    (state_op / "SPEC.md").write_text("# SPEC\n")
    proc = run_script("orchestrator_state.py", "init", "--op-dir", state_op, "--actor", "pypto-pro-op-orchestrator")
    assert proc.returncode == 0, proc.stderr
    out["orchestrator_state"] = json.loads((state_op / ".orchestrator_state.json").read_text())
    out["performance_cases_v1"] = V1_MANIFEST
    for name, file in (("kb_selection", "KB_SELECTION.json"), ("design_bindings", "DESIGN_BINDINGS.json"),
                       ("kb_usage", "KB_USAGE.json")):
        out[name] = json.loads((EXAMPLE / file).read_text())
    out["module_interfaces"] = yaml.safe_load((EXAMPLE / "module_interfaces.yaml").read_text())
    checked = work / "checked" / "softmax"
    shutil.copytree(EXAMPLE, checked, ignore=shutil.ignore_patterns("variants", "__pycache__", "docs"))
    proc = run_script("validate_stage.py", "3", "--op-dir", checked)
    assert proc.returncode == 0, proc.stdout
    out["stage_check"] = json.loads((checked / "docs/stages/stage3_check.json").read_text())
    return out


def test_every_schema_has_a_real_example_here():
    assert sorted(schemas.available()) == sorted([
        "candidates", "collection", "correctness", "design_bindings", "env_report", "evidence_status",
        "golden_perf_report", "kb_selection", "kb_usage", "ledger", "measurement", "module_interfaces",
        "orchestrator_state", "performance", "performance_cases", "performance_cases_v1", "platform",
        "quick_compare", "quick_performance", "selection", "stage5_check", "stage_check", "terminal_evidence"])


@pytest.mark.parametrize("name", schemas.available())
def test_each_shipped_schema_is_a_valid_draft_2020_12_schema(name):
    from jsonschema import Draft202012Validator
    Draft202012Validator.check_schema(json.loads(schemas.schema_path(name).read_text()))  # raises SchemaError


@pytest.mark.parametrize("name", schemas.available())
def test_real_artefact_validates(artefacts, name):
    assert schemas.errors(artefacts[name], name) == []


@pytest.mark.parametrize("name", schemas.available())
def test_each_required_field_is_enforced(artefacts, name):
    valid = artefacts[name]
    required = schemas.validator(name).schema.get("required", [])
    assert required, f"{name} declares no required fields"
    for field in required:
        broken = copy.deepcopy(valid)
        broken.pop(field, None)
        assert schemas.errors(broken, name), f"{name}: missing {field!r} accepted"


@pytest.mark.parametrize("name", schemas.available())
def test_wrong_types_are_rejected(artefacts, name):
    valid = artefacts[name]
    assert schemas.errors([valid], name)
    for field in schemas.validator(name).schema.get("required", []):
        rejected = []
        for value in WRONG_VALUES:
            broken = copy.deepcopy(valid)
            broken[field] = value
            rejected.append(bool(schemas.errors(broken, name)))
        assert sum(rejected) >= len(WRONG_VALUES) - 2, f"{name}.{field} accepts too many wrong-typed values"
