"""The pure state machine: every guard refuses with its name and changes nothing; L0 and L1 walks."""

import copy

import pytest

from perftune.contract import schemas
from perftune.orchestrate import state
from perftune.errors import ContractError

SPEC = "a" * 64
OTHER = "b" * 64
NOW = "2025-01-02T03:04:05Z"


def act(st, action, spec=SPEC, artifact=None, check=None, **params):
    """``check`` is the stage-check problem the I/O edge found (None: the check PASSed)."""
    ctx = state.Context(now=NOW, spec_sha256=spec, artifact_sha256=artifact, check_problem=check)
    new, _ = state.transition(st, action, params, ctx)
    schemas.validate(new, "orchestrator_state")
    return new


def walk(*steps):
    st = act(None, "init", operator_name="softmax")
    for action, params in steps:
        st = act(st, action, **params)
    return st


TO_3 = [("complete_stage", {"stage": 1}), ("complete_stage", {"stage": 2})]
TO_4 = TO_3 + [("complete_stage", {"stage": 3})]
L1 = TO_4 + [("plan_stage4", {"module_count": 2, "is_fusion": True, "max_cycles": 3})]
L1_M1 = L1 + [("start_module", {"module": 1})]
L0_DONE = TO_4 + [("plan_stage4", {"module_count": 1, "is_fusion": False}), ("complete_stage", {"stage": 4})]
ENTRY = ("confirm_stage5_entry", {"authorization": "requested", "evidence": "please optimise it",
                                  "target_case_ids": ["a"], "selection_mode": "single_p0"})
S5 = L0_DONE + [ENTRY, ("start_stage", {"stage": 5})]


def refused(st, action, guard, **params):
    before = copy.deepcopy(st)
    with pytest.raises(ContractError) as info:
        act(st, action, **params)
    assert info.value.field == f"guard:{action}.{guard}", info.value.line()
    assert st == before
    return info.value


GUARDS = [
    ([], "init", "no_stage_in_progress", {"operator_name": "softmax"}),
    ([], "start_stage", "previous_completed", {"stage": 3}),
    ([], "start_stage", "none_in_progress", {"stage": 1}),
    ([], "start_stage", "stage", {"stage": 6}),
    (L0_DONE, "start_stage", "startable", {"stage": 4}),
    ([], "complete_stage", "is_current", {"stage": 2}),
    ([("fail_stage", {"stage": 1, "reason": "x"})], "complete_stage", "in_progress", {"stage": 1}),
    ([], "complete_stage", "spec_present", {"stage": 1, "spec": None}),
    (TO_3, "complete_stage", "spec_unchanged", {"stage": 3, "spec": OTHER}),
    (TO_3, "complete_stage", "spec_unchanged", {"stage": 3, "spec": None}),
    (TO_4, "complete_stage", "stage4_planned", {"stage": 4}),
    (L1_M1, "complete_stage", "modules_verified", {"stage": 4}),
    ([], "fail_stage", "is_current", {"stage": 2, "reason": "x"}),
    ([], "fail_stage", "reason", {"stage": 1, "reason": "  "}),
    ([], "record_artifact_hash", "name", {"name": "kernel_cpp", "artifact": SPEC}),
    ([], "record_artifact_hash", "owner_reached", {"name": "design_md", "artifact": SPEC}),
    (TO_3, "record_artifact_hash", "spec_frozen", {"name": "spec_md", "artifact": OTHER}),
    (TO_3, "record_artifact_hash", "file_present", {"name": "golden_py", "artifact": None}),
    (S5, "rollback_to_stage", "stage5_not_started", {"target_stage": 3, "reason": "x"}),
    (TO_3, "rollback_to_stage", "target_below_current", {"target_stage": 3, "reason": "x"}),
    (TO_3, "rollback_to_stage", "target_below_current", {"target_stage": 5, "reason": "x"}),
    (TO_3, "rollback_to_stage", "reason", {"target_stage": 1, "reason": ""}),
    (TO_3, "rollback_to_stage", "failure_category", {"target_stage": 1, "reason": "x",
                                                     "failure_category": "bad_luck"}),
    (TO_3, "plan_stage4", "is_current", {"module_count": 1, "is_fusion": False}),
    (TO_4, "plan_stage4", "module_count", {"module_count": 0, "is_fusion": True}),
    (TO_4, "plan_stage4", "is_fusion", {"module_count": 1, "is_fusion": "yes"}),
    (TO_4, "plan_stage4", "max_cycles", {"module_count": 1, "is_fusion": True, "max_cycles": -1}),
    (L1_M1, "plan_stage4", "no_module_progress", {"module_count": 3, "is_fusion": True}),
    (TO_4 + [("plan_stage4", {"module_count": 1, "is_fusion": False})], "start_module", "stage4_path_l1",
     {"module": 1}),
    (L1, "start_module", "module", {"module": 3}),
    (L1, "start_module", "previous_verified", {"module": 2}),
    (L1_M1, "start_module", "startable", {"module": 1}),
    (L1_M1 + [("submit_for_verify", {"module": 1}), ("complete_module", {"module": 1})],
     "start_module", "startable", {"module": 1}),
    (L1, "submit_for_verify", "is_active", {"module": 1}),
    (L1_M1 + [("submit_for_verify", {"module": 1})], "submit_for_verify", "submittable", {"module": 1}),
    (L1_M1, "complete_module", "awaiting_verify", {"module": 1}),
    (L1, "complete_module", "is_active", {"module": 1}),
    (L1, "fail_module", "is_active", {"module": 1, "failure_category": "precision_failure"}),
    (L1_M1, "fail_module", "failure_category", {"module": 1, "failure_category": "flaky"}),
    (L1_M1, "fail_module", "failing_module_boundary",
     {"module": 1, "failure_category": "runtime_failure", "failing_module_boundary": 9}),
    ([], "complete_stage", "check_pass", {"stage": 1, "check": "docs/stages/stage1_check.json does not exist"}),
    (S5, "complete_stage", "check_pass", {"stage": 5, "check": "the check PASSed for other files"}),
    (L0_DONE, "start_stage", "entry_confirmed", {"stage": 5}),
    (TO_4, "confirm_stage5_entry", "stage4_completed", ENTRY[1]),
    (S5, "confirm_stage5_entry", "stage5_not_running", ENTRY[1]),
    (L0_DONE, "confirm_stage5_entry", "authorization", {**ENTRY[1], "authorization": "assumed"}),
    (L0_DONE, "confirm_stage5_entry", "evidence", {**ENTRY[1], "evidence": " "}),
    (L0_DONE, "confirm_stage5_entry", "target_case_ids", {**ENTRY[1], "target_case_ids": ["a", "a"]}),
    (L0_DONE, "confirm_stage5_entry", "selection_mode", {**ENTRY[1], "selection_mode": "best_only"}),
    (L0_DONE, "confirm_stage5_entry", "selection_mode", {**ENTRY[1], "target_case_ids": ["a", "b"]}),
]


