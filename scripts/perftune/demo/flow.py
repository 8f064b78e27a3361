"""SKILL.md's procedure on one operator folder, run on perf_next: the procedure's state has one owner (#27).

After every step the demo asks :func:`perftune.decide.next_step.next_steps` (what ``perf_next.py
--json`` prints) for the next step and runs its command with every value as filled from the
evidence; :class:`Agent` adds only what the step lists under ``needs`` (which item, hypothesis, the
code edit = a variant of the operator's plan, closing grounds, the sweep), nothing is passed in
memory. The item decision is the formal compare's ``item_acceptance``, promotion the quick compare's,
the confirm end confirm's ``verdict``, all read back from the evidence by next_step; an exit 1 the
SKILL calls a result is recorded and the next step follows from it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import opfolder, plan as demo_plan, skill as skill_mod
from .driver import DEFAULT_WORKDIR, Driver, prepare, prune
from .. import fsio
from ..contract import manifest as manifest_mod, protocol
from ..decide import ledger as ledger_mod, ledger_gates, next_step
from ..errors import CheckFailed, ContractError, EnvError
from ..measure import backends

# exit 1 is a result the SKILL says to read (the evidence records it; the next perf_next step follows from it)
RESULT_EXIT = {"correctness": (0, 1), "formal_compare": (0, 1), "confirm": (0, 1), "final_compare": (0, 1),
               "verify": (0, 1)}
MAX_STEPS = 500


@dataclass
class Agent:
    """The agent's judgement, from the operator's plan: the only values the demo adds to perf_next's."""

    op: opfolder.Operator
    outcomes: dict[str, str] = field(default_factory=dict)     # version -> what its compares decided
    data: dict[str, Any] = field(default_factory=dict)          # step key -> its last JSON output
    derived: demo_plan.Experiment | None = None                  # the derived experiment to register next
    items: dict[str, dict] = field(default_factory=dict)        # item id -> ledger item (what a rule matches)

    def experiment(self, item_id: str) -> demo_plan.Experiment | None:
        return next((e for e in self.op.plan.experiments if e.item_id == item_id), None)

    def closure(self, item_id: str) -> demo_plan.Closure | None:
        """The plan's closure of a ledger item: by its id or by the first rule it matches."""
        return self.op.plan.closure_for(self.items.get(item_id) or {"item_id": item_id})

    def read_ledger(self, ledger: dict) -> None:
        self.items = {i["item_id"]: i for i in ledger["items"]}

    def pick(self, out: dict[str, Any], ledger: dict) -> tuple[dict | None, str | None]:
        """One step of a choice (or an ``--overlap`` item to ask perf_next about)."""
        steps = {s["key"]: s for s in out["steps"]}
        self.read_ledger(ledger)
        open_ids = {i["item_id"] for i in ledger["items"] if not ledger_mod.is_terminal(i["status"])}
        if out["next"] == "hypothesis":
            item = steps["hypothesis"]["values"]["ITEM_ID"]
            closure = self.closure(item)
            if closure is not None and closure.same_as is not None and closure.same_as not in open_ids:
                return None, closure.same_as
            if closure is not None and closure.status is not None:
                return steps["close_preset"], None
            exp = next((e for e in self.op.plan.experiments if e.item_id in open_ids
                        and e.source_kind != "bottleneck_derived"), None)
            if exp is None:
                raise ContractError(self.op.folder / "variants/variants.json", "closures", f"ledger item {item} "
                                    "has no plan", "add an experiment or a closure for it")
            chosen = dict(steps["hypothesis"])
            chosen["values"] = {**chosen["values"], "ITEM_ID": exp.item_id}
            return chosen, None
        known = {i["item_id"] for i in ledger["items"]}
        derived = [e for e in self.op.plan.experiments if e.source_kind == "bottleneck_derived" and e.item_id not in known]
        self.derived = derived[0] if derived else None
        return (out["steps"][0] if derived else steps["sweep"]), None

    def judgement(self, st: dict[str, Any]) -> dict[str, Any]:
        """The values perf_next lists under ``needs`` for this step, from the plan."""
        key, values, plan = st["key"], st["values"], self.op.plan
        item = values.get("ITEM_ID")
        proto = plan.protocol
        if key == "freeze":
            target, backend = proto.target_case_ids, backends.get_backend(proto.backend)
            warmup = backend.default_warmup if proto.warmup is None else proto.warmup
            repeats = backend.default_repeats if proto.repeats is None else proto.repeats
            return {"TARGET_IDS": [target] if isinstance(target, str) else list(target),
                    "SELECTION_MODE": proto.selection_mode, "BACKEND": proto.backend, "OP_NAME": proto.op_name,
                    "WARMUP": str(warmup), "REPEATS": str(repeats), "NOISE_BAND": str(proto.noise_band)}
        if key == "golden":   # the defaults perf_next fills unless the plan names other functions
            return {f"GOLDEN_{k.upper()}": v for k, v in plan.golden.items()}
        if key in ("record_baseline", "record"):
            exp = self.experiment(item) if key == "record" else None
            return {"COMPLIANCE": plan.compliance, **({"VERSION_ID": exp.version_id} if exp else {})}
        if key == "close_preset":
            c = self.closure(item)
            return {"STATUS": c.status, "APPLICABILITY": c.applicability, "GROUNDS": c.grounds, "NOTE": c.note}
        if key == "tune_declare":
            exp = self.experiment(item)
            return {"SEARCH_ARGS": list(exp.search), "HYPOTHESIS": exp.hypothesis}
        if key in ("hypothesis", "derived_add"):
            exp = self.experiment(item) if key == "hypothesis" else self.derived
            return {"ITEM_ID": exp.item_id, "HYPOTHESIS": exp.hypothesis, "METRIC": exp.expected_metric,
                    **({"TITLE": exp.hypothesis.split(":")[0][:80]} if key == "derived_add" else {})}
        if key == "close_item":
            c = self.closure(item)
            if c is not None and c.same_as is not None:
                return {"NOTE": f"{c.note} (as {c.same_as}): {st['needs']['NOTE'].split(' concluded: ', 1)[-1]}"}
            return {"NOTE": f"vs {values['BEST_VERSION']}: {st['needs']['NOTE']}"}
        if key == "sweep":
            return {"SCOPE": plan.sweep_scope, "FINDINGS": [x for f in plan.sweep_findings
                                                            for x in ("--finding", f["finding"], f["maps_to"], f["note"])]}
        return {}

    def closed(self, st: dict[str, Any]) -> None:
        """Remember what the compares decided for an experiment's version (the summary's outcomes)."""
        values = st["values"]
        exp = self.experiment(values["ITEM_ID"])
        if exp is None or (self.closure(values["ITEM_ID"]) is not None):
            return
        status, reason = values["STATUS"], values.get("REASON_CODE")
        text = f"{status}{f' ({reason})' if reason else ''} vs {values['BEST_VERSION']}"
        perf = self.data.get("formal_compare")
        if values.get("FORMAL_IDS") and perf:
            suite = perf["suite"].get("mean_case_speedup")
            text += f", suite mean speed-up {'n/a' if suite is None else f'{suite:.3f}'}"
        self.outcomes[exp.version_id] = text


