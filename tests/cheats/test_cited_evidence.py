"""What the ledger and the report cite still loads and matches (issue 28 item 6, the evidence half):
P7.cited_evidence and P1.cited_evidence on the small shipped operator, one change at a time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cheat_pipeline as pipeline
from perftune.verify import cited_evidence


@pytest.fixture(scope="module")
def delivered(tmp_path_factory) -> Path:
    op = pipeline.small_softmax(tmp_path_factory.mktemp("cited"))
    pipeline.deliver(op, {})
    return op


@pytest.fixture
def op(delivered, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(delivered, target, symlinks=True)
    return target


def checks(verdict: dict) -> set[tuple[str, str]]:
    return {(f["check"], f["category"]) for f in verdict["failures"]}


def test_the_clean_delivery_cites_intact_evidence(op):
    assert cited_evidence.ledger_problems(op) == []
    report = (op / "PERFORMANCE_REPORT.md").read_text()
    assert "docs/perf/round_001" in report
    assert cited_evidence.report_problems(op, ["docs/perf/round_001", "docs/perf/round_002"]) == []


def test_a_raw_sample_edited_in_a_cited_round_is_named_by_the_ledger_and_the_report(op):
    samples = sorted((op / "docs/perf/round_001").rglob("samples.csv"))[0]
    lines = samples.read_text().splitlines()
    cells = lines[1].split(",")
    cells[3] = f"{float(cells[3]) * 2:.3f}"
    samples.write_text("\n".join([lines[0], ",".join(cells)]) + "\n")
    code, verdict = pipeline.check(op, remeasure=False)
    assert {("P7.cited_evidence", "performance_item_coverage_invalid"),
            ("P1.cited_evidence", "performance_evidence_invalid")} <= checks(verdict), verdict["failures"]


def test_a_correctness_record_rewritten_for_other_code_is_named(op):
    run_id = json.loads((op / "docs/perf/ledger.json").read_text())["items"][0]["evidence"]["correctness"]
    path = op / "docs/perf/correctness" / f"{run_id}.json"
    record = json.loads(path.read_text())
    record["executable_sha256"] = "0" * 64
    path.write_text(json.dumps(record, indent=2, sort_keys=True))
    found = cited_evidence.ledger_problems(op)
    assert found and all(run_id in msg for msg in found), found


def test_the_sweep_records_what_it_examined_and_p7_names_a_cited_path_that_is_gone_or_changed(op):
    """#27 Deliver 6: a placeholder left in a path (`terminal_evidence_BEST_ROUND.json`) can no longer be
    cited: `ledger.py sweep` refuses a path that does not exist; what it cites is recorded (files by sha256,
    rounds by collection id) and P7.cited_paths fails when it goes or changes."""
    from conftest import assert_one_line_error, run_script
    from perftune.decide import citations
    led = json.loads((op / "docs/perf/ledger.json").read_text())
    assert led["sweep"]["examined_files"] == [{"path": "docs/perf/ledger.json"}]   # living: exists only
    assert cited_evidence.path_problems(op) == []
    profile = op / "docs/perf/bottleneck/terminal_evidence_round_001.json"
    profile.parent.mkdir(parents=True)
    profile.write_text('{"cases": []}\n')
    refused = run_script("ledger.py", "sweep", "--op-dir", op, "--scope", "s", "--examined", "docs/perf/round_001",
                         "docs/perf/bottleneck/terminal_evidence_BEST_ROUND.json")
    assert_one_line_error(refused, 2, "terminal_evidence_BEST_ROUND.json", "does not exist")
    assert json.loads((op / "docs/perf/ledger.json").read_text()) == led          # nothing written
    proc = run_script("ledger.py", "sweep", "--op-dir", op, "--scope", "s", "--examined", "docs/perf/ledger.json",
                      "docs/perf/round_001", "docs/perf/bottleneck/terminal_evidence_round_001.json", "--json")
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)["sweep"]["examined_files"]
    assert records[1]["collection_id"] and len(records[2]["sha256"]) == 64
    assert cited_evidence.path_problems(op) == []
    profile.write_text('{"cases": [1]}\n')
    assert [m for m in cited_evidence.path_problems(op) if "terminal_evidence_round_001.json" in m and "changed" in m]
    profile.unlink()
    code, verdict = pipeline.check(op, remeasure=False)
    assert ("P7.cited_paths", "performance_item_coverage_invalid") in checks(verdict), verdict["failures"]
    assert citations.missing(op, ["docs/perf/nope"], "x") == ["x cites docs/perf/nope: it does not exist"]