@pytest.mark.parametrize("steps, action, guard, params", GUARDS,
                         ids=[f"{a}.{g}.{i}" for i, (_, a, g, _) in enumerate(GUARDS)])
def test_every_guard_refuses_and_changes_nothing(steps, action, guard, params):
    refused(walk(*steps), action, guard, **params)


def test_init_guards_and_missing_state():
    with pytest.raises(ContractError) as info:
        act(None, "init", operator_name="soft-max")
    assert info.value.field == "guard:init.operator_name"
    with pytest.raises(ContractError) as info:
        act(None, "complete_stage", stage=1)
    assert info.value.field == "guard:complete_stage.state_exists"


def test_no_module_becomes_active_while_another_is():
    st = walk(*L1_M1, ("submit_for_verify", {"module": 1}), ("complete_module", {"module": 1}),
              ("start_module", {"module": 2}))
    st["stage4_modules"]["module_status"]["1"] = "blocked"  # a hand-edited file must still be guarded
    refused(st, "start_module", "no_active_module", module=1)


def test_full_l0_walk():
    st = walk(*TO_4)
    assert st["artifact_hashes"]["spec_md"] == SPEC and st["current_stage"] == 4
    st = act(st, "record_artifact_hash", name="design_md", artifact=OTHER)
    st = act(st, "plan_stage4", module_count=1, is_fusion=False)
    assert st["stage4_path"] == "L0" and st["stage4_modules"]["module_status"] == {}
    st = act(st, "complete_stage", stage=4)
    assert st["current_stage"] == 5 and st["stage_status"]["5"] == "pending"
    st = act(st, "rollback_to_stage", target_stage=4, reason="entry declined, recheck wrapper")
    assert st["stage_status"]["4"] == "in_progress" and st["stage_retry_count"]["4"] == 1
    assert st["stage4_path"] == "L0" and st["artifact_hashes"]["design_md"] == OTHER
    st = act(st, "complete_stage", stage=4)
    st = act(st, ENTRY[0], **ENTRY[1])
    assert st["stage5_entry"] == {**ENTRY[1], "confirmed_at": NOW}
    st = act(st, "start_stage", stage=5)
    st = act(st, "fail_stage", stage=5, reason="msprof crashed")
    assert st["stage_status"]["5"] == "failed" and st["stage_retry_count"]["5"] == 1
    st = act(st, "start_stage", stage=5)
    st = act(st, "complete_stage", stage=5)
    assert st["stage_status"] == {s: "completed" for s in state.STAGES} and st["last_updated"] == NOW
    st = act(st, "init", operator_name="softmax")  # a finished run may start over
    assert st["stage_status"]["2"] == "pending" and st["rollback_history"] == []


