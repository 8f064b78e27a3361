"""Gate verdicts: one :class:`GateResult` per gate, the :class:`Stage4Result` of an operator, text.

Status vocabulary: ``PASS``, ``FAIL``, ``not_applicable``, ``blocked`` (environment only, category
``env_error``). Exit code: 1 if any gate FAILs, else 3 if any is blocked, else 0 (DESIGN §5).
The two row helpers give the ``gates`` and ``failures`` items of ``stage5_check.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import EXIT_ENV, EXIT_FAILED, EXIT_OK, primary_category
from .pysource import Evidence

PASS, FAIL, NA, BLOCKED = "PASS", "FAIL", "not_applicable", "blocked"
STATUSES = (PASS, FAIL, NA, BLOCKED)


@dataclass(frozen=True)
class GateResult:
    """One gate verdict; ``category`` is set exactly when the status is FAIL or blocked."""
    id: str
    name: str
    status: str
    reason: str
    evidence: tuple[Evidence, ...] = ()
    category: str | None = None
    upstream: str = ""          # upstream gate number(s) and lint rule ids

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "status": self.status, "category": self.category,
                "reason": self.reason, "upstream": self.upstream,
                "evidence": [e.as_dict() for e in self.evidence]}


@dataclass(frozen=True)
class Stage4Result:
    """Every Stage 4 gate of one operator, in catalogue order, plus the records of the files read."""
    operator: str
    gates: tuple[GateResult, ...]
    inputs: dict = field(default_factory=dict)      # file name -> {path, sha256, size_bytes}

    def gate(self, gate_id: str) -> GateResult:
        return next(g for g in self.gates if g.id == gate_id)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(g.id for g in self.gates if g.status == FAIL)

    @property
    def blocked(self) -> tuple[str, ...]:
        return tuple(g.id for g in self.gates if g.status == BLOCKED)

    @property
    def passed(self) -> bool:
        """True when every gate is PASS or not_applicable."""
        return not self.failed and not self.blocked

    @property
    def status(self) -> str:
        return FAIL if self.failed else BLOCKED if self.blocked else PASS

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.failed else EXIT_ENV if self.blocked else EXIT_OK

    @property
    def categories(self) -> tuple[str, ...]:
        """Unique categories of FAIL and blocked gates, in gate order."""
        return tuple(dict.fromkeys(g.category for g in self.gates if g.category))

    @property
    def primary_category(self) -> str | None:
        return primary_category(self.categories)

    def gate_rows(self) -> list[dict]:
        """Gates as ``{id, name, status, detail}`` rows (the stage5_check.json ``gates`` items)."""
        return [{"id": g.id, "name": g.name, "status": g.status, "detail": g.reason} for g in self.gates]

    def findings(self) -> list[dict]:
        """FAIL/blocked gates as ``{gate, category, message, expected, actual, evidence[str]}`` (stage5_check
        failures: ``expected`` is the gate's rule, ``actual`` its reason and first evidence)."""
        return [{"gate": g.id, "category": g.category, "message": g.reason, "expected": g.name,
                 "actual": g.reason + (f" ({g.evidence[0]})" if g.evidence else ""),
                 "evidence": [str(e) for e in g.evidence]} for g in self.gates if g.category]

    def as_dict(self) -> dict:
        return {"schema_version": 1, "operator": self.operator, "status": self.status,
                "gates": [g.as_dict() for g in self.gates], "failed_gates": list(self.failed),
                "blocked_gates": list(self.blocked), "categories": list(self.categories),
                "primary_failure_category": self.primary_category, "inputs": self.inputs}


def render_text(result: Stage4Result) -> str:
    """The human verdict: one line per gate, evidence under FAIL/blocked gates, a summary line."""
    lines = [f"Stage 4 static gates: operator {result.operator}"]
    for g in result.gates:
        tag = f"  [{g.category}]" if g.category else ""
        lines.append(f"{g.status:<15} {g.id:<19} {g.reason}{tag}")
        if g.category:
            lines += [f"    {e}" for e in g.evidence]
    counts = {s: sum(g.status == s for g in result.gates) for s in (PASS, NA)}
    if result.failed:
        lines.append(f"Stage 4 static gates FAILED. Failed gates: {', '.join(result.failed)}. "
                     f"failure_category: {result.primary_category}")
    elif result.blocked:
        lines.append(f"Stage 4 static gates BLOCKED by the environment (env_error): "
                     f"{', '.join(result.blocked)}. No gate failed.")
    else:
        lines.append(f"Stage 4 static gates PASSED ({counts[PASS]} PASS, {counts[NA]} not_applicable).")
    return "\n".join(lines) + "\n"
