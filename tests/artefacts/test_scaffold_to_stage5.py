"""Acceptance of issue #19: a scaffolded operator is refused until filled, then every stage check
PASSes, the orchestrator walks Stages 1-5 on those checks, and a real Stage 5 run on it PASSes.

The Stage 5 scripts consume what the planner and the mathematician wrote: ``ledger.py init``
enumerates the planner-format KB_SELECTION obligation, ``collect_golden_reference.py`` builds its
inputs with the golden's ``golden_cases``. ``complete_stage 5`` is refused without a stage5-check
PASS and refused again when a checked file changes afterwards.
"""

from __future__ import annotations

import json

from conftest import assert_one_line_error, run_script
from fill_rmsnorm import CASES, fill
import stage5_run

ACTOR = ("--actor", "pypto-pro-op-orchestrator")


def state(op, action, *flags, code=0):
    proc = run_script("orchestrator_state.py", action, "--op-dir", op, *ACTOR, *flags)
    assert proc.returncode == code, proc.stderr
    return proc


def check(op, stage):
    return run_script("validate_stage.py", str(stage), "--op-dir", op)


def test_scaffold_filled_checked_orchestrated_and_stage5_passes(tmp_path):
    made = run_script("new_operator.py", "--op", "rmsnorm", "--dir", tmp_path / "custom", "--json")
    assert made.returncode == 0, made.stderr
    op = tmp_path / "custom" / "rmsnorm"
    assert len(json.loads(made.stdout)["files"]) == 13 and (op / "sources/README.md").is_file()  # + sources stub
    assert_one_line_error(run_script("new_operator.py", "--op", "rmsnorm", "--dir", tmp_path / "custom"), 2,
                          "already exists")
    for stage in (1, 2, 3, 4):
        refused = check(op, stage)
        assert refused.returncode == 1 and "scaffold placeholder" in refused.stdout, refused.stdout
    verdict = json.loads((op / "docs/stages/stage4_check.json").read_text())
    assert verdict["verdict"] == "FAIL" and "kb_selection_invalid" in verdict["categories"]

    fill(op)
    state(op, "init")
    for stage in (1, 2, 3):
        assert check(op, stage).returncode == 0, check(op, stage).stdout
        state(op, "complete_stage", "--stage", str(stage))
    state(op, "plan_stage4", "--module-count", "0", "--is-fusion", "false")
    passed = check(op, 4)
    assert passed.returncode == 0 and "Stage 4 check PASSED." in passed.stdout, passed.stdout
    state(op, "complete_stage", "--stage", "4")
    state(op, "confirm_stage5_entry", "--authorization", "autonomous", "--evidence", "do everything, no questions",
          "--target-case-ids", *CASES, "--selection-mode", "all_p0_no_questions")
    state(op, "start_stage", "--stage", "5")
    assert_one_line_error(run_script("orchestrator_state.py", "complete_stage", "--op-dir", op, *ACTOR,
                                     "--stage", "5"), 2, "guard:complete_stage.check_pass", "does not exist")

    code, verdict = stage5_run.run(op, list(CASES), "rmsnorm_kernel", ["kb-rmsnorm-accum-fp32"])
    assert code == 0 and verdict["verdict"] == "PASS", verdict.get("failures") or verdict
    assert next(g for g in verdict["gates"] if g["id"] == "IN")["status"] == "PASS"
    ledger = json.loads((op / "docs/perf/ledger.json").read_text())
    assert [i["item_id"] for i in ledger["items"]] == ["kb-rmsnorm-accum-fp32"]
    golden = json.loads((op / "GOLDEN_PERF_REPORT.json").read_text())
    assert sorted(c["id"] for c in golden["cases"]) == sorted(CASES)

    test_file = op / "test_rmsnorm.py"
    original = test_file.read_bytes()
    test_file.write_bytes(original + b"\n# edited after the check\n")
    assert_one_line_error(run_script("orchestrator_state.py", "complete_stage", "--op-dir", op, *ACTOR,
                                     "--stage", "5"), 2, "guard:complete_stage.check_pass", "test_rmsnorm.py changed")
    test_file.write_bytes(original)
    done = json.loads(state(op, "complete_stage", "--stage", "5", "--json").stdout)["state"]
    assert done["stage_status"]["5"] == "completed"
