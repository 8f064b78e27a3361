"""The order of SKILL.md's procedure for one operator folder: prepare, the item loop, finish.

Each function runs step keys of :data:`perftune.demo.steps.ORDER` through :class:`Driver`; the
values come from the earlier steps' JSON and from the operator's plan (the stand-in for the
agent's judgement). The item decision after a formal compare is the compare's own
``item_acceptance`` (the frozen rule, ``perftune.decide.acceptance.accept``); every exit code is
obeyed as SKILL.md tells the agent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from . import opfolder, plan as demo_plan
from .driver import DEFAULT_WORKDIR, Driver, prepare, prune
from .. import fsio
from ..errors import CheckFailed, ContractError, EnvError
from ..measure import backends

BOTTLENECK_DIR = "docs/perf/bottleneck"


def setup(d: Driver, op: opfolder.Operator) -> None:
    """SKILL steps 1-6: correctness, freeze, golden, platform, preflight, baseline."""
    proto = op.plan.protocol
    passed, _ = d.correctness()
    if not passed:
        raise CheckFailed(d.op / op.test_file, "baseline", "the baseline fails its own tests", "fix the operator")
    d.values.update(TARGET_IDS=list(op.target_case_ids), SELECTION_MODE=proto.selection_mode,
                    BACKEND=proto.backend, OP_NAME=proto.op_name, DEVICE="0", WARMUP=str(proto.warmup),
                    REPEATS=str(proto.repeats), NOISE_BAND=str(proto.noise_band),
                    GOLDEN_FILE=str(d.op / f"{op.name}_golden.py"),
                    GOLDEN_FUNCTION=op.plan.golden.get("function", f"{op.name}_golden"),
                    GOLDEN_FACTORY=op.plan.golden.get("factory", "golden_cases"),
                    SOURCES_DIR=str(opfolder.sources_dir(d.op)), COMPLIANCE=op.plan.compliance)
    _, frozen = d.run("freeze")
    d.cases = tuple(c["id"] for c in frozen["content"]["cases"])
    d.run("golden")
    if proto.backend == "cpu":
        d.run("platform")
    d.run("preflight")
    base = d.formal("baseline", "v000")
    d.values.update(BASELINE_ROUND=base["round"], BASELINE_COLLECTION=base["collection_id"])


def close_planned(d: Driver, op: opfolder.Operator, closed: dict[str, dict[str, Any]]) -> None:
    """SKILL step 9: close every item the plan closes without an experiment."""
    for c in op.plan.closures:
        if c.same_as is None:
            d.run("close_preset", label=c.item_id, ITEM_ID=c.item_id, STATUS=c.status, APPLICABILITY=c.applicability,
                  GROUNDS=c.grounds, NOTE=c.note, CODE_REF=op.test_file)
            closed[c.item_id] = {}


def close_twins(d: Driver, op: opfolder.Operator, closed: dict[str, dict[str, Any]]) -> None:
    for c in op.plan.closures:
        if c.same_as in closed and c.item_id not in closed and closed[c.same_as]:
            values = {**closed[c.same_as], "ITEM_ID": c.item_id, "RELATION": ["overlap", c.same_as],
                      "NOTE": f"{c.note} (as {c.same_as}): {closed[c.same_as]['NOTE']}"}
            d.run("close_item", label=c.item_id, **values)
            closed[c.item_id] = {}


def _close(d: Driver, closed: dict[str, dict[str, Any]], **values: Any) -> None:
    values = {"REASON_CODE": None, "QUICK_ID": None, "FORMAL_IDS": None, "RELATION": None, **values}
    d.run("close_item", label=values["ITEM_ID"], **values)
    closed[values["ITEM_ID"]] = values


def experiment(d: Driver, op: opfolder.Operator, exp: demo_plan.Experiment, closed: dict[str, dict]) -> str:
    """SKILL steps 11-20 for one item: hypothesis, edit, correctness, quick, formal, decide, record, close."""
    item = {"ITEM_ID": exp.item_id, "HYPOTHESIS": exp.hypothesis, "METRIC": exp.expected_metric}
    if exp.source_kind == "bottleneck_derived":
        evidence = f"{BOTTLENECK_DIR}/terminal_evidence_{d.rounds[d.best]['round']}.json"
        d.run("bottleneck_profile", label=d.best, **d.best_values())
        d.examined.append(evidence)
        d.run("derived_add", label=exp.item_id, TITLE=exp.hypothesis.split(":")[0][:80], **item, **d.best_values())
    else:
        d.run("hypothesis", label=exp.item_id, **item)
    parent = d.best
    d.sources[exp.version_id] = op.variant(exp.version_id)
    d.apply(exp.version_id, op.test_file)
    common = {**item, **d.best_values(), "CODE_REF": f"variants/{exp.version_id}/{op.test_file}"}
    passed, run_id = d.correctness()
    if not passed:  # close first (the tried code is archived while in place), then restore the best
        _close(d, closed, **common, STATUS="rejected", REASON_CODE="correctness_failed", NOTE="precision gate failed")
        d.apply(parent, op.test_file)
        return "rejected (correctness_failed)"
    _, quick = d.run("quick", label=exp.version_id, **d.best_values())   # paired with the current best
    _, screen = d.run("quick_compare", QUICK_ID=quick["collection_id"], **d.best_values())
    promo, common["QUICK_ID"] = screen["promotion"], quick["collection_id"]
    mean = promo["mean_case_speedup"]
    if not promo["promote"]:
        _close(d, closed, **common, STATUS="rejected", REASON_CODE="quick_not_promoted",
               NOTE=f"quick mean speed-up {mean:.3f} vs {parent} (rule: {promo['rule']}, threshold "
                    f"{promo['threshold']}); slower target cases: {promo['slower_target_cases'] or 'none'}")
        d.apply(parent, op.test_file)
        return f"rejected (quick_not_promoted: quick mean speed-up {mean:.3f} vs {parent})"
    entry = d.formal("paired_formal", exp.version_id, **d.best_values())
    code, perf = d.run("formal_compare", ok=(0, 1), ROUND=entry["round"], **d.best_values())
    decided = perf["item_acceptance"]  # the frozen rule's decision (exit 1: a target case is slower)
    status, reason = decided["status"], decided["reason_code"]
    if code == 1 and (status, reason) != ("rejected", "slower"):
        raise CheckFailed(d.logs, "formal_compare", f"exit 1 but item_acceptance {status}/{reason}",
                          "compare_perf.py and the frozen acceptance rule disagree")
    note = f"formal compare, rule {decided['rule']}: {decided['note']}"
    if status == "accepted":  # only accepted versions become candidates: ledger and ranking agree
        d.run("record", label=exp.version_id, VERSION_ID=exp.version_id, ROUND=entry["round"], ITEM_ID=exp.item_id)
    _close(d, closed, **common, STATUS=status, REASON_CODE=reason, NOTE=f"vs {parent}: {note}",
           FORMAL_IDS=[entry["collection_id"], d.rounds[parent]["collection_id"]])
    if status == "accepted":
        d.best = exp.version_id
    else:
        d.apply(parent, op.test_file)
    suite = perf["suite"].get("mean_case_speedup")
    shown = "n/a" if suite is None else f"{suite:.3f}"
    return f"{status}{f' ({reason})' if reason else ''} vs {parent}, suite mean speed-up {shown}"


def explore(d: Driver, op: opfolder.Operator) -> dict[str, str]:
    """SKILL steps 7-20: ledger, planned closures, record v000, every experiment in order."""
    d.run("ledger_init")
    _, shown = d.run("ledger_show")
    items = [i["item_id"] for i in (shown.get("items") if isinstance(shown, dict) else shown) or []]
    missing = demo_plan.unplanned(op.plan, items)
    if missing:
        raise ContractError(op.folder / "variants/variants.json", "closures", f"ledger items without a plan: "
                            f"{missing}", "add an experiment or a closure for each enumerated item")
    closed: dict[str, dict[str, Any]] = {}
    close_planned(d, op, closed)
    d.run("record_baseline", label="v000")
    outcomes = {}
    for exp in op.plan.experiments:
        outcomes[exp.version_id] = experiment(d, op, exp, closed)
        close_twins(d, op, closed)
    return outcomes


def finish(d: Driver, op: opfolder.Operator) -> tuple[int, dict[str, Any]]:
    """SKILL steps 21-31: sweep, check, choose, chosen code in place, final and confirm rounds, evidence, report,
    verify."""
    findings = [x for f in op.plan.sweep_findings for x in ("--finding", f["finding"], f["maps_to"], f["note"])]
    d.run("sweep", SCOPE=op.plan.sweep_scope, FINDINGS=findings,
          EXAMINED=["docs/perf/ledger.json", "docs/perf/candidates.json", *d.examined])
    d.run("ledger_check")
    _, selection = d.run("choose")
    chosen = selection["chosen"]
    saved = json.loads((d.op / "docs/perf/candidates.json").read_text())
    copy = next(c["saved_copy"] for c in saved["candidates"] if c["version_id"] == chosen)
    d.sources["chosen"] = d.op / copy / op.test_file
    d.apply("chosen", op.test_file)
    d.run("stage4")
    passed, _ = d.correctness()
    if not passed:
        raise CheckFailed(d.op / op.test_file, "chosen", f"the chosen version {chosen} fails a test", "see the log")
    d.values["CONFIRM_PARTNER"] = selection["confirm_partner"]
    confirm = {"verdict": "remeasure"}
    while confirm["verdict"] == "remeasure":  # SKILL step 26: re-measure only while the verdict says so
        d.values["CONFIRM_ROUND"] = d.formal("confirm_round", "confirm")["round"]
        _, confirm = d.run("confirm", ok=(0, 1))
    d.values["FINAL_ROUND"] = d.formal("final_formal", "final")["round"]
    _, perf = d.run("final_compare", ok=(0, 1))
    d.run("terminal")
    d.run("report")
    code, verdict = d.run("verify", ok=(0, 1))
    line = "Stage 5 verification PASSED." if code == 0 else "Stage 5 verification FAILED."
    result = demo_plan.summary(perf, selection, verdict, str(d.op / "PERFORMANCE_REPORT.md"), line)
    result["confirm"] = {k: (confirm or {}).get(k) for k in ("verdict", "consistent", "ratio", "ratio_ci", "delta",
                                                             "attempt", "limit", "action")}
    return code, result


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
    d = Driver(copy, run / "demo_logs", progress, bar_stream, sources={"v000": op.folder / op.test_file})
    start = time.monotonic()
    progress(f"demo: operator {op.name} copied to {copy} (step logs in {d.logs})")
    setup(d, op)
    outcomes = explore(d, op)
    code, result = finish(d, op)
    removed = [] if keep else prune(base, run)
    result.update(operator=op.name, outcomes=outcomes, workdir=str(run), removed_earlier_runs=removed,
                  steps_run=d.ran, seconds=round(time.monotonic() - start, 1))
    fsio.write_json(run / "demo_logs" / "summary.json", result)
    return code, result