def _label(st: dict[str, Any], agent: Agent, item: str | None) -> str:
    values = st["values"]
    if st["key"] in ("quick", "paired_formal", "record", "tune_declare", "tune"):
        exp = agent.experiment(item or "")
        return exp.version_id if exp else ""
    if st["key"] == "derived_add":
        return agent.derived.item_id if agent.derived else ""
    return str(values.get("ITEM_ID") or values.get("VERSION_ID") or values.get("BEST_VERSION")
               or values.get("CONFIRM_PARTNER") or "")


def unplanned(op: Path, plan: demo_plan.Plan, items: list[dict]) -> list[str]:
    """Enumerated items the plan neither tries nor closes (by id or rule), less those whose recorded gate
    fails here: the close_gated step after ledger_show closes them (SKILL step 9)."""
    ledger = fsio.read_json(op / "docs/perf/ledger.json", what="ledger.json")
    man = manifest_mod.load_manifest(op / protocol.MANIFEST_NAME)
    gated = {r["item_id"] for r in ledger_gates.gate_failures(ledger, man, ledger_gates.bound_evidence(op))}
    return demo_plan.unplanned(plan, [i for i in items if i["item_id"] not in gated])


def run_step(d: Driver, agent: Agent, st: dict[str, Any], item: str | None) -> None:
    """One perf_next step: the edit is the agent's (a variant of the plan); every other step is its command."""
    key = st["key"]
    if key == "edit" and (exp := agent.experiment(st["values"]["ITEM_ID"])).search is not None:
        key, st = "tune_declare", {**st, "key": "tune_declare"}   # the plan's search instead of one edit
    if key == "edit":
        target = d.op / agent.op.test_file
        if agent.op.variant(exp.version_id).read_bytes() == target.read_bytes():
            # perf_next recognises an experiment by a changed executable sha256: the same bytes would ask "edit" forever
            raise ContractError(agent.op.variant(exp.version_id), exp.version_id, f"is byte-identical to the code in "
                                f"place ({st['values'].get('BEST_VERSION')}): no experiment to measure",
                                "change the code (one idea), or close the item without an experiment")
        shutil.copyfile(agent.op.variant(exp.version_id), target)
        return
    if key == "stop":
        raise CheckFailed(d.op / agent.op.test_file, "baseline", st["why"], "fix the operator")
    values = skill_mod.step_values(st["values"], agent.judgement(st), str(d.op))
    code, data = d.run(key, ok=RESULT_EXIT.get(key, (0,)), label=_label(st, agent, item), **values)
    agent.data[key] = data
    if key == "freeze":
        d.cases = tuple(c["id"] for c in data["content"]["cases"])
    if key == "ledger_show":
        agent.read_ledger(fsio.read_json(d.op / "docs/perf/ledger.json", what="ledger.json"))
        missing = unplanned(d.op, agent.op.plan, list(agent.items.values()))
        if missing:
            raise ContractError(agent.op.folder / "variants/variants.json", "closures", f"ledger items without a "
                                f"plan: {missing}", "add an experiment or a closure for each enumerated item")
    if key == "formal_compare":
        decided = data["item_acceptance"]  # the frozen rule's decision (exit 1: a target case is slower)
        if code == 1 and (decided["status"], decided["reason_code"]) != ("rejected", "slower"):
            raise CheckFailed(d.logs, "formal_compare", f"exit 1 but item_acceptance {decided['status']}/"
                              f"{decided['reason_code']}", "compare_perf.py and the frozen acceptance rule disagree")
    if key == "close_item":
        agent.closed(st)


