"""stage5_check and the history of the frozen contract, on a small real deliverable.

A copy of examples/softmax with one P0 case and five repeats runs through the real scripts
(freeze, a re-freeze with ``--replace`` before any round, golden, baseline, ledger, final, compare,
confirm, terminal evidence, report). Then, one change at a time, as an agent could do it:
the frozen re-measurement budget (issue 16), FROZEN_INPUTS.json deleted or re-made after a shell edit
of a frozen input (issue 16), and a manifest replacement after the first round (issue 15).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_script
from perftune.contract import frozen_inputs, manifest
from perftune.measure import evidence
from perftune.verify import remeasure
from cheats.cheat_pipeline import CASE, run as _run, small_softmax

KB_ITEMS = ("kb-softmax-output-by-kernel", "kb-softmax-accum-fp32")
FREEZE = ("freeze", "--target-case-ids", CASE, "--selection-mode", "single_p0", "--backend", "cpu",
          "--op-name", "softmax_kernel", "--warmup", "1", "--noise-band", "0.05")


def deliver(op: Path) -> None:
    """The perf-tune procedure with no experiment: the baseline is chosen and re-measured as final."""
    _run(op, "freeze_cases.py", *FREEZE, "--op-dir", op, "--repeats", "6")
    _run(op, "freeze_cases.py", *FREEZE, "--op-dir", op, "--repeats", "5", "--replace", "five repeats are enough")
    _run(op, "collect_golden_reference.py", "softmax_golden.py", "--function", "softmax_golden", "--factory",
         "golden_cases", "--case-manifest", "PERFORMANCE_CASES.json", "--output-dir", ".", "--device", "0",
         "--warmup", "1", "--repeats", "5", "--seed", "42", "--backend", "cpu")
    _run(op, "terminal_evidence.py", "probe", "--output", "docs/perf/platform_cpu.json")
    run_id = _run(op, "check_correctness.py", "--op-dir", op)["run_id"]
    base = Path(_run(op, "collect_perf.py", "formal", "--op-dir", op)["round"]).name
    _run(op, "ledger.py", "init", "--op-dir", op, "--actor", "test")
    for item in KB_ITEMS:
        _run(op, "ledger.py", "update", "--op-dir", op, "--actor", "test", "--item", item, "--status",
             "already_implemented", "--note", "the baseline meets it (KB_USAGE.json)", "--code-ref",
             "test_softmax.py", "--correctness", run_id, "--formal", base)
    _run(op, "select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", base,
         "--correctness", run_id, "--compliance", "stage4 gates PASS")
    _run(op, "ledger.py", "sweep", "--op-dir", op, "--actor", "test", "--scope", "the P0 case", "--examined",
         "docs/perf/ledger.json")
    _run(op, "select_best.py", "choose", "--op-dir", op)
    final = Path(_run(op, "collect_perf.py", "formal", "--op-dir", op, "--paired-with",
                      "docs/perf/versions/v000")["round"]).name
    _run(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", base, "--candidate", final, ok=(0, 1))
    _run(op, "select_best.py", "confirm", "--op-dir", op, "--final-round", final, ok=(0, 1))
    _run(op, "terminal_evidence.py", "build", "--op-dir", op, "--round", final)
    _run(op, "perf_report.py", "--op-dir", op)


def check(op: Path, *extra: str) -> tuple[int, dict]:
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode",
                      "single_p0", "--json", *extra)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def delivered(tmp_path_factory) -> tuple[Path, int, dict]:
    op = small_softmax(tmp_path_factory.mktemp("history"))
    deliver(op)
    code, verdict = check(op)   # with the re-measurement (frozen budget: the default)
    return op, code, verdict


@pytest.fixture
def op(delivered, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(delivered[0], target, symlinks=True)
    return target


def p2_blocked(op: Path, needle: str) -> dict:
    code, verdict = check(op, "--no-remeasure")
    found = [f for f in verdict["failures"] if f["gate"] == "P2" and f["category"] == "stage5_contract_blocked"]
    assert any(needle in f["message"] for f in found), (needle, verdict["failures"])
    assert (code, verdict["primary_failure_category"]) == (2, "stage5_contract_blocked")
    return verdict


def test_the_clean_deliverable_with_an_early_replacement_passes(delivered):
    op, code, verdict = delivered
    assert (code, verdict["verdict"], verdict["failures"]) == (0, "PASS", [])
    history = json.loads((op / "docs/perf/manifest_history.json").read_text())
    assert [e["reason"] for e in history["entries"]] == ["five repeats are enough"]
    assert "frozen_inputs" in json.loads((op / "docs/perf/round_001/collection.json").read_text())


# --- the re-measurement budget is frozen (issue 16) ---

def test_the_remeasurement_budget_is_frozen_with_a_default_and_no_verifier_flag(delivered, op):
    frozen = json.loads((op / "PERFORMANCE_CASES.json").read_text())["protocol"]
    assert frozen["remeasure_budget_s"] == 900.0
    note = delivered[2]["remeasure"]
    assert (note["status"], note["budget_s"]) == ("run", 900.0)
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode",
                      "single_p0", "--remeasure-budget-s", "0.001")
    assert_one_line_error(proc, 2, "--remeasure-budget-s")


def test_editing_the_frozen_budget_after_the_results_blocks_the_contract(op):
    path = op / "PERFORMANCE_CASES.json"
    obj = json.loads(path.read_text())
    obj["protocol"]["remeasure_budget_s"] = 0.001       # so that P10 would be skipped
    path.write_text(json.dumps(obj, indent=2, sort_keys=True))
    code, verdict = check(op)
    assert (code, verdict["primary_failure_category"]) == (2, "stage5_contract_blocked"), verdict["failures"]
    assert "PERFORMANCE_CASES.json" in json.dumps(verdict["failures"])
    assert verdict.get("remeasure", {}).get("status") != "run"


def test_a_small_frozen_budget_skips_the_remeasurement_and_says_so(op):
    man = manifest.load_manifest(op / "PERFORMANCE_CASES.json")
    tiny = dataclasses.replace(man, protocol=dataclasses.replace(man.protocol, remeasure_budget_s=0.001))
    perf = json.loads((op / "performance.json").read_text())
    base, final = (evidence.load_round(op, perf[k]) for k in ("baseline_collection_id", "final_collection_id"))
    targets = man.target_case_ids
    calls = man.protocol.warmup + man.protocol.repeats
    arms = [(final.cases[c].samples_us, final.cases[c].baseline_samples_us if final.paired else
             base.cases[c].samples_us) for c in targets]
    expected = sum((sum(a) / len(a) + sum(b) / len(b)) * calls / 1e6 for a, b in arms)
    assert remeasure.estimate_s(man, base, final, targets) == pytest.approx(expected) and expected > 0.001
    # collection.json is outside the evidence seal: a year-long "round" must not skip the re-measurement
    final.collection["created_at"] = "2025-01-01T00:00:00Z"
    assert remeasure.estimate_s(man, base, final, targets) == pytest.approx(expected)
    problems, note = remeasure.run(op, tiny, perf, base, final)
    assert problems == [] and note["status"] == "not_run" and note["budget_s"] == 0.001
    assert "frozen budget protocol.remeasure_budget_s" in note["reason"]


def test_a_manifest_frozen_before_the_budget_field_takes_the_default(op):
    obj = json.loads((op / "PERFORMANCE_CASES.json").read_text())
    del obj["protocol"]["remeasure_budget_s"]
    proto = manifest.parse_manifest(obj).protocol
    assert proto.remeasure_budget == 900.0 and "remeasure_budget_s" not in proto.as_dict()


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_freeze_refuses_a_budget_that_is_not_a_positive_number_of_seconds(tmp_path, value):
    op = small_softmax(tmp_path)
    proc = run_script("freeze_cases.py", *FREEZE, "--op-dir", op, "--remeasure-budget-s", value)
    assert_one_line_error(proc, 2, "--remeasure-budget-s")
    assert not (op / "PERFORMANCE_CASES.json").exists()


# --- FROZEN_INPUTS.json must exist and be the one every round recorded (issue 16) ---

def test_a_deleted_frozen_input_record_blocks_the_contract(op):
    (op / "FROZEN_INPUTS.json").unlink()
    p2_blocked(op, "FROZEN_INPUTS.json is missing")


def test_a_frozen_input_edited_and_its_record_remade_after_the_baseline_is_named(op):
    spec = op / "SPEC.md"
    spec.write_text(spec.read_text() + "\nThe precision gate may be relaxed later.\n")
    refused = run_script("freeze_cases.py", "validate", "--op-dir", op)   # the script-time check names it
    assert refused.returncode == 2 and "SPEC.md" in refused.stderr, refused.stderr
    (op / "FROZEN_INPUTS.json").unlink()                          # an agent re-makes the record ...
    frozen_inputs.record(op)                                      # ... with the library's own function
    assert run_script("freeze_cases.py", "validate", "--op-dir", op).returncode == 0   # scripts are satisfied
    p2_blocked(op, "FROZEN_INPUTS.json was rewritten after round_001")


def test_a_record_missing_while_a_round_was_collected_is_named(op):
    edit = op / "docs/perf/round_001/collection.json"
    obj = json.loads(edit.read_text())
    del obj["frozen_inputs"]
    edit.write_text(json.dumps(obj, indent=2, sort_keys=True))
    p2_blocked(op, "rounds ['round_001'] recorded no FROZEN_INPUTS.json")


# --- a manifest replacement must precede every round (issue 15) ---

def test_a_replacement_after_the_first_round_fails_even_with_the_same_content(op, tmp_path):
    """The rounds are moved aside so that freeze_cases.py accepts --replace, then put back."""
    aside = tmp_path / "aside"
    aside.mkdir()
    perf = op / "docs/perf"
    for path in [*perf.glob("round_*"), perf / "quick"]:
        if path.exists():
            shutil.move(str(path), str(aside / path.name))
    _run(op, "freeze_cases.py", *FREEZE, "--op-dir", op, "--repeats", "5", "--replace", "late fix")
    for path in aside.iterdir():
        shutil.move(str(path), str(perf / path.name))
    for name in ("GOLDEN_PERF_REPORT.json", "GOLDEN_PERF_REPORT.md"):   # the golden moved with the old manifest
        shutil.move(str(perf / "manifest_history/002" / name), str(op / name))
    p2_blocked(op, "manifest replacement 2 ('late fix'")


def test_a_deleted_manifest_history_is_named(op):
    (op / "docs/perf/manifest_history.json").unlink()
    p2_blocked(op, "manifest_history.json is missing")
