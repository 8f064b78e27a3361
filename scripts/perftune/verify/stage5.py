"""stage5-check: the Stage 4 static gates, IN, then P1-P10 (DESIGN §8 + #16), every number recomputed.

Each gate is a function ``(ctx) -> list[Finding]``; an empty list is PASS. The verdict never
depends on numbers an agent wrote: P4 recomputes ``performance.json`` from the raw files of the two
rounds (``compare.load_formal``) and compares, P6 recomputes the target status, P7 recomputes the
ledger closure and the best-version choice. Category mapping (docs/stage5-check.md):

- missing/corrupt/contradictory frozen input (manifest, SPEC coverage, golden binding, the frozen-input
  record and manifest replacements, :mod:`.contract_history`) →
  ``stage5_contract_blocked``; a dispatch target that differs from the frozen one → ``dispatch_invalid``;
- missing or empty deliverable files (P1) → ``missing_file``;
- stitched, reused, tampered or non-recomputable evidence (P1 citations, P3, P4, P6, P8) →
  ``performance_evidence_invalid``; inputs other than the frozen case, a weakened precision gate,
  memoised/precomputed outputs or work moved out of the timed op (P9, P10) → ``cheating``; a
  speed-up the verifier's own re-measurement does not reproduce (P10) →
  ``performance_evidence_invalid``; open ledger or a delivered version that is not the recomputed
  choice (P7) → ``performance_item_coverage_invalid``; failing P0 tests (P5) → ``precision_failure``
  or ``runtime_failure``; Stage 4 gate failures keep their own categories.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..decide import item_decision
from ..measure import correctness, evidence
from .. import fsio
from ..contract import manifest, protocol, schemas
from ..errors import ContractError, PerftuneError
from . import baseline_arm, beyond_p0, capture_window, cited_evidence, contract_history, final_attempts
from . import plausibility, provenance, remeasure, resimulate, sampled_values, search_check, sim_launch, timed_calls
from .checks import Finding, finding, findings
from . import soundness as sound, stage4 as stage4_mod, stage5_evidence as ev, terminal_model, verdict as verdict_mod
from .verdict import SUGGESTED_ACTION, Stage5Result, exit_code, render_text  # noqa: F401 (the CLI's names)

P1_FILES = (protocol.PERFORMANCE_REPORT_MD, protocol.PERFORMANCE_JSON, protocol.PERFORMANCE_LOG,
            protocol.PERF_REPORT_MD)
_CITED = re.compile(r"(?<![\w/.-])(docs/perf/[^\s`'\")\]|<>]+|\.\./[^\s`'\")\]|<>]+|/(?:[\w.-]+/)+[\w.-]+)")


class Blocked(Exception):
    """A gate cannot run because an earlier input is unusable (already reported elsewhere)."""


@dataclass
class Context:
    """Lazily loaded inputs shared by the gates; a load failure is reported once."""
    op_dir: Path
    target_case_ids: tuple[str, ...]
    selection_mode: str
    rerun_tests: bool = True
    remeasure: bool | None = None          # None: on for the cpu backend, off for msprof
    replay: dict[str, Any] | None = None   # a cited P10 note: re-derived from its archive (verify/rederive.py)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def manifest(self) -> manifest.Manifest:
        path = self.op_dir / protocol.MANIFEST_NAME
        man = manifest.load_manifest(path)
        if man.protocol is None:
            raise ContractError(path, "schema_version", "a v1 manifest has no frozen protocol",
                                "freeze a v2 manifest with freeze_cases.py")
        self.inputs["manifest"] = fsio.file_record(path, self.op_dir)
        return man

    @functools.cached_property
    def performance(self) -> dict[str, Any]:
        path = self.op_dir / protocol.PERFORMANCE_JSON
        obj = fsio.read_json(path, what="performance.json")
        schemas.validate(obj, "performance", path)
        self.inputs["performance"] = fsio.file_record(path, self.op_dir)
        return obj

    @functools.cached_property
    def rounds(self) -> tuple[evidence.RoundEvidence, evidence.RoundEvidence]:
        perf = self.performance
        refs = (perf["baseline_collection_id"],
                perf["final_collection_id"])
        return evidence.load_round(self.op_dir, refs[0]), evidence.load_round(self.op_dir, refs[1])

    @functools.cached_property
    def delivered_sha(self) -> str:
        files = evidence.source_files(self.op_dir, self.manifest)
        return evidence.executable_sha256(self.op_dir, files)


def _guard(ctx: Context, name: str, category: str) -> Any:
    """Load ``ctx.<name>``; turn its failure into a finding once, and Blocked afterwards."""
    failed = ctx.notes.setdefault("failed_loads", {})
    if name in failed:
        raise Blocked(name)
    try:
        return getattr(ctx, name)
    except PerftuneError as exc:
        failed[name] = (category, exc.line())
        raise Blocked(name) from None


def gate_p1(ctx: Context) -> list[Finding]:
    out = []
    for name in P1_FILES:
        path = ctx.op_dir / name
        if path.is_symlink() or not path.is_file() or path.stat().st_size == 0:
            found = "a symlink" if path.is_symlink() else "empty" if path.is_file() else "missing"
            out.append(finding("P1.files", "missing_file", f"{name} is missing, empty or not a regular file",
                               (name,), actual=found))
    report = ctx.op_dir / protocol.PERFORMANCE_REPORT_MD
    if report.is_file() and not report.is_symlink():
        raw = sorted(set(_CITED.findall(report.read_text(encoding="utf-8", errors="replace"))))
        for cited in raw:
            problem = ev.citation_problem(ctx.op_dir, cited.rstrip(".,:;"))
            if problem:
                out.append(finding("P1.citations", "performance_evidence_invalid", problem, (cited,)))
        out += findings("P1.cited_evidence", cited_evidence.report_problems(ctx.op_dir, [c.rstrip(".,:;") for c in raw]),
                        category="performance_evidence_invalid")
        out += findings("P1.report_rendering", ev.report_rendering_problems(ctx.op_dir))
    return out


def gate_p2(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    out = findings("P2.spec_coverage", ev.coverage_problems(ctx.op_dir, man), category="stage5_contract_blocked")
    if sorted(ctx.target_case_ids) != sorted(man.target_case_ids) or ctx.selection_mode != man.selection_mode:
        out.append(finding("P2.dispatch_target", "dispatch_invalid",
                           f"dispatch target {sorted(ctx.target_case_ids)}/{ctx.selection_mode} differs from "
                           f"the frozen optimization_target {sorted(man.target_case_ids)}/{man.selection_mode}",
                           expected=f"{sorted(man.target_case_ids)}/{man.selection_mode}",
                           actual=f"{sorted(ctx.target_case_ids)}/{ctx.selection_mode}"))
    record = set(contract_history.frozen_record_problems(ctx.op_dir, contract_history.round_headers(ctx.op_dir)))
    for problem in contract_history.problems(ctx.op_dir, ctx.inputs["manifest"]):
        out += findings("P2.frozen_inputs" if problem in record else "P2.manifest_history", [problem])
    out += findings("P2.stage4_inputs", [(cat, msg, check, exp, act)
                                          for check, cat, msg, exp, act in provenance.p2_problems(ctx.op_dir, man)])
    try:
        rounds = ctx.rounds
    except PerftuneError:
        return out  # P3 reports unusable rounds
    for rnd in rounds:
        out += findings("P2.protocol", ev.protocol_problems(rnd, man, ctx.inputs["manifest"]),
                        (fsio.display_path(rnd.path, ctx.op_dir),))
    out += findings("P2.fingerprint", sound.fingerprint_problems(*rounds))
    return out


def gate_p3(ctx: Context) -> list[Finding]:
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    bad = "performance_evidence_invalid"
    if perf["baseline_collection_id"] == perf["final_collection_id"]:
        return [finding("P3.distinct_rounds", bad, "baseline and final are the same round",
                        (perf["final_collection_id"],), actual=f"both {perf['final_collection_id']}")]
    base, final = _guard(ctx, "rounds", bad)
    out = []
    for role, rnd in (("baseline", base), ("final", final)):
        if rnd.collection.get("mode") != "compare":
            out.append(finding("P3.formal_rounds", bad, f"{role} round is not a formal compare",
                               (rnd.collection_id,), actual=f"mode {rnd.collection.get('mode')}"))
    if base.collection_id == final.collection_id:
        out.append(finding("P3.distinct_rounds", bad, "baseline and final resolve to one round",
                           actual=f"both {base.collection_id}"))
    if final.executable_sha256 != ctx.delivered_sha:
        out.append(finding("P3.delivered_code", bad, "final round measured other code than the delivered sources",
                           (final.executable_sha256, ctx.delivered_sha), expected=f"sha256 {ctx.delivered_sha[:12]}",
                           actual=f"sha256 {final.executable_sha256[:12]}"))
    out += findings("P3.reused_samples", ev.reused_samples(base, final), category=bad)
    problems, ctx.notes["provenance"] = provenance.p3_problems(ctx.op_dir, base, final)
    with contextlib.suppress(PerftuneError):   # P4 reuses it; where it fails, P4 says why (P4.inputs)
        ctx.notes["recomputed"] = ev.recompute_performance(ctx.op_dir, perf)
    attempt_problems, ctx.notes["provenance"]["final_attempts"] = final_attempts.check(
        ctx.op_dir, perf, ctx.notes.get("recomputed"))
    return out + findings("P3.history_chain", [(cat, msg, check, exp, act) for check, cat, msg, exp, act in problems]) \
        + findings("P3.final_attempts", attempt_problems)   # every attempt counts: the figure is the rule's


def gate_p4(ctx: Context) -> list[Finding]:
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    _guard(ctx, "rounds", "performance_evidence_invalid")
    recomputed = ctx.notes.get("recomputed") or ev.recompute_performance(ctx.op_dir, perf)   # P3's, when it ran
    ctx.notes["recomputed"] = recomputed
    diffs = ev.json_differences(perf, recomputed)
    out = findings("P4.rendering", ev.rendering_problems(ctx.op_dir, recomputed), category="performance_evidence_invalid")
    if diffs:
        first = diffs[0].split(": ", 1)
        out.append(finding("P4.recomputation", "performance_evidence_invalid",
                           f"{len(diffs)} value(s) in performance.json differ from the recomputation from raw "
                           "samples", tuple(diffs[:10]), expected=f"{first[0]} as recomputed",
                           actual=f"{len(diffs)} differ, first {diffs[0]}"))
    return out


def gate_p5(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    record, rerun = ev.correctness_record(ctx.op_dir, man, ctx.delivered_sha, rerun=ctx.rerun_tests)
    ctx.notes["correctness"] = {"run_id": record.get("run_id") if record else None, "rerun": rerun}
    ctx.notes["correctness_record"] = record
    if record is None:
        return [finding("P5.correctness_run", "runtime_failure", "no correctness run of the delivered sources",
                        ("run check_correctness.py",), expected=f"a run of sha256 {ctx.delivered_sha[:12]}",
                        actual="none")]
    out = [finding("P5.tests_pass", "precision_failure" if case.get("matched_ratio") is not None else "runtime_failure",
                   f"{'P0 case' if case.get('p0', True) else 'non-P0 test'} {case['id']} fails its test",
                   (str(case.get("output_tail", ""))[-300:],), expected=f"{case['id']} passes",
                   actual="failed" + (f", matched_ratio {case['matched_ratio']}" if case.get("matched_ratio")
                                      is not None else ""))
           for case in record["cases"] if not case["passed"]]
    missing = correctness.missing_tests(ctx.op_dir, record)
    if missing:  # the article's complete correctness run: every test of test_<op>.py, P0 or not
        out.append(finding("P5.every_test", "runtime_failure", f"correctness run {record['run_id']} did not run the "
                           f"tests {missing}", ("run check_correctness.py (it runs every test)",),
                           actual=f"not run: {missing}"))
    return out


def gate_p6(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    base, _ = _guard(ctx, "rounds", "performance_evidence_invalid")
    problems, golden_state = ev.golden_problems(ctx.op_dir, man, base)
    out = findings("P6.golden_contract", problems)
    ctx.notes["target_status"] = {"golden": golden_state}
    try:
        recomputed = ctx.notes.get("recomputed") or ev.recompute_performance(ctx.op_dir, perf)
    except PerftuneError as exc:
        return out + [finding("P6.target_status", "performance_evidence_invalid",
                              f"target status cannot be recomputed: {exc.line()}")]
    for key in ("default_target_status", "valid_for_target_met"):
        if perf.get(key) != recomputed.get(key):
            out.append(finding("P6.target_status", "performance_evidence_invalid",
                               f"{key} is {perf.get(key)!r} but recomputes to {recomputed.get(key)!r}",
                               expected=f"{key} = {recomputed.get(key)!r}", actual=f"{key} = {perf.get(key)!r}"))
    ctx.notes["target_status"].update({k: recomputed.get(k) for k in ("default_target_status", "user_target")})
    return out


def gate_p7(ctx: Context) -> list[Finding]:
    _guard(ctx, "manifest", "stage5_contract_blocked")
    cat = "performance_item_coverage_invalid"
    out = (findings("P7.ledger", ev.ledger_problems(ctx.op_dir), category=cat)
           + findings("P7.cited_evidence", cited_evidence.ledger_problems(ctx.op_dir), category=cat)
           + findings("P7.cited_paths", cited_evidence.path_problems(ctx.op_dir), category=cat)
           + findings("P7.selection", ev.selection_problems(ctx.op_dir, ctx.delivered_sha), category=cat)
           + findings("P7.search", search_check.problems(ctx.op_dir)))
    led = ctx.op_dir / protocol.PERF_DIR / protocol.LEDGER_NAME
    if led.is_file():  # the ledger cannot lie: every item's decision recomputed by the frozen rule
        obj = fsio.read_json(led, what="ledger")
        out += findings("P7.item_decision", item_decision.decision_problems(ctx.op_dir, obj), category=cat)
        out += findings("P7.judged_code", [(cat, msg, "P7.judged_code", want, got) for _item, msg, want, got
                                           in item_decision.judged_problems(ctx.op_dir, obj)])
    return out


def gate_p8(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    cat = "performance_evidence_invalid"
    record = terminal_model.load_record(ctx.op_dir)
    return (findings("P8.terminal_evidence", ev.terminal_problems(ctx.op_dir, man, perf, ctx.delivered_sha),
                     category=cat)
            + findings("P8.work_model", terminal_model.model_problems(man, record), category=cat)
            + findings("P8.below_floor", [(c, msg, None, exp, act)
                                          for c, msg, exp, act in terminal_model.confirmed_floor_problems(ctx.op_dir, man,
                                                                                                  record)]))


def gate_p9(ctx: Context) -> list[Finding]:
    """Inputs attested and equal to the golden rebuild; the frozen precision gate applied and met."""
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    base, final = _guard(ctx, "rounds", "performance_evidence_invalid")
    golden, problem = sound.rebuild_golden(ctx.op_dir, man)
    ctx.notes["golden_inputs"] = golden
    out = [finding("P9.golden_rebuild", "stage5_contract_blocked", problem)] if problem else []
    rounds = {r.collection_id: r for r in (base, final)}
    for name in sound.ranked_rounds(ctx.op_dir):
        if name not in {r.path.name for r in rounds.values()}:
            try:
                rnd = evidence.load_round(ctx.op_dir, name)
                rounds[rnd.collection_id] = rnd
            except PerftuneError as exc:
                out.append(finding("P9.ranked_round", "performance_evidence_invalid", f"ranked round {name}: "
                                   f"{exc.line()}"))
    out += findings("P9.attestation", sound.attestation_problems(ctx.op_dir, man, list(rounds.values()), golden))
    out += findings("P9.precision_gate", sound.precision_problems(ctx.op_dir, man, ctx.notes.get("correctness_record")))
    checked = list(rounds.values())
    runtime = timed_calls.problems(man, checked, ctx.notes.get("correctness_record"), ctx.delivered_sha)
    runtime += sim_launch.problems(man, checked)   # pypto-sim: the work is in the launch
    runtime += capture_window.problems(man, base, final, man.protocol.op_name)   # msprof: the whole capture
    out += findings("P9.timed_output", [(cat, msg, check, want, got) for check, cat, msg, want, got in runtime])
    out += findings("P9.sampled_values", [(cat, msg, check, want, got) for check, cat, msg, want, got in (
        sampled_values.value_problems(ctx.op_dir, man, checked, ctx.delivered_sha, golden)
        + sampled_values.dtype_problems(man, checked, ctx.delivered_sha))])
    problems, ctx.notes["beyond_p0"] = beyond_p0.run(ctx.op_dir, man, base, final)   # shapes, tails, obligations
    return out + [finding(c, cat, msg, expected=want, actual=got) for c, cat, msg, want, got in problems]


P10_CHECKS = {"performance_evidence_invalid": "P10.reproduced", "cheating": "P10.wrapper_share",
              "runtime_failure": "P10.gap_timing"}   # remeasure.run's pairs; re-simulation: P10.resimulated


def gate_p10(ctx: Context) -> list[Finding]:
    """The verifier re-measures final vs baseline code (target cases) and times wrapper vs op."""
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    base, final = _guard(ctx, "rounds", "performance_evidence_invalid")
    ctx.notes["plausibility"] = block = plausibility.assess(ctx.op_dir, perf, man.target_case_ids)
    exact = resimulate.applies(man.protocol.backend)   # pypto-sim: re-simulate, identical cycles
    default = man.protocol.backend == "cpu" or exact
    on = ctx.remeasure if ctx.remeasure is not None else default
    ran = on if ctx.replay is None else ctx.replay.get("status") == "run"
    plausibility.follow_up(block, man.protocol.backend, ran)   # the message says what runs
    forced = set(block["implausible"])   # P10.plausibility: the fresh-data run on every implausible case
    if ctx.replay is not None:   # a consumer re-derives the verdict (verify/rederive.py): nothing measured
        if ctx.replay.get("status") != "run":
            ctx.notes["remeasure"] = ctx.replay
            return arm_findings(man, base, final, None)
        problems, note = (resimulate.replay(ctx.op_dir, ctx.replay) if exact else
                          remeasure.replay(ctx.op_dir, man, perf, ctx.replay))
    elif not on:
        ctx.notes["remeasure"] = {"status": "not_run", "default": "on" if default else "off", "reason": (
            "switched off by --no-remeasure" if default else "msprof: runs only with --remeasure, on the card")
            + "; complete_stage 5 accepts only a check that re-measured"}
        return arm_findings(man, base, final, None)
    else:
        problems, note = (resimulate.run(ctx.op_dir, man, base, final, force_fresh=forced) if exact else
                          remeasure.run(ctx.op_dir, man, perf, base, final, force_fresh=forced))
    ctx.notes["remeasure"] = note
    where = (note.get("path", ""),)
    rows = {row["case"]: row for row in note.get("cases", [])}
    out = []
    for problem in problems:   # a pair gets its check from its category, figures from the note
        check = "P10.resimulated" if exact else P10_CHECKS.get(problem[0], "P10.reproduced")
        out += findings(check, [problem if len(problem) > 2 else problem + remeasure.figures(check, problem[1], rows)],
                        where)
    out += arm_findings(man, base, final, note)
    golden = ctx.notes.get("golden_inputs") or {}
    out += findings("P10.remeasured_values", [(cat, msg, check, want, got) for check, cat, msg, want, got in
                                              sampled_values.remeasured_problems(ctx.op_dir, man, note, golden)], where)
    for row in note.get("cases", []):
        expected = [[list(s), d, h] for s, d, h in golden.get(row["case"], [])]
        if golden and [remeasure.json_rows(k) for k in row["inputs"]] != [remeasure.json_rows(expected)]:
            out.append(finding("P10.remeasured_inputs", "cheating", f"case {row['case']}: the re-measured call "
                               "received other inputs than the golden factory's seed-42 inputs", where,
                               actual=f"{len(row['inputs'])} input set(s), not the rebuilt one"))
    return out


def arm_findings(man, base, final, note) -> list[Finding]:
    return findings("P10.baseline_arm", [(cat, msg, check, want, got) for check, cat, msg, want, got in
                                         baseline_arm.problems(man, base, final, note)])


GATES: tuple[tuple[str, str, Callable[[Context], list[Finding]]], ...] = (
    ("P1", "deliverable files exist and cite existing evidence", gate_p1),
    ("P2", "frozen contract, SPEC coverage, dispatch target, identical protocol", gate_p2),
    ("P3", "two independent complete formal rounds of the delivered code", gate_p3),
    ("P4", "every number recomputes from raw samples", gate_p4),
    ("P5", "delivered tests pass (P0 and every other test)", gate_p5),
    ("P6", "golden contract and target status recomputed", gate_p6),
    ("P7", "ledger closed and the delivered version is the recomputed choice", gate_p7),
    ("P8", "terminal evidence per P0 case", gate_p8),
    ("P9", "measured inputs and the precision gate are the frozen ones", gate_p9),
    ("P10", "the verifier's own paired re-measurement reproduces every target speed-up", gate_p10),
)


LOADS = {"manifest": "PERFORMANCE_CASES.json loads (v2, frozen protocol)",
         "performance": "performance.json loads and validates", "rounds": "both rounds load (complete, sealed)"}


def run_gates(ctx: Context, before_p10: Callable[[], Any] = lambda: None) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Run the gates of :data:`GATES` in order; a gate whose input failed to load is ``blocked``.
    ``before_p10`` runs first (the work started beside the gates ends before the re-measurement)."""
    rows, all_found = [], []
    for gate_id, name, gate in GATES:
        if gate_id == "P10":
            before_p10()
        before = dict(ctx.notes.get("failed_loads", {}))
        try:
            found = gate(ctx)
            status = "FAIL" if found else "PASS"
        except Blocked as exc:
            found, status = [], "blocked"
            detail = f"input {exc.args[0]} is unusable"
        except PerftuneError as exc:
            found, status = [finding(f"{gate_id}.inputs", "performance_evidence_invalid", exc.line())], "FAIL"
        new_loads = {k: v for k, v in ctx.notes.get("failed_loads", {}).items() if k not in before}
        found = [finding(f"{gate_id}.inputs", cat, msg, expected=LOADS[what], actual=msg)
                 for what, (cat, msg) in new_loads.items()] + found
        if new_loads:
            status = "FAIL"
        if status != "blocked":
            detail = "; ".join(f.message for f in found[:3]) if found else "ok"
        rows.append({"id": gate_id, "name": name, "status": status, "detail": detail})
        all_found += found
    return rows, all_found


