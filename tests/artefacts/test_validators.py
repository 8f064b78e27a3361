"""Each stage validator rejects each kind of malformed artefact with one one-line problem.

Every case starts from a copy of examples/softmax (a complete, valid Stage 1-4 folder), breaks one
artefact in one way and validates at the stage that owns the artefact: the report must FAIL, and
one problem must name the file and the fault on a single line with the expected category.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import EXAMPLE, assert_one_line_error, run_script
from perftune.artefacts import validate
from perftune.contract import schemas
from perftune.verify import stage_check


def edit(name, old, new, count=1):
    def apply(op):
        text = (op / name).read_text()
        assert old in text, (name, old)
        (op / name).write_text(text.replace(old, new, count))
    return apply


def edit_json(name, change):
    def apply(op):
        obj = json.loads((op / name).read_text())
        change(obj)
        (op / name).write_text(json.dumps(obj))
    return apply


def write(name, data):
    def apply(op):
        (op / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return apply


def blank(name, heading):
    """Keep ``heading`` but leave only an HTML comment in its body."""
    def apply(op):
        text = (op / name).read_text()
        start = text.index(heading) + len(heading)
        (op / name).write_text(text[:start] + "\n<!-- nothing yet -->\n\n" + text[text.index("\n## ", start) + 1:])
    return apply


def remove(name):
    return lambda op: (op / name).unlink()


def req(obj, i=1):
    return obj["classes"][0]["required_constraints"][i]


CASES = [
    # Stage 1: SPEC.md, EXPLORE_REPORT.md, PRO_MATERIAL_INDEX.md, MEMORY.md, KB_SELECTION.json
    (1, remove("SPEC.md"), "SPEC.md", "is missing", "missing_file"),
    (1, write("SPEC.md", b"\xff\xfe bad"), "SPEC.md", "not UTF-8", "incomplete_structure"),
    (1, edit("SPEC.md", "## 2. Precision gate", "## 2. Tolerances"), "SPEC.md", "'precision'", "incomplete_structure"),
    (1, edit("SPEC.md", "| fp16 | yes", "| float7 | yes"), "SPEC.md", "performance table row 3", "incomplete_structure"),
    (1, edit("SPEC.md", "| yes |", "| no |", 4), "SPEC.md", "has no P0 case", "incomplete_structure"),
    (1, edit("EXPLORE_REPORT.md", "## 7. Precision risks", "## Precision risks"), "EXPLORE_REPORT.md", "need 1..10",
     "incomplete_structure"),
    (1, blank("EXPLORE_REPORT.md", "## 3. API mapping"), "EXPLORE_REPORT.md",
     "section 3", "incomplete_structure"),
    (1, edit("EXPLORE_REPORT.md", "unsupported_blockers: none", "unsupported_blockers: fused exp"),
     "EXPLORE_REPORT.md", "unresolved: fused exp", "unsupported"),
    (1, edit("PRO_MATERIAL_INDEX.md", "## C. Knowledge-base entries", "## Knowledge"), "PRO_MATERIAL_INDEX.md",
     "§C", "incomplete_structure"),
    (1, edit("PRO_MATERIAL_INDEX.md", "| softmax | KB_SELECTION.json", "| other | KB_SELECTION.json"),
     "PRO_MATERIAL_INDEX.md", "'softmax' is not listed", "kb_selection_invalid"),
    (1, edit("MEMORY.md", "## Open questions\n- none", "## Open questions\n- Q1: which dtype first?"),
     "MEMORY.md", "is unresolved", "incomplete_structure"),
    (1, edit("MEMORY.md", "## User statements", "## Users"), "MEMORY.md", "'user statements'", "incomplete_structure"),
    (1, write("KB_SELECTION.json", "{not json"), "KB_SELECTION.json", "malformed JSON", "incomplete_structure"),
    (1, edit_json("KB_SELECTION.json", lambda o: o["classes"][0].pop("reason")), "KB_SELECTION.json", "reason",
     "kb_selection_invalid"),
    (1, edit_json("KB_SELECTION.json", lambda o: req(o).update(kind="nice_to_have")), "KB_SELECTION.json",
     "nice_to_have", "kb_selection_invalid"),
    (1, edit_json("KB_SELECTION.json", lambda o: req(o).update(reference="kb/missing.md#x")), "KB_SELECTION.json",
     "kb/missing.md does not exist", "kb_selection_invalid"),
    (1, edit_json("KB_SELECTION.json", lambda o: req(o).update(case_scope="r1_c1_fp32")), "KB_SELECTION.json",
     "unknown case ids", "kb_selection_invalid"),
    (1, edit_json("KB_SELECTION.json", lambda o: req(o).update(req_id="output-by-kernel")), "KB_SELECTION.json",
     "listed twice", "kb_selection_invalid"),
    # Stage 2: the goldens
    (2, edit("softmax_golden.py", "def golden_cases(", "def golden_cases_v2("), "softmax_golden.py",
     "golden_cases: is not defined", "golden_failure"),
    (2, edit("softmax_golden.py", "    return out\n", "    return out[:3]\n"), "softmax_golden.py",
     "built ids", "golden_failure"),
    (2, edit("softmax_golden.py", "    return True", "    raise ValueError('golden drifted')"),
     "softmax_golden.py", "golden drifted", "golden_failure"),
    (2, edit("softmax_golden.py", "def _make_inputs(shape, dtype, device=None, seed=SEED):",
             "def _make_inputs(shape, dtype, device=None):"), "softmax_golden.py", "lack ['seed']", "golden_failure"),
    (2, edit("softmax_golden.py", "import numpy as np", "import numpy as np\nimport pypto_pro.language as pl"),
     "softmax_golden.py", "pypto_pro", "golden_failure"),
    (2, edit("softmax_golden_cpu.py", "def softmax_golden_cpu(", "def reference("), "softmax_golden_cpu.py",
     "softmax_golden_cpu: is not defined", "golden_failure"),
    (2, edit("softmax_golden.py", "def _get_device():", "def _get_device(:"), "softmax_golden.py",
     "syntax error", "incomplete_structure"),
    # Stage 3: DESIGN.md, DESIGN_BINDINGS.json, module_interfaces.yaml
    (3, edit("DESIGN.md", "## §5 Core split", "## Core split"), "DESIGN.md", "need §0..§10", "design_violation"),
    (3, edit("DESIGN.md", "Single core", "TODO decide the core split"), "DESIGN.md", "TBD/TODO", "design_violation"),
    (3, edit("DESIGN.md", "| r1024_c256_fp16 |", "| r9_c9_fp16 |"), "DESIGN.md", "['r1024_c256_fp16']",
     "design_violation"),
    (3, edit("DESIGN.md", "## §9 Overall assessment\n", "## §9 Overall assessment\n❌ tails\n"), "DESIGN.md", "❌",
     "design_violation"),
    (3, edit_json("DESIGN_BINDINGS.json", lambda o: o["bindings"].pop(1)), "DESIGN_BINDINGS.json",
     "'accum-fp32') is not bound", "design_violation"),
    (3, edit_json("DESIGN_BINDINGS.json", lambda o: o["bindings"][0].update(req_id="made-up")),
     "DESIGN_BINDINGS.json", "not a selected requirement", "kb_selection_invalid"),
    (3, edit_json("DESIGN_BINDINGS.json", lambda o: o["bindings"][0].update(design_ref="DESIGN.md#§11")),
     "DESIGN_BINDINGS.json", "design_ref", "design_violation"),
    (3, edit_json("DESIGN_BINDINGS.json", lambda o: o["vector_selection"].append(
        {"step": "exp", "implementation": "tile_op", "api_sequence": ["pl.exp"], "decision_reason": "default_vf"})),
     "DESIGN_BINDINGS.json", "tile_op needs", "design_violation"),
    (3, edit("module_interfaces.yaml", "name: softmax_wrapper", "name: softmax_entry"), "module_interfaces.yaml",
     "is not softmax_wrapper", "signature_mismatch"),
    (3, edit("module_interfaces.yaml", "module_count: 0", "module_count: 2"), "module_interfaces.yaml",
     "module_count 2", "design_violation"),
    (3, write("module_interfaces.yaml", "wrapper: [unclosed"), "module_interfaces.yaml", "malformed YAML",
     "incomplete_structure"),
    # Stage 4: test_<op>.py, KB_USAGE.json
    (4, edit("test_softmax.py", "def test_r512_c1024_fp32():", "def check_r512_c1024_fp32():"), "test_softmax.py",
     "no test function test_r512_c1024_fp32", "incomplete_structure"),
    (4, edit("module_interfaces.yaml", "    - name: x", "    - name: x\n    - name: axis\n      optional: true"),
     "test_softmax.py", "differs from module_interfaces.yaml", "signature_mismatch"),
    (4, edit_json("KB_USAGE.json", lambda o: o["usages"].pop(1)), "KB_USAGE.json", "'accum-fp32') has no usage",
     "kb_usage_invalid"),
    (4, edit_json("KB_USAGE.json", lambda o: o["usages"][0].update(code_ref="test_softmax.py::fast_kernel")),
     "KB_USAGE.json", "does not resolve", "kb_usage_invalid"),
    (4, edit_json("KB_USAGE.json", lambda o: o["usages"][0].update(status="STATUS: VALIDATED")),
     "KB_USAGE.json", "VALIDATED", "kb_usage_invalid"),
    (4, edit_json("KB_USAGE.json", lambda o: o["usages"][2].update(status="implemented")),
     "KB_USAGE.json", "not allowed for a precondition", "kb_usage_invalid"),
]


@pytest.mark.parametrize("stage, breaks, file, needle, category", CASES,
                         ids=[f"s{c[0]}-{c[2]}-{re.sub(r'[^a-z]+', '_', c[3].lower())[:30]}" for c in CASES])
def test_a_malformed_artefact_is_one_named_problem(op_dir, stage, breaks, file, needle, category):
    breaks(op_dir)   # the unbroken folder passes: test_the_example_operator_passes_every_stage
    report = validate.validate(op_dir, stage)
    assert report.verdict == "FAIL"
    hits = [p for p in report.problems if p.file == file and needle in p.line()]
    assert hits, [p.line() for p in report.problems]
    assert hits[0].category == category and "\n" not in hits[0].line()


def test_a_golden_needing_an_absent_module_is_an_environment_block(op_dir):
    edit("softmax_golden.py", "import numpy as np", "import numpy as np\nimport torch_npu_not_here")(op_dir)
    report = validate.validate(op_dir, 2)
    assert report.problems == [] and report.verdict == "FAIL"
    assert "torch_npu_not_here" in report.env_errors[0]
    proc = run_script("validate_stage.py", "2", "--op-dir", op_dir)
    assert proc.returncode == 3 and "env_error" in proc.stdout


def test_cli_writes_the_check_and_exits_by_verdict(op_dir):
    proc = run_script("validate_stage.py", "3", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stdout
    verdict = json.loads(proc.stdout)
    assert verdict == json.loads((op_dir / "docs/stages/stage3_check.json").read_text())
    schemas.validate(verdict, "stage_check")
    assert {"SPEC.md", "DESIGN.md", "softmax_golden.py", "module_interfaces.yaml"} <= set(verdict["inputs"])
    remove("MEMORY.md")(op_dir)
    proc = run_script("validate_stage.py", "1", "--op-dir", op_dir)
    assert proc.returncode == 1 and proc.stderr == ""
    assert "  MEMORY.md: -: is missing (or not a regular file) (" in proc.stdout
    assert_one_line_error(run_script("validate_stage.py", "5", "--op-dir", op_dir), 2, "invalid choice")
    assert_one_line_error(run_script("validate_stage.py", "1", "--op-dir", op_dir / "nope"), 2, "is not a directory")


def test_stage5_names_every_unusable_stage1_to_4_input(op_dir):
    assert stage_check.stage5_inputs(op_dir) == []
    remove("MEMORY.md")(op_dir)
    edit("DESIGN.md", "## §5 Core split", "## Core split")(op_dir)
    found = stage_check.stage5_inputs(op_dir)
    assert {c for c, _ in found} == {"stage5_contract_blocked"}
    assert {m.split(":")[0] for _, m in found} == {"MEMORY.md", "DESIGN.md"}


def test_stage5_check_names_the_blocked_input(op_dir):
    (op_dir / ".orchestrator_state.json").write_text("{}")   # an orchestrated run: every input is mandatory
    remove("EXPLORE_REPORT.md")(op_dir)
    proc = run_script("stage5_check.py", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--no-rerun", "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 2 and verdict["primary_failure_category"] == "stage5_contract_blocked"
    found = [f for f in verdict["failures"] if f["gate"] == "IN"]
    assert found and found[0]["message"].startswith("EXPLORE_REPORT.md: -: is missing"), found
    (op_dir / ".orchestrator_state.json").unlink()   # standalone perf-tune: the inputs are optional
    proc = run_script("stage5_check.py", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "--selection-mode", "user_selected", "--no-rerun", "--json")
    row = next(g for g in json.loads(proc.stdout)["gates"] if g["id"] == "IN")
    assert row["status"] == "not_applicable" and not [f for f in json.loads(proc.stdout)["failures"] if f["gate"] == "IN"]


def test_the_example_operator_passes_every_stage(tmp_path):
    op = tmp_path / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "__pycache__", "docs"))
    assert validate.validate(op, 4).verdict == "PASS"
