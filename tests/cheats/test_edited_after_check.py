"""Edits after the verifier ran (issue 35 items 7 and 8), and the final round's samples rewritten before it runs
(item 5), through the real pipeline: one honest delivery and one stage5_check with the re-measurement (a PASS, the
untouched twin of every test here), then copies of it edited the way a cheating agent would.
Every consumer of ``docs/perf/stage5_check.json`` re-derives the verdict (``verify/rederive.py``):
``perf_next.py``'s ``done`` step (``rederive.done_step``) and the state machine's Stage 5 gate (``stage_gate.check_problem``). Never a
message substring: the check ids.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import cheat_pipeline as pipeline
from conftest import run_script
from perftune import fsio
from perftune.decide import candidates
from perftune.measure import evidence, round_chain
from perftune.orchestrate import stage_gate
from perftune.verify import rederive

VERDICT = "docs/perf/stage5_check.json"
STATE = {"operator_name": "softmax", "stage5_entry": {"target_case_ids": [pipeline.CASE], "selection_mode": "single_p0"}}


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """The honest twin's delivery (experiment fp32_inplace), checked by the verifier: PASS."""
    op = pipeline.small_softmax(tmp_path_factory.mktemp("edited"))
    pipeline.deliver(op, {}, experiment="fp32_inplace")
    code, found = pipeline.check(op)
    assert (code, found["verdict"]) == (0, "PASS"), found["failures"]
    return op


def copy(op: Path, folder: Path) -> Path:
    shutil.copytree(op, folder / "softmax", symlinks=True)
    return folder / "softmax"


def perf_next(op: Path) -> dict:
    """perf_next.py's ``done`` step re-derived (the corpus pipeline stops short of perf_next's own ``done``:
    tests/demo/test_perf_next.py reaches it through the CLI)."""
    return rederive.done_step(op, {"key": "done", "why": "stage5_check: PASS", "values": {}, "needs": {}})


def rewrite_records(op: Path) -> None:
    """The thorough cheater: every input record of the verdict file re-made for the files as they are now."""
    obj = json.loads((op / VERDICT).read_text())
    obj["inputs"] = {name: fsio.file_record(op / rec["path"], op) for name, rec in obj["inputs"].items()}
    (op / VERDICT).write_text(json.dumps(obj, indent=2, sort_keys=True))


def test_the_untouched_verdict_re_derives_to_pass_for_every_consumer(checked):
    got = rederive.rederive(checked)
    assert (got["verdict"], got["failures"]) == ("PASS", []), got["failures"]
    assert stage_gate.check_problem(checked, 5, STATE) is None
    done = perf_next(checked)
    assert done["key"] == "done" and done["why"].startswith("stage5_check: PASS"), done


def test_report_speedups_tripled_and_a_ledger_note_rewritten_after_the_check(checked, tmp_path):
    """Item 8: PERFORMANCE_REPORT.md's speed-ups x3 and a ledger note "5.2x, accepted" after the verifier ran;
    then the same with the verdict's input records re-made (the thorough cheater)."""
    op = copy(checked, tmp_path)
    report = op / "PERFORMANCE_REPORT.md"
    report.write_text(re.sub(r"\*\*(\d+\.\d+)\*\*", lambda m: f"**{3 * float(m.group(1)):.3f}**", report.read_text()))
    ledger = json.loads((op / "docs/perf/ledger.json").read_text())
    item = next(i for i in ledger["items"] if i["item_id"] == "bn-kernel")
    item["history"][-1]["note"] = "5.2x, accepted"
    (op / "docs/perf/ledger.json").write_text(json.dumps(ledger, indent=2))
    assert report.read_text() != (checked / "PERFORMANCE_REPORT.md").read_text()
    got = rederive.rederive(op)
    assert got["verdict"] == "FAIL" and {"P1.edited_after_check", "P1.report_rendering"} <= set(got["failed_checks"])
    rewrite_records(op)
    got = rederive.rederive(op)
    assert got["verdict"] == "FAIL" and "P1.report_rendering" in got["failed_checks"], got["failed_checks"]
    assert "P1.edited_after_check" not in got["failed_checks"]
    assert stage_gate.check_problem(op, 5, STATE) is not None
    assert perf_next(op)["key"] == "verify"


