"""A FAIL of each gate names its check id, what the check expected and what it found (issue 29).

The small real deliverable of test_stage5_contract_history (examples/softmax, one P0 case, five
repeats, through the real scripts) is broken one gate at a time, as the existing stage5 tests do;
stage5_check.py's text verdict and its stage5_check.json must both carry the catalogued check id,
``expected`` and ``actual`` of that gate's finding.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_script
from perftune.measure import evidence
from perftune.verify import checks
from test_stage5_contract_history import CASE, deliver, small_softmax


@pytest.fixture(scope="module")
def delivered(tmp_path_factory) -> Path:
    op = small_softmax(tmp_path_factory.mktemp("check_ids"))
    deliver(op)
    return op


@pytest.fixture
def op(delivered, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(delivered, target, symlinks=True)
    return target


def edit_json(path: Path, change) -> None:
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True))


def forge_final(op: Path, factor: float) -> None:
    """Scale the final round's candidate samples, re-seal and re-compare: self-consistent evidence (a factor far
    beyond what load can swing a re-measurement by: R2 compares the fastest samples)."""
    perf = json.loads((op / "performance.json").read_text())
    final = evidence.find_round(op, perf["final_collection_id"])
    case_dir = final / evidence.case_dir_name(CASE)
    values = []
    for arm in sorted(case_dir.glob("repeat_*/candidate")):
        lines = (arm / "samples.csv").read_text().splitlines()
        cells = lines[1].split(",")
        cells[3] = f"{float(cells[3]) * factor:.3f}"
        values.append(float(cells[3]))
        (arm / "samples.csv").write_text(f"{lines[0]}\n{','.join(cells)}\n")
        edit_json(arm / "evidence_status.json", lambda s, v=values[-1]: s.update(duration_us=v))
    edit_json(case_dir / "measurement.json", lambda m: m.update(duration_samples_us=values))
    edit_json(final / "collection.json", lambda c: c.update(evidence_seal=evidence.evidence_seal(final)))
    proc = run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(perf["baseline_round"]).name,
                      "--candidate", final.name, "--json")
    assert proc.returncode in (0, 1), proc.stderr


# gate -> (how the deliverable is broken, extra stage5_check flags, the check, a needle of expected, of actual)
BREAKS = {
    "IN": (lambda op: ((op / ".orchestrator_state.json").write_text("{}"), (op / "EXPLORE_REPORT.md").unlink()), (),
           "IN.stage_inputs", "Stage 1-4 input", "EXPLORE_REPORT.md"),
    "S4": (lambda op: (op / "test_softmax.py").write_text((op / "test_softmax.py").read_text()
                                                          + '\nDEVICE = "npu:1"\n'), (), "S4.device", "no hard-coded",
           "npu:1"),
    "P1": (lambda op: (op / "perf_report.md").unlink(), (), "P1.files", "regular, non-empty", "missing"),
    "P2": (lambda op: None, ("--selection-mode", "user_selected"), "P2.dispatch_target", "single_p0",
           "user_selected"),
    "P3": (lambda op: edit_json(op / "performance.json", lambda p: p.update(
        final_collection_id=p["baseline_collection_id"])), (), "P3.distinct_rounds", "two rounds", "both"),
    "P4": (lambda op: (op / "perf_report.md").write_text((op / "perf_report.md").read_text() + "\nfaster!\n"), (),
           "P4.rendering", "rendering", "edited by hand"),
    "P5": (lambda op: shutil.rmtree(op / "docs/perf/correctness"), ("--no-rerun",), "P5.correctness_run",
           "a run of sha256", "none"),
    "P6": (lambda op: edit_json(op / "performance.json", lambda p: p.update(
        valid_for_target_met=not p["valid_for_target_met"])), (), "P6.target_status", "valid_for_target_met = ",
           "valid_for_target_met = "),
    "P7": (lambda op: edit_json(op / "docs/perf/selection.json", lambda s: s.update(chosen="v999")), (),
           "P7.selection", "recomputed choice", "v999"),
    "P8": (lambda op: (op / "docs/perf/terminal_evidence.json").unlink(), (), "P8.terminal_evidence",
           "evaluable terminal evidence", "terminal_evidence.json"),
    "P9": (lambda op: ((op / "softmax_golden_cpu.py").write_text((op / "softmax_golden_cpu.py").read_text()
                                                                 + "\n# loosened\n"), (op / "FROZEN_INPUTS.json").unlink()),
           (), "P9.precision_gate", "frozen precision gate", "changed after freeze"),  # as test_stage5_cheats does
    "P10": (lambda op: forge_final(op, 0.05), ("--remeasure",), "P10.reproduced", "reproduced", "re-measured"),
}


@pytest.mark.parametrize("gate", sorted(BREAKS, key=lambda g: checks.GATE_IDS.index(g) if g in checks.GATE_IDS else -1))
def test_a_failed_gate_shows_its_check_id_expected_and_actual(op, gate):
    brk, flags, check, in_expected, in_actual = BREAKS[gate]
    brk(op)
    flags = flags if "--remeasure" in flags else flags + ("--no-remeasure",)
    mode = () if "--selection-mode" in flags else ("--selection-mode", "single_p0")
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", CASE, *mode, *flags)
    assert "Traceback" not in proc.stderr, proc.stderr
    verdict = json.loads((op / "docs/perf/stage5_check.json").read_text())
    assert proc.returncode != 0 and verdict["verdict"] == "FAIL"
    found = [f for f in verdict["failures"] if f["check"] == check]
    assert found, (check, [(f["check"], f["message"]) for f in verdict["failures"]])
    first = found[0]
    assert first["gate"] == checks.BY_ID[check].gate and first["expected"] and first["actual"], first
    assert in_expected in first["expected"] and in_actual in first["actual"], first
    assert all(f["check"] in checks.BY_ID for f in verdict["failures"])
    text = proc.stdout
    assert f"[{check}] {first['category']}: " in text, text
    assert f"expected: {first['expected']}; actual: {first['actual']}" in text, text
    failed_line = next(line for line in text.splitlines() if line.startswith("Failed checks: "))
    assert f"{first['gate']}: " in failed_line and check in failed_line, failed_line
