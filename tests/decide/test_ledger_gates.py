"""Gates: items enumerated from the shipped references carry their gates; not_applicable names one."""

import json

from conftest import ROOT, assert_one_line_error, freeze_example, run_script
from perftune.contract import schemas
from perftune.decide import ledger_sources

REFS = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references"


def test_gates_are_parsed_from_markdown_bullets_and_template_headers():
    md = "# x\n\n## Gates\n- **platform**: 950 only\n- **bound**: wait\n- **other**: ignored\n\n## Action\n- **dtype**: no\n"
    assert ledger_sources.parse_gates(md) == (("platform", "950 only"), ("bound", "wait"))
    tmpl = "# template-x: y\n# Gates: platform=950; dtype=any;\n#        shape=s; bound=wait.\n# Source: a/b:c\nimport x\n"
    assert ledger_sources.parse_gates(tmpl) == (("platform", "950"), ("dtype", "any"), ("shape", "s"), ("bound", "wait"))
    assert ledger_sources.parse_gates("# general-01\nno gates here\n") == ()


def test_not_applicable_needs_a_gate_reference(op_dir):
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", str(op_dir), "--sources-dir", str(REFS), "--json")
    assert proc.returncode == 0, proc.stderr
    led = json.loads((op_dir / "docs/perf/ledger.json").read_text())
    schemas.validate(led, "ledger")
    presets = [i for i in led["items"] if i["source_kind"] != "kb_selected"]
    assert len(presets) == 31 + 19 + 6 and all(set(i["gates"]) == set(ledger_sources.GATE_KEYS) for i in presets)
    base = ["ledger.py", "update", "--op-dir", str(op_dir), "--item", "card-cube-01", "--status", "not_applicable",
            "--note", "softmax has no matmul", "--applicability", "not_applicable"]
    assert_one_line_error(run_script(*base, "--grounds", "no cube work in this operator"), 2, "gate:platform")
    proc = run_script(*base, "--grounds", "gate:shape — softmax has no matmul operands")
    assert proc.returncode == 0, proc.stderr
    item = next(i for i in json.loads((op_dir / "docs/perf/ledger.json").read_text())["items"]
                if i["item_id"] == "card-cube-01")
    assert item["status"] == "not_applicable" and item["gates"]["platform"].startswith("Ascend 950PR/950DT")