def run_procedure(d: Driver, op: opfolder.Operator) -> tuple[Agent, dict[str, Any]]:
    """SKILL.md's procedure as perf_next gives it: ask ``next_step`` after every step, run what it says
    with its values, add only the plan's judgement; ends at ``done`` or ``failed``."""
    agent, item = Agent(op), None
    for _ in range(MAX_STEPS):
        out = next_step.next_steps(d.op)
        todo = out["steps"]
        if todo[0]["key"] in ("done", "failed"):   # a FAIL ends the demo; perf_next prints the way forward
            return agent, todo[0]
        if out["mode"] == "choice":
            chosen, overlap = agent.pick(out, fsio.read_json(d.op / "docs/perf/ledger.json", what="ledger.json"))
            if chosen is None:   # the overlap step: perf_next prints the close with the closed item's evidence
                chosen = d.run("overlap", label=overlap, OVERLAP_ITEM=overlap)[1]["steps"][0]
            todo = [chosen]
        for st in todo:
            item = st["values"].get("ITEM_ID") or item
            run_step(d, agent, st, item)
    raise ContractError(d.logs, "perf_next", f"no end after {MAX_STEPS} steps", "see the step logs")


def verdict_failed(verdict: dict[str, Any]) -> str:
    """The demo's last line for a FAIL: the failed check ids (stage5_check.json ``failures[].check``, else
    the finding's ``gate``; once each, in their order) and the primary category, so the line alone says
    where to look."""
    checks = list(dict.fromkeys(f.get("check") or f["gate"] for f in verdict.get("failures") or []))
    return (f"Stage 5 verification FAILED: {', '.join(checks) or 'no failed check recorded'} "
            f"(failure_category {verdict.get('primary_failure_category')}).")


def finish(d: Driver, agent: Agent) -> tuple[int, dict[str, Any]]:
    """The summary of the delivered evidence (the files the scripts wrote, as the last steps printed them)."""
    verdict = agent.data.get("verify") or fsio.read_json(d.op / "docs/perf/stage5_check.json", what="stage5_check")
    passed = verdict.get("verdict", verdict.get("status")) == "PASS"
    line = "Stage 5 verification PASSED." if passed else verdict_failed(verdict)
    perf = fsio.read_json(d.op / "performance.json", what="performance.json")
    selection = fsio.read_json(d.op / "docs/perf/selection.json", what="selection.json")
    result = demo_plan.summary(perf, selection, verdict, str(d.op / "PERFORMANCE_REPORT.md"), line)
    confirm = agent.data.get("confirm") or {}
    result["confirm"] = {k: confirm.get(k) for k in ("verdict", "consistent", "ratio", "ratio_ci", "delta",
                                                     "attempt", "limit", "action")}
    return (0 if passed else 1), result


def check_backend(op: opfolder.Operator) -> None:
    """Before step 1: the plan's backend must be usable here (e.g. the pypto-sim extra installed);
    otherwise one environment error names the plan and the install command, and nothing is copied."""
    name = op.plan.protocol.backend
    try:
        backends.get_backend(name).check_environment()
    except EnvError as exc:
        raise EnvError(op.folder / "variants/variants.json", "protocol.backend",
                       exc.problem, exc.fix) from None


def run_demo(workdir: str | Path | None = None, *, op_dir: str | Path | None = None, keep: bool = False,
             progress: Callable[[str], None] = print, bar_stream: TextIO | None = None) -> tuple[int, dict[str, Any]]:
    """The whole Stage 5 run on ``op_dir`` (default: the default example) in a new ``run_NNN`` under
    ``workdir``; returns (stage5_check exit code, summary). Earlier runs are removed unless ``keep``."""
    op = opfolder.load(op_dir or opfolder.example(opfolder.DEFAULT_EXAMPLE))
    check_backend(op)
    base = Path(workdir) if workdir else DEFAULT_WORKDIR
    run, copy = prepare(base, op.folder)
    d = Driver(copy, run / "demo_logs", progress, bar_stream)
    start = time.monotonic()
    progress(f"demo: operator {op.name} copied to {copy} (step logs in {d.logs})")
    agent, _ = run_procedure(d, op)
    code, result = finish(d, agent)
    outcomes = agent.outcomes
    removed = [] if keep else prune(base, run)
    result.update(operator=op.name, outcomes=outcomes, workdir=str(run), removed_earlier_runs=removed,
                  steps_run=d.ran, seconds=round(time.monotonic() - start, 1))
    fsio.write_json(run / "demo_logs" / "summary.json", result)
    return code, result
