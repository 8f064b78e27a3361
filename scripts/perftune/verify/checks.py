"""The catalogue of stage5-check's check ids: one row per check below a gate (issue 29).

Every finding of ``stage5_check.py`` names one catalogued ``check`` (``P2.fingerprint``), what it
expected and what it found. The ids are owned here; docs/stage5-check.md has one row per id and the
verifier prompt lists them (``tests/verify/test_check_ids.py`` holds both to this tuple). A new check
is one line in :data:`P_CHECKS` and one row in docs/stage5-check.md. The Stage 4 gates appear as
``S4.<gate id>``, generated from ``stage4.GATES`` (their owner); the verifier agent's four judgement
items are :data:`JUDGEMENTS` ``J1``–``J4``.

A check function elsewhere returns problems as ``(category, message)`` pairs, or as
``(category, message, check, expected, actual)`` when it names its own check; :func:`findings`
turns either into :class:`Finding` objects, a pair taking the caller's default check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .stage4 import GATES as STAGE4_GATES

GATE_IDS = ("IN", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10")


@dataclass(frozen=True)
class Check:
    id: str
    gate: str
    expects: str        # what the check expects, short (the default ``expected`` of its findings)
    category: str       # the category of its findings (docs/stage5-check.md has the details)


def _c(check_id: str, expects: str, category: str) -> Check:
    return Check(check_id, check_id.split(".")[0], expects, category)


P_CHECKS: tuple[Check, ...] = (
    _c("IN.stage_inputs", "every Stage 1-4 input exists and passes its stage validator", "stage5_contract_blocked"),
    _c("P1.files", "a regular, non-empty file", "missing_file"),
    _c("P1.citations", "a cited path exists inside the operator dir, no symlink", "performance_evidence_invalid"),
    _c("P1.cited_evidence", "every round and correctness record the report cites loads with its seal",
       "performance_evidence_invalid"),
    _c("P1.report_rendering", "PERFORMANCE_REPORT.md (up to its evidence list) is what perf_report.py renders from "
       "the evidence now", "performance_evidence_invalid"),
    _c("P1.edited_after_check", "every file the verdict judged keeps the sha256 it had when the verifier ran "
       "(consumers re-derive the verdict)", "performance_evidence_invalid"),
    _c("P1.verdict_record", "stage5_check.json's verdict and failed checks are the re-derived ones",
       "performance_evidence_invalid"),
    _c("P2.spec_coverage", "manifest cases = SPEC P0 rows, each with its test", "stage5_contract_blocked"),
    _c("P2.dispatch_target", "the frozen optimization_target", "dispatch_invalid"),
    _c("P2.frozen_inputs", "FROZEN_INPUTS.json present and the one every round recorded", "stage5_contract_blocked"),
    _c("P2.manifest_history", "manifest replacements only before the first round", "stage5_contract_blocked"),
    _c("P2.stage4_inputs", "every frozen input has the sha256 Stage 4 validated", "stage5_contract_blocked"),
    _c("P2.precision_gate_null", "the precision gate refuses zeros, a constant and the input itself",
       "stage5_contract_blocked"),
    _c("P2.manifest_hash", "the round measured the current manifest", "stage5_contract_blocked"),
    _c("P2.protocol", "the round used the frozen protocol", "performance_evidence_invalid"),
    _c("P2.fingerprint", "baseline and final in one environment", "performance_evidence_invalid"),
    _c("P3.distinct_rounds", "baseline and final are two rounds", "performance_evidence_invalid"),
    _c("P3.formal_rounds", "mode compare", "performance_evidence_invalid"),
    _c("P3.delivered_code", "the final round measured the delivered sources", "performance_evidence_invalid"),
    _c("P3.reused_samples", "no sample sequence or launch used twice", "performance_evidence_invalid"),
    _c("P3.baseline_origin", "the baseline round measured the code of the last stage4-check PASS", "cheating"),
    _c("P3.history_chain", "an unbroken hash chain of rounds (none deleted or replaced)", "performance_evidence_invalid"),
    _c("P3.final_attempts", "each delivered figure is the rule's over every final attempt (decide/attempts.py)",
       "performance_evidence_invalid"),
    _c("P3.final_is_last", "the final round is the last formal round of the delivered code",
       "performance_evidence_invalid"),
    _c("P4.recomputation", "performance.json = the recomputation from raw samples", "performance_evidence_invalid"),
    _c("P4.rendering", "the rendering of the recomputed compare", "performance_evidence_invalid"),
    _c("P5.correctness_run", "a correctness run of the delivered code", "runtime_failure"),
    _c("P5.tests_pass", "the test passes", "precision_failure"),
    _c("P5.every_test", "every test_* of test_<op>.py ran", "runtime_failure"),
    _c("P6.golden_contract", "golden binds to this manifest and device, before the baseline",
       "performance_evidence_invalid"),
    _c("P6.target_status", "the recomputed target status", "performance_evidence_invalid"),
    _c("P7.ledger", "ledger_check passes", "performance_item_coverage_invalid"),
    _c("P7.selection", "the delivered code is the recomputed choice", "performance_item_coverage_invalid"),
    _c("P7.item_decision", "every closed item's decision recomputes from its formal compare under the frozen rule",
       "performance_item_coverage_invalid"),
    _c("P7.judged_code", "a code a formal compare rejected is never accepted later, under any item id",
       "performance_item_coverage_invalid"),
    _c("P7.cited_evidence", "every round, correctness run and file the ledger cites loads and keeps its hash",
       "performance_item_coverage_invalid"),
    _c("P7.cited_paths", "every path the ledger's sweep and items cite exists and keeps its recorded identity",
       "performance_item_coverage_invalid"),
    _c("P7.search", "every declared search measured as frozen (each point once, archived, the sampler's sequence "
       "from its seed) and its choice the rule's best point", "cheating"),
    _c("P8.terminal_evidence", "evaluable terminal evidence of the final round per P0 case",
       "performance_evidence_invalid"),
    _c("P8.work_model", "the frozen work model; attained <= 1.2 x the roof", "performance_evidence_invalid"),
    _c("P8.below_floor", "the final time is not below the frozen work model's floor on the roof", "cheating"),
    _c("P9.golden_rebuild", "the golden factory rebuilds the seed-42 inputs", "stage5_contract_blocked"),
    _c("P9.ranked_round", "every ranked round loads", "performance_evidence_invalid"),
    _c("P9.attestation", "every timed call received the frozen case's golden inputs", "cheating"),
    _c("P9.precision_gate", "the frozen precision gate applied and met, probes pass", "cheating"),
    _c("P9.harness_missing", "every timed cpu call carries the harness record", "performance_evidence_invalid"),
    _c("P9.timed_output", "every timed call returned the correctness run's output bytes on the same inputs", "cheating"),
    _c("P9.timed_output_stable", "one round, arm, case and input give one output digest", "cheating"),
    _c("P9.output_plain", "a plain, contiguous, owned output sharing no memory with an input", "cheating"),
    _c("P9.deferred_output", "the output at return equals the output once the test ended", "cheating"),
    _c("P9.time_floor", "a timed call's wall time >= the CPU time its own thread spent in it (1.05 x + 20 us)",
       "performance_evidence_invalid"),
    _c("P9.timer", "the harness timer is still the one bound before the operator's import", "cheating"),
    _c("P9.threads", "no thread or child process left alive by the call", "cheating"),
    _c("P9.other_cpu", "no CPU spent by other threads after the call returned", "cheating"),
    _c("P9.patched_library", "no numpy, math, time, builtins or torch attribute replaced", "cheating"),
    _c("P9.process_settings", "the process's CPU affinity, scheduling class, nice and thread-pool variables are the "
       "runner's", "cheating"),
    _c("P9.file_io", "no file input/output above 64 KiB during a timed call", "cheating"),
    _c("P9.host_compute", "pypto-sim: no torch compute in the op function outside the simulated launch", "cheating"),
    _c("P9.launch_output", "pypto-sim: every output of a timed call is what its launch wrote", "cheating"),
    _c("P9.launch_work", "pypto-sim: the launch moved >= 0.5 x the work model's read and write bytes", "cheating"),
    _c("P9.capture_window", "msprof: other kernels' device time did not grow from the baseline to the delivered code", "cheating"),
    _c("P9.reference_call", "the op calls no function of the frozen reference or golden module", "cheating"),
    _c("P9.sampled_values", "the values kept of random timed calls and the last meet the frozen gate against the "
       "reference on their inputs", "cheating"),
    _c("P9.output_dtype", "every timed output has the case's SPEC dtype", "cheating"),
    _c("P9.support_shapes", "shapes drawn from the frozen support range meet the frozen gate (as the baseline does)",
       "cheating"),
    _c("P9.tail_inputs", "inputs from the frozen distribution's far tails meet the frozen gate (as the baseline does)",
       "cheating"),
    _c("P9.kb_obligation", "an observable KB obligation holds on the delivered code (accumulation >= float32)",
       "cheating"),
    _c("P10.reproduced", "the re-measurement reproduces the delivered speed-up (R1, R2)",
       "performance_evidence_invalid"),
    _c("P10.wrapper_share", "wrapper/op gap growth <= max(10 % of the final op, 50 us)", "cheating"),
    _c("P10.gap_timing", "the wrapper/op timing runs", "runtime_failure"),
    _c("P10.remeasured_inputs", "the re-measured call received the golden seed-42 inputs", "cheating"),
    _c("P10.remeasured_values", "every kept timed call of the re-measurement (seed-42 and fresh-data attempts) meets "
       "the frozen gate against the reference on the inputs it received", "cheating"),
    _c("P10.fresh_data", "the speed-up holds on fresh inputs drawn at check time (>= 0.35 x)", "cheating"),
    _c("P10.baseline_arm", "the fastest paired baseline-arm sample <= 1.5x the fastest of the baseline code alone, "
       "measured beside it at check time", "cheating"),
    _c("P10.plausibility", "a delivered speed-up <= 4x what the accepted items explain (reported, never a failure "
       "alone)", "reported"),
    _c("P10.resimulated", "re-simulated cycles identical to the recorded samples", "performance_evidence_invalid"),
    *(_c(f"{gate}.inputs", "the gate's inputs load and its recomputation runs", "performance_evidence_invalid")
      for gate in GATE_IDS[1:]),
)
S4_CHECKS: tuple[Check, ...] = tuple(Check(f"S4.{g.id}", f"S4.{g.id}", g.name, g.category) for g in STAGE4_GATES)
CHECKS: tuple[Check, ...] = P_CHECKS + S4_CHECKS
BY_ID = {c.id: c for c in CHECKS}

JUDGEMENTS: tuple[tuple[str, str], ...] = (
    ("J1", "the report's prose matches the numbers"),
    ("J2", "terminal labels agree with the cited evidence"),
    ("J3", "rejected experiments are not delivered facts; as-built records describe the code"),
    ("J4", "a missed target is disclosed, not failed (FC-4)"),
)


@dataclass(frozen=True)
class Finding:
    gate: str
    category: str
    message: str
    evidence: tuple[str, ...] = ()
    check: str = ""                 # a catalogued check id, e.g. ``P2.fingerprint``
    expected: str | None = None     # what the check expected, short
    actual: str | None = None       # what it found, short

    def __post_init__(self) -> None:
        spec = BY_ID.get(self.check)
        if spec is None or spec.gate != self.gate:
            raise ValueError(f"finding of gate {self.gate} names check {self.check!r}, which is not in the "
                             "catalogue of perftune.verify.checks under that gate")

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.gate, "check": self.check, "category": self.category, "message": self.message,
                "expected": self.expected, "actual": self.actual, "evidence": list(self.evidence)}


def short(value: Any, limit: int = 120) -> str:
    """A value as a short printed string (``repr`` for non-strings, cut at ``limit``)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def finding(check: str, category: str, message: str, evidence: Iterable[str] = (), *,
            expected: Any = None, actual: Any = None) -> Finding:
    """One finding of ``check``; without ``expected``/``actual`` the check's rule and the message."""
    spec = BY_ID.get(check)
    rule, gate = (spec.expects, spec.gate) if spec else ("", check.split(".")[0])
    return Finding(gate, category, message, tuple(evidence), check,
                   short(rule if expected is None else expected), short(message if actual is None else actual))


def findings(default: str, problems: Iterable[Any], evidence: Iterable[str] = (), *,
             category: str | None = None) -> list[Finding]:
    """Findings of ``problems``: messages (with ``category``), ``(category, message)`` pairs, or
    ``(category, message, check, expected, actual)`` tuples naming their own check."""
    out = []
    for problem in problems:
        if isinstance(problem, str):
            problem = (category, problem)
        cat, msg, *rest = problem
        check, expected, actual = (list(rest) + [None, None, None])[:3]
        out.append(finding(check or default, cat, msg, evidence, expected=expected, actual=actual))
    return out
