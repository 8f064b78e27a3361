"""stage5-check: the Stage 4 static gates, then P1-P10 (DESIGN §8 + #16), every number recomputed.

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

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..decide import item_decision
from ..measure import correctness, evidence
from .. import fsio
from ..contract import manifest, protocol, schemas
from ..errors import ContractError, PerftuneError
from . import contract_history, remeasure, resimulate
from . import soundness as sound
from . import stage5_evidence as ev, terminal_model

P1_FILES = (protocol.PERFORMANCE_REPORT_MD, protocol.PERFORMANCE_JSON, protocol.PERFORMANCE_LOG,
            protocol.PERF_REPORT_MD)
_CITED = re.compile(r"(?<![\w/.-])(docs/perf/[^\s`'\")\]|<>]+|\.\./[^\s`'\")\]|<>]+|/(?:[\w.-]+/)+[\w.-]+)")


@dataclass(frozen=True)
class Finding:
    gate: str
    category: str
    message: str
    evidence: tuple[str, ...] = ()
    check: str = ""                 # the check id below the gate, e.g. ``P2.fingerprint`` (issue 29)
    expected: str | None = None     # what the check expected, as printed
    actual: str | None = None       # what it found

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.gate, "check": self.check or self.gate, "category": self.category,
                "message": self.message, "expected": self.expected, "actual": self.actual,
                "evidence": list(self.evidence)}


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
        failed[name] = Finding("load", category, exc.line())
        raise Blocked(name) from None


def gate_p1(ctx: Context) -> list[Finding]:
    out = []
    for name in P1_FILES:
        path = ctx.op_dir / name
        if path.is_symlink() or not path.is_file() or path.stat().st_size == 0:
            out.append(Finding("P1", "missing_file", f"{name} is missing, empty or not a regular file",
                               (name,)))
    report = ctx.op_dir / protocol.PERFORMANCE_REPORT_MD
    if report.is_file() and not report.is_symlink():
        for cited in sorted(set(_CITED.findall(report.read_text(encoding="utf-8", errors="replace")))):
            problem = ev.citation_problem(ctx.op_dir, cited.rstrip(".,:;"))
            if problem:
                out.append(Finding("P1", "performance_evidence_invalid", problem, (cited,)))
    return out


def gate_p2(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    out = [Finding("P2", "stage5_contract_blocked", msg) for msg in ev.coverage_problems(ctx.op_dir, man)]
    if sorted(ctx.target_case_ids) != sorted(man.target_case_ids) or ctx.selection_mode != man.selection_mode:
        out.append(Finding("P2", "dispatch_invalid",
                           f"dispatch target {sorted(ctx.target_case_ids)}/{ctx.selection_mode} differs from "
                           f"the frozen optimization_target {sorted(man.target_case_ids)}/{man.selection_mode}"))
    out += [Finding("P2", cat, msg) for cat, msg in contract_history.problems(ctx.op_dir, ctx.inputs["manifest"])]
    try:
        rounds = ctx.rounds
    except PerftuneError:
        return out  # P3 reports unusable rounds
    for rnd in rounds:
        out += [Finding("P2", cat, msg, (fsio.display_path(rnd.path, ctx.op_dir),))
                for cat, msg in ev.protocol_problems(rnd.collection, man, ctx.inputs["manifest"])]
    out += [Finding("P2", cat, msg) for cat, msg in sound.fingerprint_problems(*rounds)]
    return out


def gate_p3(ctx: Context) -> list[Finding]:
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    if perf["baseline_collection_id"] == perf["final_collection_id"]:
        return [Finding("P3", "performance_evidence_invalid", "baseline and final are the same round",
                        (perf["final_collection_id"],))]
    base, final = _guard(ctx, "rounds", "performance_evidence_invalid")
    out = []
    for role, rnd in (("baseline", base), ("final", final)):
        if rnd.collection.get("mode") != "compare":
            out.append(Finding("P3", "performance_evidence_invalid", f"{role} round is not a formal compare",
                               (rnd.collection_id,)))
    if base.collection_id == final.collection_id:
        out.append(Finding("P3", "performance_evidence_invalid", "baseline and final resolve to one round"))
    if final.collection["executable_sha256"] != ctx.delivered_sha:
        out.append(Finding("P3", "performance_evidence_invalid",
                           "final round measured other code than the delivered sources",
                           (final.collection["executable_sha256"], ctx.delivered_sha)))
    out += [Finding("P3", "performance_evidence_invalid", msg) for msg in ev.reused_samples(base, final)]
    return out


def gate_p4(ctx: Context) -> list[Finding]:
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    _guard(ctx, "rounds", "performance_evidence_invalid")
    recomputed = ev.recompute_performance(ctx.op_dir, perf)
    ctx.notes["recomputed"] = recomputed
    diffs = ev.json_differences(perf, recomputed)
    out = [Finding("P4", "performance_evidence_invalid", msg) for msg in ev.rendering_problems(ctx.op_dir, recomputed)]
    if diffs:
        out.append(Finding("P4", "performance_evidence_invalid",
                           f"{len(diffs)} value(s) in performance.json differ from the recomputation from raw "
                           "samples", tuple(diffs[:10])))
    return out


def gate_p5(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    record, rerun = ev.correctness_record(ctx.op_dir, man, ctx.delivered_sha, rerun=ctx.rerun_tests)
    ctx.notes["correctness"] = {"run_id": record.get("run_id") if record else None, "rerun": rerun}
    ctx.notes["correctness_record"] = record
    if record is None:
        return [Finding("P5", "runtime_failure", "no correctness run of the delivered sources",
                        ("run check_correctness.py",))]
    out = [Finding("P5", "precision_failure" if case.get("matched_ratio") is not None else "runtime_failure",
                   f"{'P0 case' if case.get('p0', True) else 'non-P0 test'} {case['id']} fails its test",
                   (str(case.get("output_tail", ""))[-300:],))
           for case in record["cases"] if not case["passed"]]
    missing = correctness.missing_tests(ctx.op_dir, record)
    if missing:  # the article's complete correctness run: every test of test_<op>.py, P0 or not
        out.append(Finding("P5", "runtime_failure", f"correctness run {record['run_id']} did not run the tests "
                           f"{missing}", ("run check_correctness.py (it runs every test)",)))
    return out


def gate_p6(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    base, _ = _guard(ctx, "rounds", "performance_evidence_invalid")
    out, golden_state = ev.golden_problems(ctx.op_dir, man, base)
    ctx.notes["target_status"] = {"golden": golden_state}
    try:
        recomputed = ctx.notes.get("recomputed") or ev.recompute_performance(ctx.op_dir, perf)
    except PerftuneError as exc:
        out.append(("performance_evidence_invalid", f"target status cannot be recomputed: {exc.line()}"))
        return [Finding("P6", cat, msg) for cat, msg in out]
    for key in ("default_target_status", "valid_for_target_met"):
        if perf.get(key) != recomputed.get(key):
            out.append(("performance_evidence_invalid",
                        f"{key} is {perf.get(key)!r} but recomputes to {recomputed.get(key)!r}"))
    ctx.notes["target_status"].update({k: recomputed.get(k) for k in ("default_target_status", "user_target")})
    return [Finding("P6", cat, msg) for cat, msg in out]


def gate_p7(ctx: Context) -> list[Finding]:
    _guard(ctx, "manifest", "stage5_contract_blocked")
    problems = ev.ledger_problems(ctx.op_dir)
    out = [Finding("P7", "performance_item_coverage_invalid", msg) for msg in problems]
    out += [Finding("P7", "performance_item_coverage_invalid", msg)
            for msg in ev.selection_problems(ctx.op_dir, ctx.delivered_sha)]
    led = ctx.op_dir / protocol.PERF_DIR / protocol.LEDGER_NAME
    if led.is_file():  # the ledger cannot lie: every item's decision recomputed by the frozen rule
        out += [Finding("P7", "performance_item_coverage_invalid", msg)
                for msg in item_decision.decision_problems(ctx.op_dir, fsio.read_json(led, what="ledger"))]
    return out


def gate_p8(ctx: Context) -> list[Finding]:
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    return [Finding("P8", "performance_evidence_invalid", msg)
            for msg in ev.terminal_problems(ctx.op_dir, man, perf, ctx.delivered_sha)
            + terminal_model.model_problems(man, terminal_model.load_record(ctx.op_dir))]


def gate_p9(ctx: Context) -> list[Finding]:
    """Inputs attested and equal to the golden rebuild; the frozen precision gate applied and met."""
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    base, final = _guard(ctx, "rounds", "performance_evidence_invalid")
    golden, problem = sound.rebuild_golden(ctx.op_dir, man)
    ctx.notes["golden_inputs"] = golden
    out = [("stage5_contract_blocked", problem)] if problem else []
    rounds = {r.collection_id: r for r in (base, final)}
    for name in sound.ranked_rounds(ctx.op_dir):
        if name not in {r.path.name for r in rounds.values()}:
            try:
                rnd = evidence.load_round(ctx.op_dir, name)
                rounds[rnd.collection_id] = rnd
            except PerftuneError as exc:
                out.append(("performance_evidence_invalid", f"ranked round {name}: {exc.line()}"))
    out += sound.attestation_problems(ctx.op_dir, man, list(rounds.values()), golden)
    out += sound.precision_problems(ctx.op_dir, man, ctx.notes.get("correctness_record"))
    return [Finding("P9", cat, msg) for cat, msg in out]


def gate_p10(ctx: Context) -> list[Finding]:
    """The verifier re-measures final vs baseline code (target cases) and times wrapper vs op."""
    man = _guard(ctx, "manifest", "stage5_contract_blocked")
    perf = _guard(ctx, "performance", "performance_evidence_invalid")
    base, final = _guard(ctx, "rounds", "performance_evidence_invalid")
    exact = resimulate.applies(man.protocol.backend)   # pypto-sim: re-simulate, identical cycles
    default = man.protocol.backend == "cpu" or exact
    if not (ctx.remeasure if ctx.remeasure is not None else default):
        ctx.notes["remeasure"] = {"status": "not_run", "default": "on" if default else "off", "reason": (
            "switched off by --no-remeasure" if default else "msprof: runs only with --remeasure, on the card")
            + "; complete_stage 5 accepts only a check that re-measured"}
        return []
    problems, note = (resimulate.run(ctx.op_dir, man, base, final) if exact else
                      remeasure.run(ctx.op_dir, man, perf, base, final))
    ctx.notes["remeasure"] = note
    golden = ctx.notes.get("golden_inputs") or {}
    for row in note.get("cases", []):
        expected = [[list(s), d, h] for s, d, h in golden.get(row["case"], [])]
        if golden and [json_rows(k) for k in row["inputs"]] != [json_rows(expected)]:
            problems.append(("cheating", f"case {row['case']}: the re-measured call received other inputs than the "
                             "golden factory's seed-42 inputs"))
    return [Finding("P10", cat, msg, (note.get("path", ""),)) for cat, msg in problems]


def json_rows(key) -> str:
    return json.dumps(key, sort_keys=True)


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


def run_gates(ctx: Context) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Run P1-P8 in order; a gate whose input failed to load is ``blocked``."""
    rows, findings = [], []
    for gate_id, name, gate in GATES:
        before = dict(ctx.notes.get("failed_loads", {}))
        try:
            found = gate(ctx)
            status = "FAIL" if found else "PASS"
        except Blocked as exc:
            found, status = [], "blocked"
            detail = f"input {exc.args[0]} is unusable"
        except PerftuneError as exc:
            found, status = [Finding(gate_id, "performance_evidence_invalid", exc.line())], "FAIL"
        new_loads = [f for k, f in ctx.notes.get("failed_loads", {}).items() if k not in before]
        found = [Finding(gate_id, f.category, f.message) for f in new_loads] + found
        if new_loads:
            status = "FAIL"
        if status != "blocked":
            detail = "; ".join(f.message for f in found[:3]) if found else "ok"
        rows.append({"id": gate_id, "name": name, "status": status, "detail": detail})
        findings += found
    return rows, findings


