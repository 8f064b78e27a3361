"""stage1-check .. stage4-check, machine part: the artefact validators (+ Stage 4 static gates).

``run(op_dir, stage)`` returns the ``docs/stages/stage<N>_check.json`` content: one row per
artefact check (Stage 4 adds the static gates as ``S4.<gate>`` rows), every failure with its
category, the primary category, and the file record of every input read. ``complete_stage N``
accepts the stage only while this file says PASS and every recorded input still has its hash.
``stage5_inputs(op_dir)`` is Stage 5's check of its mandatory Stage 1-4 inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..artefacts import validate as artefacts
from ..errors import primary_category
from .stage4 import run_gates as run_stage4

CHECK_DIR = "docs/stages"
SCHEMA_VERSION = 1


def check_path(op_dir: str | Path, stage: int) -> Path:
    return Path(op_dir) / CHECK_DIR / f"stage{stage}_check.json"


def run(op_dir: str | Path, stage: int, op: str | None = None, *, timeout_s: float = 120.0) -> dict[str, Any]:
    """The stage check verdict (pure apart from reading the operator directory and the probes)."""
    report = artefacts.validate(op_dir, stage, op, timeout_s=timeout_s)
    rows = list(report.rows)
    failures = [p.as_dict() for p in report.problems]
    failures += [{"file": f"{report.op}_golden.py", "field": "golden_cases", "problem": text,
                  "fix": "run the check where the golden's modules are installed", "category": "env_error"}
                 for text in report.env_errors]
    inputs = dict(report.inputs)
    if stage == 4 and (Path(op_dir) / f"test_{report.op}.py").is_file():
        gates = run_stage4(op_dir, report.op)
        rows += [{**{k: row[k] for k in ("status", "detail")}, "id": f"S4.{row['id']}"} for row in gates.gate_rows()]
        failures += [{"file": f"test_{report.op}.py", "field": f"S4.{f['gate']}", "problem": f["message"],
                      "fix": "see docs/stage4-gates.md", "category": f["category"]} for f in gates.findings()]
        inputs.update(gates.inputs)
    categories = sorted({f["category"] for f in failures})
    return {"schema_version": SCHEMA_VERSION, "stage": stage, "operator": report.op,
            "verdict": "FAIL" if failures else "PASS", "checks": rows, "failures": failures,
            "categories": categories, "primary_failure_category": primary_category(categories),
            "inputs": inputs}


def exit_code(verdict: dict[str, Any]) -> int:
    """0 PASS, 3 when only the environment blocks, 1 otherwise."""
    if verdict["verdict"] == "PASS":
        return 0
    return 3 if verdict["categories"] == ["env_error"] else 1


def render_text(verdict: dict[str, Any], shown: str) -> str:
    n = verdict["stage"]
    if verdict["verdict"] == "PASS":
        return f"Stage {n} check PASSED.\nAll {len(verdict['checks'])} checks passed.\nEvidence: {shown}\n"
    lines = [f"Stage {n} check FAILED.", "Failed checks: " + ", ".join(
        r["id"] for r in verdict["checks"] if r["status"] in ("FAIL", "blocked")),
             f"failure_category: {verdict['primary_failure_category']}"]
    lines += [f"  {f['file']}: {f['field']}: {f['problem']} ({f['fix']}) [{f['category']}]" for f in verdict["failures"]]
    lines.append(f"Machine verdict: {shown}")
    return "\n".join(lines) + "\n"


def stage5_inputs(op_dir: str | Path) -> list[tuple[str, str]]:
    """(category, message) per unusable Stage 1-4 input of an orchestrated Stage 5 run.

    In deep orchestration every Stage 1-4 artefact is a mandatory, authoritative input (a
    standalone perf-tune run treats them as optional; the caller decides which run it is). A
    problem is ``stage5_contract_blocked`` naming the file; only an environment-only golden probe
    is ``env_error``.
    """
    report = artefacts.validate(op_dir, 4)
    out = [("stage5_contract_blocked", f"{p.line()} [{p.category}]") for p in report.problems]
    out += [("env_error", f"{report.op}_golden.py: golden_cases: {text}") for text in report.env_errors]
    return out
