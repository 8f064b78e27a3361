"""The Stage 1-5 orchestrator state machine (DESIGN §9): ``.orchestrator_state.json``, schema 2.2.

Pure core: each action is a function ``(state, params, ctx) -> (new_state, message)`` over a plain
dict that validates against ``schemas/orchestrator_state.schema.json``. Every refusal raises
:class:`ContractError` (exit 2) whose field is ``guard:<action>.<guard>``. The I/O edge
(:func:`apply`) takes the file lock, loads and validates the state, hashes the artifact the action
needs, applies the transition, validates the result and writes it atomically.

Decisions where upstream was silent (table and reasons in docs/state-machine.md): Stage 5 stays
``pending`` after ``complete_stage 4`` until an explicit ``start_stage 5`` (entry confirmation) and
never rolls back once started; a rollback drops the artifact hashes of the target stage and later
ones; ``spec_md`` cannot be re-recorded after Stage 1 completed; ``complete_stage 4`` needs
``plan_stage4``; modules run in order (cumulative suffixes "1", "12", "123"), one active at a time.
``complete_stage N`` needs the stage's check file PASS for the current files and ``start_stage 5``
the recorded entry confirmation (:mod:`.stage_gate`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from ..errors import FAILURE_CATEGORIES, ContractError
from . import stage_gate

ACTOR = "pypto-pro-op-orchestrator"
SCHEMA_VERSION = "2.2"
MAX_STAGE = 5
STAGES = tuple(str(n) for n in range(1, MAX_STAGE + 1))
DEFAULT_MAX_CYCLES = 10
ARTIFACT_OWNER = {"spec_md": 1, "golden_py": 2, "design_md": 3}
ROLLBACK_CATEGORIES = FAILURE_CATEGORIES + ("capability_gap",)
ACTIONS = ("init", "start_stage", "complete_stage", "fail_stage", "record_artifact_hash",
           "rollback_to_stage", "plan_stage4", "start_module", "submit_for_verify",
           "complete_module", "fail_module", "confirm_stage5_entry")


@dataclass(frozen=True)
class Context:
    """Facts the I/O edge gathers for a transition: the clock and file hashes (None = missing)."""

    now: str
    spec_sha256: str | None = None
    artifact_sha256: str | None = None
    check_problem: str | None = "the stage check was not read"   # None: the check PASSed for these files


def _refuse(action: str, guard: str, problem: str, fix: str) -> None:
    raise ContractError(protocol.STATE_NAME, f"guard:{action}.{guard}", problem, fix)


def _require(ok: bool, action: str, guard: str, problem: str, fix: str) -> None:
    if not ok:
        _refuse(action, guard, problem, fix)


def module_suffix(k: int) -> str:
    """Cumulative module suffix: 1 -> "1", 3 -> "123"."""
    return "".join(str(i) for i in range(1, k + 1))


def _empty_modules(count: int = 0, max_cycles: int = DEFAULT_MAX_CYCLES) -> dict[str, Any]:
    return {"module_count": count, "max_cycles_per_module": max_cycles, "module_status": {},
            "module_retry_count": {}, "modules_verified": [], "active_module": None}


def new_state(operator_name: str, now: str) -> dict[str, Any]:
    """A fresh run: Stage 1 in progress, nothing recorded."""
    status = {s: "pending" for s in STAGES}
    status["1"] = "in_progress"
    return {"operator_name": operator_name, "schema_version": SCHEMA_VERSION, "max_stage": MAX_STAGE,
            "current_stage": 1, "stage_status": status, "stage_retry_count": {s: 0 for s in STAGES},
            "artifact_hashes": {k: None for k in ARTIFACT_OWNER}, "rollback_history": [],
            "stage4_path": None, "stage4_modules": _empty_modules(), "stage5_entry": None, "last_updated": now}


def _stage(params: Mapping[str, Any], action: str, key: str = "stage") -> int:
    value = params.get(key)
    _require(isinstance(value, int) and 1 <= value <= MAX_STAGE, action, key,
             f"{key} {value!r} is not a stage 1..{MAX_STAGE}", "pass a stage number 1..5")
    return value


def _text(params: Mapping[str, Any], key: str, action: str) -> str:
    value = params.get(key)
    _require(isinstance(value, str) and bool(value.strip()), action, key, f"{key} is empty",
             f"give a non-empty --{key.replace('_', '-')}")
    return value.strip()


def _in_progress(state: dict, stage: int, action: str) -> None:
    _require(stage == state["current_stage"], action, "is_current",
             f"stage {stage} is not the current stage {state['current_stage']}", "act on the current stage")
    status = state["stage_status"][str(stage)]
    _require(status == "in_progress", action, "in_progress",
             f"stage {stage} is {status}, not in_progress", f"start_stage {stage} first")


def init(state: dict | None, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    name = params.get("operator_name")
    _require(isinstance(name, str) and name.isidentifier(), "init", "operator_name",
             f"operator name {name!r} is not an identifier", "use the <op> of custom/<op>")
    if state is not None:
        busy = [s for s in STAGES if state["stage_status"][s] == "in_progress"]
        _require(not busy, "init", "no_stage_in_progress", f"stage(s) {', '.join(busy)} in progress",
                 "finish or fail_stage the running stage before a new init")
    return new_state(name, ctx.now), f"init {name}: stage 1 in_progress"


def start_stage(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    n = _stage(params, "start_stage")
    status = state["stage_status"]
    _require(n == 1 or status[str(n - 1)] == "completed", "start_stage", "previous_completed",
             f"stage {n - 1} is {status.get(str(n - 1))}", f"complete stage {n - 1} first")
    busy = [s for s in STAGES if status[s] == "in_progress"]
    _require(not busy, "start_stage", "none_in_progress", f"stage {', '.join(busy)} is in progress",
             "complete or fail the running stage first")
    _require(status[str(n)] in ("pending", "failed"), "start_stage", "startable",
             f"stage {n} is {status[str(n)]}", "only a pending or failed stage can start")
    _require(n < 5 or state.get("stage5_entry") is not None, "start_stage", "entry_confirmed",
             "no Stage 5 entry confirmation is recorded", "confirm_stage5_entry first (OR-5)")
    status[str(n)] = "in_progress"
    state["current_stage"] = n
    return state, f"stage {n} in_progress"


def _check_spec(state: dict, n: int, ctx: Context) -> None:
    if n == 1:
        _require(ctx.spec_sha256 is not None, "complete_stage", "spec_present", "SPEC.md is missing",
                 "Stage 1 must deliver SPEC.md")
        state["artifact_hashes"]["spec_md"] = ctx.spec_sha256
    elif n >= 3:
        frozen = state["artifact_hashes"]["spec_md"]
        _require(frozen is not None, "complete_stage", "spec_frozen", "no SPEC.md hash was recorded",
                 "rollback_to_stage 1 and complete Stage 1 again")
        _require(ctx.spec_sha256 == frozen, "complete_stage", "spec_unchanged",
                 "SPEC.md changed (or vanished) since Stage 1 froze it",
                 "restore SPEC.md, or rollback_to_stage 1 to change it legitimately")


def complete_stage(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    n = _stage(params, "complete_stage")
    _in_progress(state, n, "complete_stage")
    _check_spec(state, n, ctx)
    _require(ctx.check_problem is None, "complete_stage", "check_pass", str(ctx.check_problem),
             f"run the stage {n} check ({stage_gate.check_file(n)}) and complete only on its PASS")
    if n == 4:
        _require(state["stage4_path"] is not None, "complete_stage", "stage4_planned",
                 "stage4_path is not set", "plan_stage4 before completing Stage 4")
        mods = state["stage4_modules"]
        if state["stage4_path"] == "L1":
            done = [k for k, v in mods["module_status"].items() if v == "verified"]
            _require(mods["module_count"] >= 1 and len(done) == mods["module_count"], "complete_stage",
                     "modules_verified", f"{len(done)} of {mods['module_count']} modules verified",
                     "verify every module (complete_module) first")
    state["stage_status"][str(n)] = "completed"
    if n < 4:
        state["stage_status"][str(n + 1)] = "in_progress"
        state["current_stage"] = n + 1
        return state, f"stage {n} completed; stage {n + 1} in_progress"
    if n == 4:
        state["current_stage"] = 5
        return state, "stage 4 completed; stage 5 pending (entry confirmation, then start_stage 5)"
    return state, "stage 5 completed"


def fail_stage(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    n = _stage(params, "fail_stage")
    _in_progress(state, n, "fail_stage")
    reason = _text(params, "reason", "fail_stage")
    state["stage_status"][str(n)] = "failed"
    state["stage_retry_count"][str(n)] += 1
    return state, f"stage {n} failed (retry {state['stage_retry_count'][str(n)]}): {reason}"


def record_artifact_hash(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    name = params.get("name")
    _require(name in ARTIFACT_OWNER, "record_artifact_hash", "name", f"unknown artifact {name!r}",
             f"use one of {sorted(ARTIFACT_OWNER)}")
    owner = ARTIFACT_OWNER[name]
    _require(owner <= state["current_stage"], "record_artifact_hash", "owner_reached",
             f"{name} belongs to stage {owner}, not reached yet", "record it during or after its stage")
    _require(not (name == "spec_md" and state["stage_status"]["1"] == "completed"),
             "record_artifact_hash", "spec_frozen", "SPEC.md was frozen by complete_stage 1",
             "rollback_to_stage 1 to change the SPEC")
    _require(ctx.artifact_sha256 is not None, "record_artifact_hash", "file_present",
             f"the file of {name} is missing", "write the artifact before recording its hash")
    state["artifact_hashes"][name] = ctx.artifact_sha256
    return state, f"{name} = {ctx.artifact_sha256}"


def rollback_to_stage(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    action, current = "rollback_to_stage", state["current_stage"]
    _require(state["stage_status"]["5"] == "pending", action, "stage5_not_started",
             "Stage 5 has started; it never rolls back", "fix inside Stage 5 or fail_stage 5")
    target = _stage(params, action, "target_stage")
    _require(target < current, action, "target_below_current",
             f"target {target} is not below the current stage {current}", "pick an earlier stage")
    reason = _text(params, "reason", action)
    category = params.get("failure_category")
    _require(category is None or category in ROLLBACK_CATEGORIES, action, "failure_category",
             f"unknown failure_category {category!r}", "use a category of references/failure-categories.md")
    for s in range(target + 1, MAX_STAGE + 1):
        state["stage_status"][str(s)] = "pending"
    state["stage_status"][str(target)] = "in_progress"
    state["stage_retry_count"][str(target)] += 1
    state["current_stage"] = target
    for name, owner in ARTIFACT_OWNER.items():
        if owner >= target:
            state["artifact_hashes"][name] = None
    state["stage5_entry"] = None
    if target < 4:
        state["stage4_path"] = None
        state["stage4_modules"] = _empty_modules()
    entry = {"from_stage": current, "to_stage": target, "reason": reason, "timestamp": ctx.now}
    if category is not None:
        entry["failure_category"] = category
    state["rollback_history"].append(entry)
    return state, f"rolled back from stage {current} to stage {target}: {reason}"


def plan_stage4(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    action = "plan_stage4"
    _in_progress(state, 4, action)
    count, fusion = params.get("module_count"), params.get("is_fusion")
    cycles = params.get("max_cycles") or DEFAULT_MAX_CYCLES
    _require(isinstance(fusion, bool), action, "is_fusion", "is_fusion must be true or false", "pass --is-fusion")
    _require(isinstance(count, int) and count >= (1 if fusion else 0), action, "module_count",
             f"module_count {count!r} invalid (fusion needs >= 1)", "use module_interfaces.yaml module_count")
    _require(isinstance(cycles, int) and cycles >= 1, action, "max_cycles", f"max_cycles {cycles!r} < 1",
             "use a positive cycle cap (default 10)")
    mods = state["stage4_modules"]
    _require(not mods["modules_verified"] and mods["active_module"] is None, action, "no_module_progress",
             "modules already started under the current plan", "rollback_to_stage 3 to re-plan")
    path = "L1" if fusion else "L0"
    new = _empty_modules(count, cycles)
    if fusion:
        new["module_status"] = {str(k): "pending" for k in range(1, count + 1)}
        new["module_retry_count"] = {str(k): 0 for k in range(1, count + 1)}
    state["stage4_path"], state["stage4_modules"] = path, new
    return state, f"stage4_path {path}, {count} module(s), max {cycles} cycles per module"


def _module(state: dict, params: Mapping[str, Any], action: str) -> tuple[int, dict]:
    _in_progress(state, 4, action)
    _require(state["stage4_path"] == "L1", action, "stage4_path_l1",
             f"stage4_path is {state['stage4_path']}, modules exist only on L1", "plan_stage4 --is-fusion true")
    mods, k = state["stage4_modules"], params.get("module")
    _require(isinstance(k, int) and 1 <= k <= mods["module_count"], action, "module",
             f"module {k!r} not in 1..{mods['module_count']}", "pass a planned module number")
    return k, mods


def _active(mods: dict, k: int, action: str) -> str:
    _require(mods["active_module"] == k, action, "is_active",
             f"module {k} is not the active module ({mods['active_module']})", f"start_module {k} first")
    return mods["module_status"][str(k)]


def start_module(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    k, mods = _module(state, params, "start_module")
    status = mods["module_status"][str(k)]
    _require(status in ("pending", "blocked"), "start_module", "startable", f"module {k} is {status}",
             "only a pending or blocked module can start")
    _require(mods["active_module"] is None, "start_module", "no_active_module",
             f"module {mods['active_module']} is active", "finish or fail the active module first")
    waiting = [j for j in range(1, k) if mods["module_status"][str(j)] != "verified"]
    _require(not waiting, "start_module", "previous_verified", f"module(s) {waiting} not verified",
             "modules are cumulative: verify the earlier ones first")
    mods["module_status"][str(k)], mods["active_module"] = "in_progress", k
    return state, f"module {k} (suffix {module_suffix(k)}) in_progress"


def submit_for_verify(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    k, mods = _module(state, params, "submit_for_verify")
    status = _active(mods, k, "submit_for_verify")
    _require(status in ("in_progress", "in_debug"), "submit_for_verify", "submittable",
             f"module {k} is {status}", "only an in_progress or in_debug module is submitted")
    mods["module_status"][str(k)] = "awaiting_verify"
    return state, f"module {k} awaiting_verify"


def complete_module(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    k, mods = _module(state, params, "complete_module")
    status = _active(mods, k, "complete_module")
    _require(status == "awaiting_verify", "complete_module", "awaiting_verify", f"module {k} is {status}",
             "submit_for_verify and get a module-check PASS first")
    mods["module_status"][str(k)], mods["active_module"] = "verified", None
    mods["modules_verified"].append(module_suffix(k))
    return state, f"module {k} verified (suffix {module_suffix(k)})"


def fail_module(state: dict, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    action = "fail_module"
    k, mods = _module(state, params, action)
    status = _active(mods, k, action)
    _require(status in ("in_progress", "in_debug", "awaiting_verify"), action, "failable",
             f"module {k} is {status}", "only a running module can fail")
    category = params.get("failure_category")
    _require(category in FAILURE_CATEGORIES, action, "failure_category",
             f"unknown failure_category {category!r}", "use a category of references/failure-categories.md")
    boundary = params.get("failing_module_boundary")
    _require(boundary is None or (isinstance(boundary, int) and 1 <= boundary <= mods["module_count"]),
             action, "failing_module_boundary", f"boundary {boundary!r} is not a planned module",
             "pass the failing module number")
    retries = mods["module_retry_count"][str(k)] + 1
    mods["module_retry_count"][str(k)] = retries
    if retries >= mods["max_cycles_per_module"]:
        mods["module_status"][str(k)], mods["active_module"] = "blocked", None
        return state, f"module {k} blocked after {retries} failed cycles ({category})"
    mods["module_status"][str(k)] = "in_debug"
    return state, f"module {k} in_debug (cycle {retries}/{mods['max_cycles_per_module']}, {category})"


TRANSITIONS: dict[str, Callable[..., tuple[dict, str]]] = {
    name: globals()[name] if name in globals() else getattr(stage_gate, name) for name in ACTIONS}


def transition(state: dict | None, action: str, params: Mapping[str, Any], ctx: Context) -> tuple[dict, str]:
    """Apply one action to a copy of ``state`` (pure); refusals raise ContractError."""
    if action not in TRANSITIONS:
        raise ContractError(protocol.STATE_NAME, "action", f"unknown action {action!r}", f"use one of {ACTIONS}")
    if state is None and action != "init":
        _refuse(action, "state_exists", "no state file yet", "run init first")
    new, message = TRANSITIONS[action](copy.deepcopy(state), params, ctx)
    new["last_updated"] = ctx.now
    return new, message


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def state_path(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.STATE_NAME


def load(op_dir: str | Path, *, required: bool = False) -> dict | None:
    """The validated state of ``op_dir``; None when there is no state file (unless ``required``)."""
    path = state_path(op_dir)
    if not path.exists() and not path.is_symlink():
        if required:
            raise ContractError(path, "-", "no state file", "run orchestrator_state.py init first")
        return None
    obj = fsio.read_json(path, what="orchestrator state")
    schemas.validate(obj, "orchestrator_state", path)
    return obj


def _hash(path: Path) -> str | None:
    return fsio.sha256_file(path) if path.is_file() and not path.is_symlink() else None


def _context(op: Path, state: dict | None, action: str, params: Mapping[str, Any]) -> Context:
    spec = _hash(op / "SPEC.md") if action in ("complete_stage", "record_artifact_hash") else None
    artifact = None
    if action == "record_artifact_hash" and state is not None:
        files = {"spec_md": "SPEC.md", "golden_py": f"{state['operator_name']}_golden.py",
                 "design_md": "DESIGN.md"}
        artifact = _hash(op / files[params["name"]]) if params.get("name") in files else None
    problem = None
    if action == "complete_stage" and state is not None and params.get("stage") in range(1, MAX_STAGE + 1):
        problem = stage_gate.check_problem(op, params["stage"], state)
    return Context(now=utc_now(), spec_sha256=spec, artifact_sha256=artifact, check_problem=problem)


def apply(op_dir: str | Path, action: str, actor: str, params: Mapping[str, Any]) -> tuple[dict, str]:
    """Run one action on ``op_dir``'s state file under the lock; returns (new state, message)."""
    if actor != ACTOR:
        raise ContractError(protocol.STATE_NAME, "guard:actor.orchestrator_only",
                            f"actor {actor!r} may not change the state", f"only {ACTOR} calls this script")
    op = Path(op_dir)
    if not op.is_dir():
        raise ContractError(op, "op_dir", "operator directory does not exist", "pass custom/<op>")
    if action == "init" and not params.get("operator_name"):
        params = {**params, "operator_name": op.resolve().name}
    path = state_path(op)
    with fsio.file_lock(path):
        state = load(op)
        try:
            new, message = transition(state, action, params, _context(op, state, action, params))
        except ContractError as exc:
            exc.file = str(path) if exc.file == protocol.STATE_NAME else exc.file
            raise
        schemas.validate(new, "orchestrator_state", path)
        fsio.write_json(path, new)
    return new, message


