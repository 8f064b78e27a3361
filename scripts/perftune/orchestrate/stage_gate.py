"""What a stage transition needs beyond the state file: the stage check and the Stage 5 entry.

- ``complete_stage N`` is accepted only while the stage's check file says PASS for the files as
  they are now: ``docs/stages/stage<N>_check.json`` (``validate_stage.py N``, N = 1..4) or
  ``docs/perf/stage5_check.json`` (``stage5_check.py``). Every file record in its ``inputs`` must
  still match the file on disk; Stage 5's check must also be for the recorded entry target and
  must have run the verifier's re-measurement (P10), unless the frozen budget skipped it. The file is
  the agent's to edit, so Stage 5's verdict is re-derived too (``verify/rederive.py``: the recomputing
  gates re-run, P10 from its cited archive): a FAIL edited to PASS, or a report or ledger edited after
  the check with the records rewritten, is refused with the re-derived checks.
- ``start_stage 5`` needs the entry confirmation (OR-5): who authorised it (the user asked for
  performance work, authorised autonomous execution, or answered the entry question), the user's
  words verbatim, and the frozen target (``confirm_stage5_entry``).

:func:`judge` and :func:`confirm_stage5_entry` are pure; :func:`check_problem` reads the files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from ..errors import PerftuneError, ContractError

AUTHORIZATIONS = ("requested", "autonomous", "answered")


def check_file(stage: int) -> str:
    if stage == 5:
        return f"{protocol.PERF_DIR}/{protocol.STAGE5_CHECK_NAME}"
    return f"docs/stages/stage{stage}_check.json"


def judge(obj: dict[str, Any], stage: int, operator: str, stale: list[str],
          entry: dict[str, Any] | None) -> str | None:
    """Why the check ``obj`` does not allow completing ``stage`` (None: it does). Pure."""
    name = check_file(stage)
    if obj.get("verdict") != "PASS":
        return f"{name} says {obj.get('verdict')}, not PASS"
    if stage < 5 and obj.get("stage") != stage:
        return f"{name} is the check of stage {obj.get('stage')}"
    if obj.get("operator") != operator:
        return f"{name} checked operator {obj.get('operator')!r}, not {operator!r}"
    if not obj.get("inputs"):
        return f"{name} records no input files"
    if stale:
        return f"{name} PASSed for other files: {', '.join(stale[:3])} changed since the check"
    remeasure = obj.get("remeasure") or {}
    if stage == 5 and remeasure.get("status") == "not_run" and "budget_s" not in remeasure:
        return (f"{name} ran without the verifier's re-measurement (P10); run stage5_check.py with it (the default "
                "on cpu and pypto-sim; --remeasure on msprof, on the machine with the card)")
    if stage == 5 and entry is not None:
        target = obj.get("target") or {}
        if sorted(target.get("case_ids", [])) != sorted(entry["target_case_ids"]) or \
                target.get("selection_mode") != entry["selection_mode"]:
            return f"{name} checked target {target}, the entry confirmation froze another"
    return None


def check_problem(op_dir: str | Path, stage: int, state: Mapping[str, Any]) -> str | None:
    """Read the stage's check file and judge it against the files now on disk."""
    root = Path(op_dir)
    path = root / check_file(stage)
    if not path.is_file() or path.is_symlink():
        return f"{check_file(stage)} does not exist"
    try:
        obj = fsio.read_json(path, what="stage check")
        schemas.validate(obj, "stage5_check" if stage == 5 else "stage_check", path)
    except PerftuneError as exc:
        return exc.line()
    stale = [rec.get("path", name) for name, rec in sorted(obj["inputs"].items())
             if not fsio.record_matches(rec, root)]
    problem = judge(obj, stage, state["operator_name"], stale, state.get("stage5_entry"))
    if problem is None and stage == 5:
        from ..verify import rederive   # the verdict file is a claim: re-derive it from the files now
        problem = rederive.gate_problem(root)
    return problem


def _guard(ok: bool, guard: str, problem: str, fix: str) -> None:
    if not ok:
        raise ContractError(protocol.STATE_NAME, f"guard:confirm_stage5_entry.{guard}", problem, fix)


def confirm_stage5_entry(state: dict, params: Mapping[str, Any], ctx: Any) -> tuple[dict, str]:
    """Record the OR-5 entry confirmation and the frozen target (Stage 4 completed, Stage 5 not running)."""
    status = state["stage_status"]
    _guard(status["4"] == "completed", "stage4_completed", f"stage 4 is {status['4']}", "complete Stage 4 first")
    _guard(status["5"] in ("pending", "failed"), "stage5_not_running", f"stage 5 is {status['5']}",
           "the entry is confirmed before start_stage 5")
    auth = params.get("authorization")
    _guard(auth in AUTHORIZATIONS, "authorization", f"{auth!r} is not one of {list(AUTHORIZATIONS)}",
           "requested, autonomous or answered (references/orchestration.md OR-5)")
    evidence = params.get("evidence")
    _guard(isinstance(evidence, str) and bool(evidence.strip()), "evidence", "the user's words are empty",
           "quote the user's request or answer verbatim")
    ids = params.get("target_case_ids")
    _guard(isinstance(ids, list) and bool(ids) and all(isinstance(i, str) and i for i in ids)
           and len(set(ids)) == len(ids), "target_case_ids", f"{ids!r} is not a non-empty list of unique ids",
           "freeze the target per OR-6")
    mode = params.get("selection_mode")
    _guard(mode in protocol.SELECTION_MODES, "selection_mode", f"{mode!r} is unknown",
           f"use one of {list(protocol.SELECTION_MODES)}")
    _guard(mode != "single_p0" or len(ids) == 1, "selection_mode", "single_p0 names exactly one case",
           "use user_selected or all_p0_no_questions")
    state["stage5_entry"] = {"authorization": auth, "evidence": evidence.strip(), "target_case_ids": list(ids),
                             "selection_mode": mode, "confirmed_at": ctx.now}
    return state, f"stage 5 entry confirmed ({auth}); target {ids} ({mode})"