def test_full_l1_walk_with_debug_cycles_and_block():
    st = walk(*L1_M1, ("fail_module", {"module": 1, "failure_category": "precision_failure"}),
              ("submit_for_verify", {"module": 1}), ("complete_module", {"module": 1}),
              ("start_module", {"module": 2}))
    mods = st["stage4_modules"]
    assert mods["modules_verified"] == ["1"] and mods["module_retry_count"] == {"1": 1, "2": 0}
    for cycle in (1, 2):
        st = act(st, "submit_for_verify", module=2)
        st = act(st, "fail_module", module=2, failure_category="runtime_failure", failing_module_boundary=2)
        assert st["stage4_modules"]["module_status"]["2"] == "in_debug"
    st = act(st, "fail_module", module=2, failure_category="runtime_failure")
    mods = st["stage4_modules"]
    assert mods["module_status"]["2"] == "blocked" and mods["module_retry_count"]["2"] == 3
    assert mods["active_module"] is None
    st = act(st, "start_module", module=2)  # restart after a decision keeps the count: one more try
    st = act(st, "fail_module", module=2, failure_category="runtime_failure")
    assert st["stage4_modules"]["module_status"]["2"] == "blocked"
    st = act(st, "start_module", module=2)
    st = act(st, "submit_for_verify", module=2)
    st = act(st, "complete_module", module=2)
    assert st["stage4_modules"]["modules_verified"] == ["1", "12"]
    st = act(st, "complete_stage", stage=4)
    st = act(st, ENTRY[0], **ENTRY[1])
    st = act(st, "rollback_to_stage", target_stage=4, reason="user withdrew the request")
    assert st["stage5_entry"] is None  # a confirmation never survives a rollback
    st = act(st, "complete_stage", stage=4)
    st = act(st, ENTRY[0], **{**ENTRY[1], "authorization": "autonomous"})
    st = act(st, "start_stage", stage=5)
    st = act(st, "complete_stage", stage=5)
    assert st["stage_status"]["5"] == "completed"


def test_rollback_effects_and_spec_change_path():
    st = walk(*L1_M1)
    st = act(st, "record_artifact_hash", name="golden_py", artifact=OTHER)
    refused(st, "complete_stage", "spec_unchanged", stage=4, spec=OTHER)
    st = act(st, "rollback_to_stage", target_stage=1, reason="SPEC gains a case",
             failure_category="kb_selection_invalid")
    assert st["stage_status"] == {"1": "in_progress", "2": "pending", "3": "pending", "4": "pending",
                                  "5": "pending"}
    assert st["artifact_hashes"] == {"spec_md": None, "golden_py": None, "design_md": None}
    assert st["stage4_path"] is None and st["stage4_modules"] == state._empty_modules()
    assert st["rollback_history"] == [{"from_stage": 4, "to_stage": 1, "reason": "SPEC gains a case",
                                       "failure_category": "kb_selection_invalid", "timestamp": NOW}]
    st = act(st, "complete_stage", stage=1, spec=OTHER)  # the new SPEC is frozen now
    st = act(st, "complete_stage", stage=2, spec=OTHER)
    st = act(st, "complete_stage", stage=3, spec=OTHER)
    assert st["artifact_hashes"]["spec_md"] == OTHER and st["stage_retry_count"]["1"] == 1
    st = act(st, "rollback_to_stage", target_stage=3, reason="gap", failure_category="capability_gap")
    assert st["artifact_hashes"]["spec_md"] == OTHER and st["stage_status"]["3"] == "in_progress"


def test_module_suffixes_are_cumulative():
    assert [state.module_suffix(k) for k in (1, 2, 3)] == ["1", "12", "123"]


def test_render_table_names_every_stage_and_module():
    text = state.render_table(walk(*L1_M1))
    assert "current stage 4" in text and "stage4_path L1" in text and "suffix 12" in text
    assert text.count("pending") >= 2 and "spec_md aaaaaaaaaaaa" in text