def render_table(state: dict) -> str:
    """The state as a readable text table (for ``show``)."""
    hashes, mods = state["artifact_hashes"], state["stage4_modules"]
    owned = {owner: name for name, owner in ARTIFACT_OWNER.items()}
    lines = [f"operator {state['operator_name']}  schema {state['schema_version']}  "
             f"current stage {state['current_stage']}  updated {state['last_updated']}",
             f"{'stage':<6}{'status':<13}{'retries':<9}artifact"]
    for s in STAGES:
        name = owned.get(int(s))
        art = f"{name} {(hashes[name] or 'not recorded')[:12]}" if name else "-"
        lines.append(f"{s:<6}{state['stage_status'][s]:<13}{state['stage_retry_count'][s]:<9}{art}")
    lines.append(f"stage4_path {state['stage4_path'] or '-'}  modules {len(mods['modules_verified'])}/"
                 f"{mods['module_count']} verified  active {mods['active_module'] or '-'}  "
                 f"max cycles {mods['max_cycles_per_module']}")
    for k, status in sorted(mods["module_status"].items(), key=lambda kv: int(kv[0])):
        lines.append(f"  module {k:<4}suffix {module_suffix(int(k)):<10}{status:<16}"
                     f"retries {mods['module_retry_count'][k]}")
    entry = state.get("stage5_entry")
    if entry:
        lines.append(f"stage 5 entry: {entry['authorization']} ({entry['evidence'][:60]!r}) target "
                     f"{', '.join(entry['target_case_ids'])} [{entry['selection_mode']}]")
    for e in state["rollback_history"]:
        lines.append(f"rollback {e['from_stage']}->{e['to_stage']} at {e['timestamp']}: {e['reason']}"
                     + (f" [{e['failure_category']}]" if "failure_category" in e else ""))
    return "\n".join(lines)