def _stage4_rows(result: Any) -> tuple[list[dict[str, Any]], list[Finding]]:
    rows = [{**row, "id": f"S4.{row['id']}"} for row in result.gate_rows()]
    found = [finding(f"S4.{f['gate']}", f["category"], f["message"], tuple(f["evidence"]), expected=f["expected"],
                     actual=f["actual"]) for f in result.findings()]
    return rows, found


def _input_rows(op_dir: Path) -> tuple[list[dict[str, Any]], list[Finding]]:
    """The Stage 1-4 inputs (docs/stage-artefacts.md), mandatory in an orchestrated run."""
    from .stage_check import stage5_inputs
    name = "Stage 1-4 inputs valid (orchestrated run)"
    if not (op_dir / protocol.STATE_NAME).is_file():
        return [{"id": "IN", "name": name, "status": "not_applicable",
                 "detail": "standalone perf-tune run (no .orchestrator_state.json): Stage 1-4 inputs optional"}], []
    found = findings("IN.stage_inputs", stage5_inputs(op_dir))
    detail = "; ".join(f.message for f in found[:3]) if found else "ok"
    return [{"id": "IN", "name": name, "status": "FAIL" if found else "PASS", "detail": detail}], found


def check(op_dir: str | Path, target_case_ids: list[str], selection_mode: str, *,
          rerun_tests: bool = True, remeasure: bool | None = None, replay: dict[str, Any] | None = None
          ) -> Stage5Result:
    """Run the Stage 4 static gates, IN and P1-P10 on ``op_dir``; never modifies deliverables. ``replay``: the
    P10 note of an earlier verdict, re-derived from its archive instead of measuring (``verify/rederive.py``)."""
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the custom/<op> directory")
    ctx = Context(root, tuple(target_case_ids), selection_mode, rerun_tests, remeasure, replay=replay)
    delivery = stage4_mod.read_delivery(root)
    # Stage 4's import probe is a process of its own (importing pypto takes seconds): it runs beside
    # the gates P1-P9 and has ended before P10 times anything
    with ThreadPoolExecutor(max_workers=1) as pool:
        importing = pool.submit(stage4_mod.probe_delivery, *delivery)
        p_rows, p_findings = run_gates(ctx, before_p10=importing.result)
        stage4 = stage4_mod.finish(*delivery, importing.result())
    rows, findings = _stage4_rows(stage4)
    in_rows, in_findings = _input_rows(root)
    rows, findings = in_rows + rows, in_findings + findings
    try:
        delivered = ctx.delivered_sha
    except PerftuneError:
        delivered = None
    inputs = {**{f"stage4:{k}": v for k, v in stage4.inputs.items()}, **ctx.inputs, **verdict_mod.judged_files(root)}
    return Stage5Result(root.resolve().name, {"case_ids": list(target_case_ids), "selection_mode": selection_mode},
                        stage4, rows + p_rows, findings + p_findings, inputs,
                        ctx.notes.get("target_status") or {}, delivered, ctx.notes.get("remeasure"),
                        ctx.notes.get("provenance"), ctx.notes.get("plausibility"), ctx.notes.get("beyond_p0"))
