"""The verdict of stage5-check: :class:`Stage5Result`, its JSON form, the text verdict, the exit code.

The text verdict is the verifier agent's PASS/FAIL template: the failed checks by gate, then every
finding with its check id, category, message, expected and actual, and the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import PerftuneError, primary_category
from ..measure import evidence
from . import final_attempts
from .checks import Finding
from .plausibility import render as render_plausibility

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
    provenance: dict[str, Any] | None = None
    plausibility: dict[str, Any] | None = None      # verify/plausibility.py: reported, never a failure alone
    beyond_p0: dict[str, Any] | None = None

    @property
    def categories(self) -> list[str]:
        return sorted({f.category for f in self.findings})

    @property
    def primary(self) -> str | None:
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
                **({"remeasure": self.remeasure} if self.remeasure else {}),
                **({"provenance": self.provenance} if self.provenance else {}),
                **({"plausibility": self.plausibility} if self.plausibility else {}),
                **({"beyond_p0": self.beyond_p0} if self.beyond_p0 else {})}


def render_text(result: Stage5Result, evidence_path: str) -> str:
    """The verifier's text verdict (PASS/FAIL template of the verifier agent)."""
    if result.verdict == "PASS":
        origin = (result.provenance or {}).get("baseline_origin", "verified")
        return (f"Stage 5 verification PASSED.\nAll {len(result.gates)} checks passed.\n" + ("" if origin == "verified"
                else f"Baseline origin {origin}: {result.provenance['reason']}\n") + render_plausibility(result.plausibility)
                + beyond_lines(result.beyond_p0) + figure_lines(result.remeasure) + final_attempts.lines(result.provenance)
                + f"Evidence: {evidence_path}\n")
    lines = ["Stage 5 verification FAILED.", f"Failed checks: {failed_checks(result)}",
             f"failure_category: {result.primary}", f"all categories: {', '.join(result.categories)}", "Evidence:"]
    for f in result.findings:
        lines.append(f"  [{f.check}] {f.category}: {f.message}")
        lines.append(f"      expected: {f.expected}; actual: {f.actual}")
        lines += [f"      {e}" for e in f.evidence[:5]]
    lines += render_plausibility(result.plausibility).splitlines() + figure_lines(result.remeasure).splitlines()
    lines += final_attempts.lines(result.provenance).splitlines()
    lines.append(f"Suggested action: {SUGGESTED_ACTION.get(result.primary, 'fix the failed checks and re-run')}")
    lines.append(f"Machine verdict: {evidence_path}")
    return "\n".join(lines) + "\n"


def exit_code(result: Stage5Result) -> int:
    """0 PASS; 2 when the frozen contract is blocked; 3 when only the environment blocks; else 1."""
    if result.verdict == "PASS":
        return 0
    return {"stage5_contract_blocked": 2, "env_error": 3}.get(result.primary, 1)


def failed_checks(result: Stage5Result) -> str:
    """``P2: P2.protocol, P2.fingerprint; P4: blocked`` — every failed or blocked gate with its check ids."""
    parts = []
    for gate in (g for g in result.gates if g["status"] in ("FAIL", "blocked")):
        ids = list(dict.fromkeys(f.check for f in result.findings if f.gate == gate["id"]))
        parts.append(f"{gate['id']}: {', '.join(ids) or gate['status']}")
    return "; ".join(parts)


def figure_lines(note: dict[str, Any] | None) -> str:
    """The speed-up that holds where the delivered one lies outside every re-measured CI (P10, two-sided)."""
    rows = [r for r in (note or {}).get("cases", []) if (r.get("figure") or {}).get("holds") == "re-measured"]
    return "".join(f"Figure that holds (P10): case {r['case']}: re-measured {r['figure']['re_measured']:.3f} CI "
                   f"{r['figure']['ci']}, not the delivered {r['figure']['delivered']:.3f} (outside every re-measured CI)\n"
                   for r in rows if r["figure"]["re_measured"] is not None and r["figure"]["delivered"] is not None)


def beyond_lines(note: dict[str, Any] | None) -> str:
    """The beyond-P0 checks' disclosed limits and unverified parts (a PASS still names them)."""
    note = note or {}
    lines = [f"Disclosed limit (beyond P0): {limit}" for limit in note.get("limits", [])]
    if (note.get("support_shapes") or {}).get("status") == "unverified":
        lines.append(f"Support shapes unverified: {note['support_shapes']['reason']}")
    return "".join(line + "\n" for line in lines)


JUDGED = (protocol.PERFORMANCE_REPORT_MD, protocol.PERFORMANCE_LOG, protocol.PERF_REPORT_MD,
          *(f"{protocol.PERF_DIR}/{name}" for name in (protocol.LEDGER_NAME, protocol.CANDIDATES_NAME,
                                                       protocol.SELECTION_NAME, "confirm.json", "terminal_evidence.json")))


def judged_files(root: Path) -> dict[str, dict[str, Any]]:
    """Records of the deliverables and sources the verdict judged (``stage5_check.json`` ``inputs``): an edit
    after the check shows as a record that no longer matches (``verify/rederive.py``, the Stage 5 gate)."""
    names = [n for n in JUDGED if (root / n).is_file() and not (root / n).is_symlink()]
    try:
        names += [fsio.display_path(p, root) for p in evidence.source_files(root)]
    except PerftuneError:
        pass   # P3 reports the missing runner
    return {f"judged:{name}": fsio.file_record(root / name, root) for name in names}