def test_a_cheat_smuggled_in_after_the_pass_with_the_records_re_made(checked, tmp_path):
    """Item 7: the files re-derive FAIL while the verdict file, its records re-made, still says PASS (the same
    file as a FAILed run's verdict edited to PASS): refused by perf_next and by the Stage 5 gate."""
    op = copy(checked, tmp_path)
    pipeline.plant_kernel(op, "precomputed_seed42")
    rewrite_records(op)
    got = rederive.rederive(op)
    assert got["verdict"] == "FAIL" and "P1.verdict_record" in got["failed_checks"], got["failed_checks"]
    assert "P1.edited_after_check" not in got["failed_checks"]
    problem = stage_gate.check_problem(op, 5, STATE)
    assert problem is not None and "P1.verdict_record" in problem
    step = perf_next(op)
    assert step["key"] == "verify" and "P1.verdict_record" in step["rederived"]["failed_checks"]


def rewrite_final(op: Path, factor: float, cpu_fields: tuple[str, ...] = ()) -> None:
    """Item 5: every candidate sample of the final round x ``factor`` (and the named harness CPU fields of its
    timed calls), re-sealed with the project's own seal function, every later round re-chained, and the files
    derived from it re-made by the scripts (compare, terminal evidence, report) and confirm.json's last attempt by
    the project's own ``evaluate_confirm`` (the corpus confirms on the final round; the SKILL's separate confirm
    round would not be rewritten at all)."""
    perf = json.loads((op / "performance.json").read_text())
    final = evidence.find_round(op, perf["final_collection_id"])
    case_dir = final / evidence.case_dir_name(pipeline.CASE)
    values = []
    for arm in sorted(case_dir.glob("repeat_*/candidate")):
        head, row = (arm / "samples.csv").read_text().splitlines()
        cells = row.split(",")
        cells[3] = f"{float(cells[3]) * factor:.3f}"
        values.append(float(cells[3]))
        (arm / "samples.csv").write_text(f"{head}\n{','.join(cells)}\n")
        edit_json(arm / "evidence_status.json", lambda s: s.update(duration_us=values[-1]))
        edit_json(arm / "attestation.json", lambda a: a["harness"].update(
            {f: round(a["harness"][f] * factor, 3) for f in cpu_fields}))
    edit_json(case_dir / "measurement.json", lambda m: m.update(duration_samples_us=values))
    later = [final] + [p for p in sorted(final.parent.glob("round_*")) if p.name > final.name]
    for number, folder in enumerate(later):
        edit_json(folder / "collection.json", lambda c: c.update(
            {**({"previous_seal": round_chain.link(folder)} if number else {}),
             "evidence_seal": evidence.evidence_seal(folder)}))
    pipeline.run(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(perf["baseline_round"]).name,
                 "--candidate", final.name, ok=(0, 1))
    pipeline.run(op, "select_best.py", "confirm", "--op-dir", op, "--final-round", final.name, ok=(0, 1, 2))
    again = candidates.evaluate_confirm(op, final.name)   # confirm's limit is reached: its record re-made by hand
    edit_json(candidates.confirm_path(op), lambda c: c["attempts"][-1].update(
        {key: again[key] for key in ("status", "refuted", "ratio")}))
    pipeline.run(op, "terminal_evidence.py", "build", "--op-dir", op, "--round", final.name)
    pipeline.run(op, "perf_report.py", "--op-dir", op)


def edit_json(path: Path, change) -> None:
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True))


def test_the_final_rounds_wall_samples_rewritten_x075_and_re_sealed_break_the_time_floor(checked, tmp_path):
    """Item 5, variant A (wall time only): a +33 % claim inside P10's load tolerance, every file consistent;
    the timed calls' own thread CPU time now exceeds their wall time (P9.time_floor), with P10 off."""
    op = copy(checked, tmp_path)
    # the rewritten round's own figure (issue 35 item 6: the delivered one may be the median attempt's instead)
    before = json.loads((op / "performance.json").read_text())["per_case"][0]["attempts"]["final_round_point"]
    rewrite_final(op, 0.75)
    after = json.loads((op / "performance.json").read_text())["per_case"][0]["attempts"]["final_round_point"]
    assert after > 1.25 * before, (before, after)
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", pipeline.CASE, "--selection-mode",
                      "single_p0", "--json", "--no-remeasure", "--no-rerun")   # P9 reads the rounds; nothing re-run
    found = json.loads(proc.stdout)
    assert (proc.returncode, found["verdict"]) == (1, "FAIL"), proc.stderr[-800:]
    assert {f["check"] for f in found["failures"]} == {"P9.time_floor"}, found["failures"]
