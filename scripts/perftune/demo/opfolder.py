"""An operator folder in the documented format (docs/operator-format.md), checked before any run.

``<name>/`` holds SPEC.md (P0 table, ``wrapper:`` line, Necessary-work section),
``<name>_golden.py``, ``<name>_golden_cpu.py``, ``test_<name>.py``, ``KB_SELECTION.json``, optional
``sources/`` (the three INDEX folders; else the plugin's references are the preset sources) and
``variants/variants.json`` plus ``variants/<version_id>/test_<name>.py`` per experiment. Every
missing or malformed part is one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import fsio
from ..contract import manifest, work_model
from ..errors import ContractError
from . import plan as demo_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
DEFAULT_EXAMPLE = "softmax"
PLUGIN_SOURCES = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references"


@dataclass(frozen=True)
class Operator:
    name: str
    folder: Path
    plan: demo_plan.Plan
    target_case_ids: tuple[str, ...]

    @property
    def test_file(self) -> str:
        return f"test_{self.name}.py"

    def variant(self, version_id: str) -> Path:
        return self.folder / "variants" / version_id / self.test_file


def examples() -> list[str]:
    return sorted(p.name for p in EXAMPLES.iterdir() if (p / "variants" / "variants.json").is_file())


def example(name: str) -> Path:
    if name not in examples():
        raise ContractError(EXAMPLES / name, "--example", f"{name!r} is not a bundled example",
                            f"use one of {examples()}")
    return EXAMPLES / name


def load(folder: str | Path) -> Operator:
    """Check the folder and read its plan; the target ids of ``all_p0`` come from SPEC.md."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise ContractError(folder, "--op-dir", "is not a directory", "pass an operator folder")
    name = root.name
    for part in ("SPEC.md", f"{name}_golden.py", f"{name}_golden_cpu.py", f"test_{name}.py", "KB_SELECTION.json",
                 "variants/variants.json"):
        if not (root / part).is_file():
            raise ContractError(root / part, "-", "is missing", "see docs/operator-format.md")
    plan = demo_plan.parse_plan(fsio.read_json(root / "variants/variants.json", what="variants.json"),
                                str(root / "variants/variants.json"))
    for exp in plan.experiments:
        if exp.search is None and not (root / "variants" / exp.version_id / f"test_{name}.py").is_file():
            raise ContractError(root / "variants" / exp.version_id / f"test_{name}.py", "variants",
                                f"version {exp.version_id} has no test file", "add the candidate code")
    text = (root / "SPEC.md").read_text(encoding="utf-8")
    if work_model.parse_section(text, str(root / "SPEC.md")) is None:
        raise ContractError(root / "SPEC.md", "Necessary work", "section is missing (terminal evidence needs it)",
                            "declare the work model (docs/operator-format.md)")
    target = plan.protocol.target_case_ids
    if target == "all_p0":
        spec = manifest.parse_spec(text, str(root / "SPEC.md"))
        target = tuple(c.id for c in spec.cases if c.p0)
    return Operator(name, root, plan, tuple(target))


def sources_dir(op: Path) -> Path:
    """The operator's own preset sources when it brings them, else the plugin's."""
    return op / "sources" if (op / "sources").is_dir() else PLUGIN_SOURCES
