"""The ledger cannot lie (#27 Deliver 1): `accepted` needs the frozen rule's accept; P7 recomputes every decision.

Two real formal rounds of the example (cpu, 6 repeats), whose raw samples are then rewritten to a
known truth: one target case faster, the other slower, the suite CI above 1 — the conflict where the
old SKILL text said "accepted, slower case disclosed, no veto" and the frozen rule
``suite_ci_low_above_one_no_slower_target`` says ``rejected/slower``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error, calibrate_on, freeze_example, run_script

from perftune.decide import item_decision
from test_compare_perf_cli import set_samples

FAST, SLOW = "r64_c4096_fp16", "r64_c4096_fp32"
NOISE = [0.0, 1.0, -1.0, 0.5, -0.5, 0.25]


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    op = tmp_path_factory.mktemp("decision") / "softmax"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "softmax", op,
                    ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    freeze_example(op, repeats=6, warmup=1)
    proc = run_script("check_correctness.py", "--op-dir", op, "--json")   # the record as the product writes it
    assert proc.returncode == 0, proc.stderr
    assert run_id(op) == json.loads(proc.stdout)["run_id"]
    for _ in range(2):
        proc = run_script("collect_perf.py", "formal", "--op-dir", op)
        assert proc.returncode == 0, proc.stderr
    assert run_script("ledger.py", "init", "--op-dir", op).returncode == 0
    return op


def run_id(op: Path) -> str:
    """The fixture's correctness run (`ledger.py update --status accepted` re-judges its probes: P9 early)."""
    [record] = (op / "docs/perf/correctness").glob("c*.json")
    return record.stem


def truth(op: Path, fast: float, slow: float) -> None:
    """round_001 (best) every case 100 us; round_002 (candidate) FAST at ``fast`` and SLOW at ``slow`` us."""
    man = json.loads((op / "PERFORMANCE_CASES.json").read_text())
    for case in (c["id"] for c in man["cases"]):
        set_samples(op, "round_001", case, [100 + n for n in NOISE])
        value = {FAST: fast, SLOW: slow}.get(case, 100.0)
        set_samples(op, "round_002", case, [value + n * value / 100 for n in NOISE])
    calibrate_on(op)   # independent rounds: sized verdicts need a calibration (docs/statistics.md)


@pytest.fixture
def op(collected, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(collected, target)
    return target


def accept(op: Path, *extra: str):
    return run_script("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status", "accepted",
                      "--correctness", run_id(op), "--formal", "round_002", "round_001", "--note", "x", *extra)


def test_a_slower_target_case_vetoes_acceptance_in_compare_and_ledger(op):
    truth(op, fast=50.0, slow=130.0)
    proc = run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_001", "--candidate",
                      "round_002", "--json")
    assert proc.returncode == 1, proc.stderr        # a target case is slower
    perf = json.loads(proc.stdout)
    assert perf["suite"]["ci"][0] > 1.0               # the old text would have accepted this
    decided = perf["item_acceptance"]
    assert (decided["status"], decided["reason_code"], decided["slower_target_cases"]) == ("rejected", "slower", [SLOW])
    before = (op / "docs/perf/ledger.json").read_bytes()
    assert_one_line_error(accept(op), 2, "accepted refused", "rejected/slower",
                          "suite_ci_low_above_one_no_slower_target")
    assert (op / "docs/perf/ledger.json").read_bytes() == before       # nothing written
    proc = run_script("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status", "rejected",
                      "--reason-code", "slower", "--correctness", run_id(op), "--formal", "round_002",
                      "round_001", "--note", "vetoed by the slower target case")
    assert proc.returncode == 0, proc.stderr
    led = json.loads((op / "docs/perf/ledger.json").read_text())
    assert item_decision.decision_problems(op, led) == []
    # a hand-edited ledger that claims acceptance is caught by the recomputation (P7)
    item = next(i for i in led["items"] if i["item_id"] == "general-18")
    item["status"], item["reason_code"] = "accepted", None
    problems = item_decision.decision_problems(op, led)
    assert len(problems) == 1 and "general-18: recorded accepted/None" in problems[0]
    assert "recomputes to rejected/slower" in problems[0]


def test_an_accepting_compare_allows_accepted_and_a_single_round_names_no_compare(op):
    truth(op, fast=50.0, slow=80.0)
    assert_one_line_error(run_script("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status",
                                     "accepted", "--correctness", run_id(op), "--formal", "round_002",
                                     "--note", "x"), 2, "names no compare", "CANDIDATE_ROUND BEST_ROUND")
    proc = accept(op)
    assert proc.returncode == 0, proc.stderr
    led = json.loads((op / "docs/perf/ledger.json").read_text())
    assert item_decision.decision_problems(op, led) == []
    item = next(i for i in led["items"] if i["item_id"] == "general-18")
    item["status"], item["reason_code"] = "rejected", "no_stable_gain"      # a gain hidden as "no gain"
    assert "recomputes to accepted/None" in item_decision.decision_problems(op, led)[0]


def test_a_rejected_code_keeps_its_judgement_under_another_item_id(op):
    """Issue 35 item 9: the code general-18's compare rejected (round_002) is measured again (round_001 holds
    the same code) and, after noise, offered as general-19: refused at the update and found by P7."""
    truth(op, fast=50.0, slow=130.0)
    proc = run_script("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status", "rejected",
                      "--reason-code", "slower", "--correctness", run_id(op), "--formal", "round_002",
                      "round_001", "--note", "vetoed by the slower target case")
    assert proc.returncode == 0, proc.stderr
    man = json.loads((op / "PERFORMANCE_CASES.json").read_text())
    for case in (c["id"] for c in man["cases"]):   # the retry's luck: now the other round is the fast one
        set_samples(op, "round_002", case, [200 + n for n in NOISE])
        set_samples(op, "round_001", case, [100 + n for n in NOISE])
    before = (op / "docs/perf/ledger.json").read_bytes()
    retry = ("ledger.py", "update", "--op-dir", op, "--item", "general-19", "--status", "accepted", "--correctness",
             run_id(op), "--formal", "round_001", "round_002", "--note", "retry")
    assert_one_line_error(run_script(*retry), 2, "P7.judged_code", "general-18 had rejected")
    assert (op / "docs/perf/ledger.json").read_bytes() == before       # nothing written
    led = json.loads(before)
    assert item_decision.judged_problems(op, led) == []
    item = next(i for i in led["items"] if i["item_id"] == "general-19")   # the same acceptance written by hand
    item["status"], item["evidence"]["formal"] = "accepted", ["round_001", "round_002"]
    item["history"].append({"revision": led["revision"] + 1, "to": "accepted", "from": "pending"})
    (found,) = item_decision.judged_problems(op, led)
    assert found[0] == "general-19" and found[3] == f"accepted at revision {led['revision'] + 1} as general-19"
    # a rejection recorded after the acceptance is conservative: not a problem
    rejected = next(i for i in led["items"] if i["item_id"] == "general-18")
    for entry in rejected["history"]:
        entry["revision"] += 100 if entry.get("to") == "rejected" else 0
    assert item_decision.judged_problems(op, led) == []
