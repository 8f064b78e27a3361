"""Validate the Stage 1-N artefacts of an operator directory (the I/O edge of this package).

``validate(op_dir, stage)`` reads every artefact of stages 1..N (cumulative: a Stage 3 PASS means
Stages 1-2 still hold), runs the pure checks of :mod:`.documents`, :mod:`.knowledge` and
:mod:`.interfaces`, runs the golden once (Stage >= 2, :mod:`.golden_probe`) and returns a
:class:`StageReport`: one row per artefact, every problem, and the file record of every artefact
read (the hashes a stage check is valid for). It never writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import fsio
from ..contract import manifest
from ..errors import ContractError
from . import documents as docs
from . import golden_probe, interfaces, knowledge, pyfacts
from .problems import Problem, placeholders

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
PLUGIN_VAR = "${CLAUDE_PLUGIN_ROOT}/"


@dataclass
class StageReport:
    op: str
    stage: int
    rows: list[dict[str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    env_errors: list[str] = field(default_factory=list)

    def add(self, check: str, found: list[Problem], ok: str = "ok") -> None:
        self.rows.append({"id": check, "status": "FAIL" if found else "PASS",
                          "detail": "; ".join(p.line() for p in found[:2]) if found else ok})
        self.problems += found

    @property
    def verdict(self) -> str:
        return "FAIL" if self.problems or self.env_errors else "PASS"


class _Reader:
    """Reads artefacts once; a missing or unreadable file becomes a problem, never an exception."""

    def __init__(self, root: Path, report: StageReport) -> None:
        self.root, self.report, self.cache = root, report, {}

    def text(self, name: str) -> str | Problem:
        if name in self.cache:
            return self.cache[name]
        path = self.root / name
        if path.is_symlink() or not path.is_file():
            value: str | Problem = Problem(name, "-", "is missing (or not a regular file)",
                                           "the stage that owns it must write it (docs/stage-artefacts.md)",
                                           "missing_file")
        else:
            self.report.inputs[name] = fsio.file_record(path, self.root)
            try:
                value = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                value = Problem(name, f"byte {exc.start}", "is not UTF-8", "save it as UTF-8")
        self.cache[name] = value
        return value

    def data(self, name: str) -> Any | Problem:
        text = self.text(name)
        if isinstance(text, Problem):
            return text
        try:
            return yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)
        except (ValueError, yaml.YAMLError) as exc:
            first = str(exc).splitlines()[0][:120]
            return Problem(name, "-", f"malformed {'YAML' if name.endswith('.yaml') else 'JSON'}: {first}",
                           "fix the syntax")

    def facts(self, name: str) -> pyfacts.PyFacts | Problem:
        text = self.text(name)
        if isinstance(text, Problem):
            return text
        try:
            return pyfacts.read(text)
        except SyntaxError as exc:
            return Problem(name, f"line {exc.lineno}", f"syntax error: {exc.msg}", "fix the file")

    def exists(self, ref: str) -> bool:
        if ref.startswith(PLUGIN_VAR):
            return (PLUGIN_ROOT / ref[len(PLUGIN_VAR):]).is_file()
        try:
            return fsio.safe_join(self.root, ref, field="reference").is_file()
        except ContractError:
            return False

    def symbols(self, file: str) -> set[str] | None:
        if not file.endswith(".py") or not self.exists(file) or file.startswith(PLUGIN_VAR):
            return None
        found = self.facts(file)
        return None if isinstance(found, Problem) else found.symbols


def _run(report: StageReport, check: str, value: Any, fn: Callable[[Any], list[Problem]], ok: str = "ok") -> Any:
    """Add the row of ``check``: the read problem of ``value`` or the problems ``fn`` finds."""
    if isinstance(value, Problem):
        report.add(check, [value])
        return None
    report.add(check, fn(value), ok)
    return value


def _stage1(r: _Reader, rep: StageReport) -> tuple[tuple, dict | None]:
    spec = _run(rep, docs.SPEC, r.text(docs.SPEC), docs.check_spec)
    p0 = docs.spec_cases(spec)[0] if spec is not None else ()
    ids = tuple(c.id for c in p0)
    selection = _run(rep, knowledge.SELECTION, r.data(knowledge.SELECTION),
                     lambda obj: knowledge.check_selection(obj, ids, r.exists))
    if selection is not None and knowledge.schema_problems(selection, "kb_selection", "-", "-"):
        selection = None
    class_ids = tuple(c["class_id"] for c in selection["classes"]) if selection else ()
    _run(rep, docs.EXPLORE, r.text(docs.EXPLORE), docs.check_explore)
    _run(rep, docs.MATERIAL, r.text(docs.MATERIAL), lambda t: docs.check_material(t, class_ids))
    _run(rep, docs.MEMORY, r.text(docs.MEMORY), docs.check_memory)
    return p0, selection


def _stage2(r: _Reader, rep: StageReport, p0: tuple, timeout_s: float) -> None:
    op = rep.op
    golden, cpu = r.facts(f"{op}_golden.py"), r.facts(f"{op}_golden_cpu.py")
    read = [v for v in (golden, cpu) if isinstance(v, Problem)]
    found = read + interfaces.check_golden(None if isinstance(golden, Problem) else golden,
                                           None if isinstance(cpu, Problem) else cpu, op)
    for name in (f"{op}_golden.py", f"{op}_golden_cpu.py"):
        text = r.text(name)
        found += placeholders(text, name) if isinstance(text, str) else []
    rep.add("golden files", found, f"{op}_golden.py and {op}_golden_cpu.py define the golden contract")
    if found or not p0:
        rep.rows.append({"id": "golden_cases", "status": "blocked", "detail": "golden files or SPEC P0 unusable"})
        return
    result = golden_probe.run(r.root, op, interfaces.case_dicts(p0), timeout_s)
    if result.env_error:
        rep.env_errors.append(result.env_error)
        rep.rows.append({"id": "golden_cases", "status": "blocked", "detail": f"env_error: {result.env_error}"})
        return
    gfile = f"{op}_golden.py"
    problems = [Problem(gfile, "golden_cases", result.error, "fix the golden", "golden_failure")] if result.error else []
    if result.ids is not None:
        want = [c.id for c in p0]
        if sorted(result.ids) != sorted(want) or len(set(result.ids)) != len(result.ids):
            problems.append(Problem(gfile, "golden_cases", f"built ids {list(result.ids)}, SPEC P0 ids are {want}",
                                    "build exactly one entry per P0 case", "golden_failure"))
    rep.add("golden_cases", problems, "_validate() passed; golden_cases() built every P0 case")


def _stage3(r: _Reader, rep: StageReport, p0: tuple, selection: dict | None) -> dict | None:
    design = _run(rep, docs.DESIGN, r.text(docs.DESIGN), lambda t: docs.check_design(t, tuple(c.id for c in p0)))
    sections = set(docs.design_sections(design)) if design is not None else set()
    _run(rep, knowledge.BINDINGS, r.data(knowledge.BINDINGS),
         lambda obj: knowledge.check_bindings(obj, selection, sections))
    mods = _run(rep, interfaces.INTERFACES, r.data(interfaces.INTERFACES),
                lambda obj: interfaces.check_interfaces(obj, rep.op))
    ok = mods is not None and not knowledge.schema_problems(mods, "module_interfaces", "-", "-")
    return mods if ok else None


def _stage4(r: _Reader, rep: StageReport, p0: tuple, selection: dict | None, mods: dict | None) -> None:
    test_file = f"test_{rep.op}.py"
    facts = r.facts(test_file)
    text = r.text(test_file)
    def check(value: pyfacts.PyFacts) -> list[Problem]:
        found = interfaces.check_tests(p0, manifest.find_test_functions(text, test_file), test_file)
        found += placeholders(text, test_file)
        return found + (interfaces.check_wrapper(mods, value, test_file) if mods else [])
    _run(rep, test_file, facts, check, "every P0 case has its test; the wrapper matches module_interfaces.yaml")
    _run(rep, knowledge.USAGE, r.data(knowledge.USAGE), lambda obj: knowledge.check_usage(obj, selection, r.symbols))


def validate(op_dir: str | Path, stage: int, op: str | None = None, *,
             timeout_s: float = golden_probe.DEFAULT_TIMEOUT_S) -> StageReport:
    """Check the artefacts of stages 1..``stage`` of ``op_dir`` (never writes)."""
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "is not a directory", "pass the custom/<op> directory")
    if stage not in (1, 2, 3, 4):
        raise ContractError("validate_stage.py", "stage", f"{stage} is not 1..4", "Stage 5 uses stage5_check.py")
    name = op or root.resolve().name
    if not name.isidentifier():
        raise ContractError(root, "--op", f"operator name {name!r} is not an identifier", "pass --op NAME")
    rep = StageReport(name, stage)
    reader = _Reader(root, rep)
    p0, selection = _stage1(reader, rep)
    if stage >= 2:
        _stage2(reader, rep, p0, timeout_s)
    mods = _stage3(reader, rep, p0, selection) if stage >= 3 else None
    if stage >= 4:
        _stage4(reader, rep, p0, selection, mods)
    return rep
