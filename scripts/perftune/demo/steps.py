"""The Stage 5 step list, shared by SKILL.md and the driver (pure data).

SKILL.md (skills/pypto-pro-op-perf-tune/SKILL.md) owns the commands: each procedure command is a
fenced block opened by ```` ```bash step=<key> ````. The keys appear in SKILL.md in the
order of :data:`ORDER`, which is the order they run (``tests/demo/test_skill_steps.py`` checks both ways),
and the driver runs a script only through :func:`perftune.demo.skill.Skill.command` of one of these keys,
so the demo can never do what the SKILL does not say; every command ``perf_next.py`` prints is one of them.
``phase``: ``prepare`` (once), ``item`` (per ledger item, in the SKILL's loop), ``finish`` (once, after the
loop), ``any`` (wherever the evidence asks for it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    key: str
    phase: str
    script: str
    title: str


STEPS = (
    Step("correctness", "prepare", "check_correctness.py", "complete correctness run (every test; no manifest needed)"),
    Step("freeze", "prepare", "freeze_cases.py", "freeze the contract (cpu Op Name: the kernel)"),
    Step("golden", "prepare", "collect_golden_reference.py", "golden reference, once"),
    Step("platform", "prepare", "terminal_evidence.py", "cpu platform roof, probed on the measuring host"),
    Step("preflight", "prepare", "collect_perf.py", "selector preflight"),
    Step("baseline", "prepare", "collect_perf.py", "formal baseline round"),
    Step("ledger_init", "prepare", "ledger.py", "open the ledger on the recorded sources"),
    Step("ledger_show", "prepare", "ledger.py", "read the enumerated items"),
    Step("close_gated", "prepare", "ledger.py", "close every item whose recorded gate fails here"),
    Step("close_preset", "prepare", "ledger.py", "close items that need no experiment, with grounds"),
    Step("record_baseline", "prepare", "select_best.py", "record the baseline as candidate v000"),
    Step("hypothesis", "item", "ledger.py", "write the hypothesis into the item before the edit"),
    Step("tune_declare", "item", "tune.py", "or, for a parameter space, freeze a search instead of one edit"),
    Step("tune", "item", "tune.py", "measure every point of the frozen search once; the best left in place"),
    Step("restore", "any", "select_best.py", "put a recorded or tried version's code in place"),
    Step("quick", "item", "collect_perf.py", "quick screen of the edited code"),
    Step("quick_compare", "item", "compare_perf.py", "promotion by the frozen rule"),
    Step("paired_formal", "item", "collect_perf.py", "formal round paired with the current best"),
    Step("formal_compare", "item", "compare_perf.py", "formal compare against the current best"),
    Step("record", "item", "select_best.py", "record an accepted version"),
    Step("overlap", "item", "perf_next.py", "the close of an item whose experiment is a closed item's"),
    Step("close_item", "item", "ledger.py", "close the item with its evidence"),
    Step("bottleneck_profile", "item", "terminal_evidence.py", "profile of the current best (derived items)"),
    Step("derived_add", "item", "ledger.py", "register a bottleneck_derived item"),
    Step("sweep", "finish", "ledger.py", "final candidate sweep"),
    Step("ledger_check", "finish", "ledger_check.py", "the ledger is closed"),
    Step("choose", "finish", "select_best.py", "recomputed choice of the best version"),
    Step("stage4", "finish", "stage4_gates.py", "static gates on the chosen code"),
    Step("confirm_round", "finish", "collect_perf.py", "the chosen version's ranking comparison repeated"),
    Step("confirm", "finish", "select_best.py", "the repeated comparison confirms the ranking"),
    Step("final_formal", "finish", "collect_perf.py", "final formal round paired with the baseline"),
    Step("final_compare", "finish", "compare_perf.py", "final vs baseline"),
    Step("terminal", "finish", "terminal_evidence.py", "terminal evidence of the final round"),
    Step("report", "finish", "perf_report.py", "the report"),
    Step("verify", "finish", "stage5_check.py", "the verifier"),
    Step("reopen", "any", "ledger.py", "reopen an item a stage5_check FAIL invalidates"),
)
ORDER = tuple(s.key for s in STEPS)
BY_KEY = {s.key: s for s in STEPS}
