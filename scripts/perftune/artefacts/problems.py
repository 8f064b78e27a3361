"""One finding of an artefact check: file, field, problem, fix and the verifier category."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PLACEHOLDER = "<FILL"          # every scaffold placeholder starts with this marker


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    problem: str
    fix: str
    category: str = "incomplete_structure"

    def line(self) -> str:
        """The project's one-line form ``<file>: <field>: <problem> (<fix>)``."""
        return f"{self.file}: {self.field}: {self.problem} ({self.fix})"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "field": self.field, "problem": self.problem, "fix": self.fix,
                "category": self.category}


def placeholders(text: str, file: str) -> list[Problem]:
    """One problem when scaffold placeholders (``<FILL: ...>``) are left, naming the first line."""
    lines = [n for n, line in enumerate(text.splitlines(), 1) if PLACEHOLDER in line]
    if not lines:
        return []
    return [Problem(file, f"line {lines[0]}", f"{len(lines)} line(s) still hold a scaffold placeholder",
                    "replace every <FILL: ...> with the real content")]