SUGGESTED_ACTION = {
    "missing_file": "generate the missing deliverable with compare_perf.py / perf_report.py",
    "stage5_contract_blocked": "restore the frozen input (never rebuild it) or report stage5_contract_blocked",
    "dispatch_invalid": "re-dispatch stage5-check with the frozen optimization_target",
    "performance_evidence_invalid": "re-collect the affected formal round(s) with collect_perf.py and "
                                    "regenerate performance.json with compare_perf.py; never edit evidence",
    "performance_item_coverage_invalid": "close every ledger item with evidence and deliver the version "
                                         "select_best.py chooses",
    "precision_failure": "fix the kernel inside Stage 5 (restore the best correct version)",
    "runtime_failure": "fix the crash inside Stage 5 (restore the best correct version)",
    "env_error": "run env_check.py and repair the environment; do not change code",
}


@dataclass
class Stage5Result:
    operator: str
    target: dict[str, Any]
    stage4: Any
    gates: list[dict[str, Any]]
    findings: list[Finding]
    inputs: dict[str, dict[str, Any]]
    target_status: dict[str, Any]
    delivered_sha: str | None
    remeasure: dict[str, Any] | None = None

    @property
    def categories(self) -> list[str]:
        return sorted({f.category for f in self.findings})

    @property
    def primary(self) -> str | None:
        from ..errors import primary_category
        return primary_category(self.categories, stage5=True)

    @property
    def verdict(self) -> str:
        return "PASS" if not self.findings else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "operator": self.operator, "verdict": self.verdict, "target": self.target,
                "gates": self.gates, "failures": [f.as_dict() for f in self.findings],
                "categories": self.categories, "primary_failure_category": self.primary,
                "inputs": self.inputs, "target_status": self.target_status,
                "delivered_executable_sha256": self.delivered_sha,
                **({"remeasure": self.remeasure} if self.remeasure else {})}


