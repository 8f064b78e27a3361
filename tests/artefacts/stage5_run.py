"""A minimal, real Stage 5 run on a filled operator folder (cpu backend, baseline = delivered).

The scripts run exactly as the perf-tune skill orders them; no experiment is tried (every preset
source is empty except the KB obligations, which the baseline already implements), so the chosen
version is the baseline and the final round re-measures it. Used by the scaffold acceptance test.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from conftest import call_script, run_script

INDEX = "| id | title | lifecycle | optimization_eligible | file |\n|----|----|----|----|----|\n"
# steps that only read and write the evidence, never the simulator: in this process on pypto-sim too
BOOKKEEPING = frozenset({"ledger.py", "ledger_check.py", "select_best.py", "compare_perf.py", "perf_report.py"})
SIMULATOR = ("pypto", "torch")


def _run(op: Path, script: str, *args: str, ok=(0,), backend: str = "cpu") -> dict:
    """One step; on cpu in this process (``conftest.call_script``); pypto-sim steps that import pypto
    (whose import sets process-wide variables) run as their own processes, the bookkeeping steps in this
    one, which fails if such a step ever imports pypto or torch."""
    if backend == "cpu" or script in BOOKKEEPING:
        before = {name for name in SIMULATOR if name in sys.modules}
        proc = call_script(script, *args, "--json", cwd=op)
        imported = {name for name in SIMULATOR if name in sys.modules} - before
        assert backend == "cpu" or not imported, f"{script} imported {imported}: run it as its own process"
    else:
        proc = run_script(script, *args, "--json", cwd=op)
    assert proc.returncode in ok, f"{script} {args[:1]} exit {proc.returncode}: {proc.stderr[-800:]}"
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def run(op: Path, cases: list[str], op_name: str, kb_items: list[str], backend: str = "cpu") -> tuple[int, dict]:
    """Freeze → golden → baseline → ledger closed → choose → final → compare → evidence → check.
    ``backend`` pypto-sim: 2 repeats, no warm-up (a deterministic simulator), its shipped platform."""
    step = partial(_run, backend=backend)
    for folder in ("general-methods", "knowledge-cards", "templates"):
        (op / "sources" / folder).mkdir(parents=True, exist_ok=True)
        (op / "sources" / folder / "INDEX.md").write_text(INDEX)
    step(op, "freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", *cases, "--selection-mode",
         "all_p0_no_questions", "--backend", backend, "--op-name", op_name,
         *(("--repeats", "5", "--warmup", "1") if backend == "cpu" else ("--repeats", "2", "--warmup", "0")),
         "--noise-band", "0.05")
    step(op, "collect_golden_reference.py", f"{op.name}_golden.py", "--function", f"{op.name}_golden", "--factory",
         "golden_cases", "--case-manifest", "PERFORMANCE_CASES.json", "--output-dir", ".", "--device", "0",
         "--warmup", "1", "--repeats", "5", "--seed", "42", "--backend", "cpu")
    if backend == "cpu":
        step(op, "terminal_evidence.py", "probe", "--output", "docs/perf/platform_cpu.json")
    run_id = step(op, "check_correctness.py", "--op-dir", op)["run_id"]
    step(op, "collect_perf.py", "preflight", "--op-dir", op)
    base = step(op, "collect_perf.py", "formal", "--op-dir", op)
    step(op, "ledger.py", "init", "--op-dir", op, "--actor", "test")
    for item in kb_items:
        step(op, "ledger.py", "update", "--op-dir", op, "--actor", "test", "--item", item, "--status",
             "already_implemented", "--note", "the baseline meets it (KB_USAGE.json)", "--code-ref",
             f"test_{op.name}.py", "--correctness", run_id, "--formal", base["collection_id"])
    step(op, "select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", Path(base["round"]).name,
         "--correctness", run_id, "--compliance", "stage4 gates PASS")
    step(op, "ledger.py", "sweep", "--op-dir", op, "--actor", "test", "--scope", "all P0 cases", "--examined",
         "docs/perf/ledger.json")
    step(op, "ledger_check.py", "--op-dir", op)
    step(op, "select_best.py", "choose", "--op-dir", op)
    final = step(op, "collect_perf.py", "formal", "--op-dir", op, "--paired-with", "docs/perf/versions/v000")
    step(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(base["round"]).name, "--candidate",
         Path(final["round"]).name, ok=(0, 1))
    step(op, "select_best.py", "confirm", "--op-dir", op, "--final-round", Path(final["round"]).name, ok=(0, 1))
    step(op, "terminal_evidence.py", "build", "--op-dir", op, "--round", Path(final["round"]).name)
    step(op, "perf_report.py", "--op-dir", op)
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", *cases, "--selection-mode",
                      "all_p0_no_questions", "--json", cwd=op)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {"stderr": proc.stderr}