def _stage4_rows(op_dir: Path) -> tuple[Any, list[dict[str, Any]], list[Finding]]:
    from .stage4 import run_gates as run_stage4
    result = run_stage4(op_dir)
    rows = [{**row, "id": f"S4.{row['id']}"} for row in result.gate_rows()]
    found = [Finding(f"S4.{f['gate']}", f["category"], f["message"], tuple(f["evidence"])) for f in result.findings()]
    return result, rows, found


def _input_rows(op_dir: Path) -> tuple[list[dict[str, Any]], list[Finding]]:
    """The Stage 1-4 inputs (docs/stage-artefacts.md), mandatory in an orchestrated run."""
    from .stage_check import stage5_inputs
    name = "Stage 1-4 inputs valid (orchestrated run)"
    if not (op_dir / protocol.STATE_NAME).is_file():
        return [{"id": "IN", "name": name, "status": "not_applicable",
                 "detail": "standalone perf-tune run (no .orchestrator_state.json): Stage 1-4 inputs optional"}], []
    found = [Finding("IN", cat, msg) for cat, msg in stage5_inputs(op_dir)]
    detail = "; ".join(f.message for f in found[:3]) if found else "ok"
    return [{"id": "IN", "name": name, "status": "FAIL" if found else "PASS", "detail": detail}], found


def check(op_dir: str | Path, target_case_ids: list[str], selection_mode: str, *,
          rerun_tests: bool = True, remeasure: bool | None = None) -> Stage5Result:
    """Run the Stage 4 static gates and P1-P8 on ``op_dir``; never modifies deliverables."""
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the custom/<op> directory")
    ctx = Context(root, tuple(target_case_ids), selection_mode, rerun_tests, remeasure)
    stage4, rows, findings = _stage4_rows(root)
    in_rows, in_findings = _input_rows(root)
    rows, findings = in_rows + rows, in_findings + findings
    p_rows, p_findings = run_gates(ctx)
    try:
        delivered = ctx.delivered_sha
    except PerftuneError:
        delivered = None
    inputs = {**{f"stage4:{k}": v for k, v in stage4.inputs.items()}, **ctx.inputs}
    return Stage5Result(root.resolve().name, {"case_ids": list(target_case_ids), "selection_mode": selection_mode},
                        stage4, rows + p_rows, findings + p_findings, inputs,
                        ctx.notes.get("target_status") or {}, delivered, ctx.notes.get("remeasure"))


def render_text(result: Stage5Result, evidence_path: str) -> str:
    """The verifier's text verdict (PASS/FAIL template of the verifier agent)."""
    if result.verdict == "PASS":
        return (f"Stage 5 verification PASSED.\nAll {len(result.gates)} checks passed.\n"
                f"Evidence: {evidence_path}\n")
    failed = [g["id"] for g in result.gates if g["status"] in ("FAIL", "blocked")]
    lines = ["Stage 5 verification FAILED.", f"Failed checks: {', '.join(failed)}",
             f"failure_category: {result.primary}", f"all categories: {', '.join(result.categories)}", "Evidence:"]
    for f in result.findings:
        lines.append(f"  [{f.gate}] {f.category}: {f.message}")
        lines += [f"      {e}" for e in f.evidence[:5]]
    lines.append(f"Suggested action: {SUGGESTED_ACTION.get(result.primary, 'fix the failed checks and re-run')}")
    lines.append(f"Machine verdict: {evidence_path}")
    return "\n".join(lines) + "\n"


def exit_code(result: Stage5Result) -> int:
    """0 PASS; 2 when the frozen contract is blocked; 3 when only the environment blocks; else 1."""
    if result.verdict == "PASS":
        return 0
    return {"stage5_contract_blocked": 2, "env_error": 3}.get(result.primary, 1)
