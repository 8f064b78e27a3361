"""The markdown artefacts: SPEC.md, EXPLORE_REPORT.md, PRO_MATERIAL_INDEX.md, MEMORY.md, DESIGN.md.

Each ``check_*`` takes the file's text (and the facts it cross-checks) and returns problems (pure).
Formats and reasons: docs/stage-artefacts.md.
"""

from __future__ import annotations

import re

from ..contract import manifest
from ..errors import ContractError
from . import markdown
from .problems import Problem, placeholders

SPEC, EXPLORE, MATERIAL, MEMORY, DESIGN = ("SPEC.md", "EXPLORE_REPORT.md", "PRO_MATERIAL_INDEX.md",
                                           "MEMORY.md", "DESIGN.md")
SPEC_SECTIONS = ("semantics", "precision", "performance")
EXPLORE_COUNT, EXPLORE_MANDATORY = 10, (3, 4, 5, 10)
BLOCKERS_LINE = re.compile(r"^\s*[-*]?\s*unsupported_blockers\s*:\s*(.+?)\s*$", re.M | re.I)
MATERIAL_PARTS = {"A": "API documents read", "B": "official samples read", "C": "knowledge-base entries"}
MATERIAL_COLUMNS = ("id", "path", "used_for")
MEMORY_SECTIONS = {"decisions": "D", "user statements": "U", "open questions": "Q"}
MEMORY_ENTRY = re.compile(r"^\s*[-*]\s+([A-Z]\d+)\s*:\s*(.+)$")
DESIGN_COUNT = 11
DESIGN_FORBIDDEN = re.compile(r"\bTBD\b|\bTODO\b|待定")


def spec_cases(text: str) -> tuple[tuple[manifest.SpecCase, ...], list[Problem]]:
    """The P0 cases of SPEC.md (empty when the table is unusable) and the problems found."""
    try:
        info = manifest.parse_spec(text, SPEC)
    except ContractError as exc:
        return (), [Problem(SPEC, exc.field, exc.problem, exc.fix or "see docs/spec-format.md")]
    p0 = tuple(c for c in info.cases if c.p0)
    problems = []
    if not p0:
        problems.append(Problem(SPEC, "performance table", "has no P0 case", "mark at least one row p0=yes"))
    seen: set[str] = set()
    for case in info.cases:
        if case.id in seen:
            problems.append(Problem(SPEC, f"performance table: {case.id}", "case id is listed twice",
                                    "give every case a unique id"))
        seen.add(case.id)
    return p0, problems


def check_spec(text: str) -> list[Problem]:
    titles = [s.title.lower() for s in markdown.sections(text) if s.level >= 2]
    problems = [Problem(SPEC, f"section '{name}'", "no heading contains this word",
                        f"add a '## {name.title()}' section (docs/stage-artefacts.md#specmd)")
                for name in SPEC_SECTIONS if not any(name in t for t in titles)]
    return problems + spec_cases(text)[1] + placeholders(text, SPEC)


def _numbered(text: str, file: str, count: int) -> tuple[dict[int, markdown.Section], list[Problem]]:
    """Level-2 sections ``## N. Title`` numbered 1..count in order."""
    found = [(s, re.match(r"^(\d+)[.)]?\s", s.title + " ")) for s in markdown.sections(text) if s.level == 2]
    numbered = {int(m.group(1)): s for s, m in found if m}
    order = [int(m.group(1)) for _, m in found if m]
    problems = []
    if order != list(range(1, count + 1)):
        problems.append(Problem(file, "sections", f"numbered '## N.' sections are {order}, need 1..{count} in order",
                                "use the section list of docs/stage-artefacts.md"))
    return numbered, problems


def check_explore(text: str) -> list[Problem]:
    numbered, problems = _numbered(text, EXPLORE, EXPLORE_COUNT)
    for n in EXPLORE_MANDATORY:
        if n in numbered and not markdown.has_content(numbered[n].body):
            problems.append(Problem(EXPLORE, f"section {n}", "mandatory section is empty", "write its findings"))
    last = numbered.get(EXPLORE_COUNT)
    if last is not None:
        found = BLOCKERS_LINE.findall(last.body)
        if len(found) != 1:
            problems.append(Problem(EXPLORE, f"section {EXPLORE_COUNT}", "needs exactly one "
                                    "'unsupported_blockers:' line", "write 'unsupported_blockers: none' or list them"))
        elif found[0].strip().lower() != "none":
            problems.append(Problem(EXPLORE, f"section {EXPLORE_COUNT}.unsupported_blockers",
                                    f"unresolved: {found[0]}", "resolve them or report unsupported", "unsupported"))
    return problems + placeholders(text, EXPLORE)


def material_rows(text: str) -> tuple[dict[str, list[dict[str, str]]], list[Problem]]:
    """Rows of the §A/§B/§C tables of PRO_MATERIAL_INDEX.md by part letter."""
    parts: dict[str, list[dict[str, str]]] = {}
    problems = []
    heads = {m.group(1): s for s in markdown.sections(text) if s.level == 2
             for m in [re.match(r"^§?([ABC])[.)]?\s", s.title + " ")] if m}
    for letter, what in MATERIAL_PARTS.items():
        section = heads.get(letter)
        table = markdown.first_table(section.body) if section else None
        if section is None or table is None:
            problems.append(Problem(MATERIAL, f"§{letter}", f"no '## {letter}.' section with a table ({what})",
                                    f"add the table with columns {list(MATERIAL_COLUMNS)}"))
            continue
        header, rows = table
        missing = [c for c in MATERIAL_COLUMNS if c not in header]
        if missing:
            problems.append(Problem(MATERIAL, f"§{letter} table", f"missing columns {missing}",
                                    f"use columns {list(MATERIAL_COLUMNS)}"))
            continue
        parts[letter] = [dict(zip(header, r)) for r in rows if len(r) == len(header)]
        if any(len(r) != len(header) for r in rows):
            problems.append(Problem(MATERIAL, f"§{letter} table", "a row's cell count differs from the header",
                                    "fix the row"))
        if letter in ("A", "B") and not parts[letter]:
            problems.append(Problem(MATERIAL, f"§{letter} table", "has no row", f"list the {what}"))
    return parts, problems


def check_material(text: str, class_ids: tuple[str, ...]) -> list[Problem]:
    parts, problems = material_rows(text)
    listed = {row["id"] for row in parts.get("C", [])}
    problems += [Problem(MATERIAL, "§C", f"selected KB class {cid!r} is not listed",
                         "list every KB_SELECTION class in §C", "kb_selection_invalid")
                 for cid in class_ids if "C" in parts and cid not in listed]
    return problems + placeholders(text, MATERIAL)


def check_memory(text: str) -> list[Problem]:
    heads = {s.title.lower(): s for s in markdown.sections(text) if s.level == 2}
    problems, ids = [], set()
    for name, prefix in MEMORY_SECTIONS.items():
        section = heads.get(name)
        if section is None:
            problems.append(Problem(MEMORY, f"section '{name}'", "is missing", f"add '## {name.title()}'"))
            continue
        entries = [m for m in map(MEMORY_ENTRY.match, section.body.splitlines()) if m]
        if name == "decisions" and not entries:
            problems.append(Problem(MEMORY, "decisions", "has no entry", "record each decision as '- D1: ...'"))
        for m in entries:
            if not m.group(1).startswith(prefix) or m.group(1) in ids:
                problems.append(Problem(MEMORY, f"{name}: {m.group(1)}", f"id must start with {prefix} and be unique",
                                        f"number the entries {prefix}1, {prefix}2, ..."))
            ids.add(m.group(1))
            if prefix == "Q" and "resolved:" not in m.group(2).lower():
                problems.append(Problem(MEMORY, f"open questions: {m.group(1)}", "is unresolved",
                                        "add 'resolved: <answer and source>' or ask the user"))
    return problems + placeholders(text, MEMORY)


def design_sections(text: str) -> dict[int, markdown.Section]:
    return {int(m.group(1)): s for s in markdown.sections(text) if s.level == 2
            for m in [re.match(r"^§(\d+)\b", s.title)] if m}


def check_design(text: str, p0_ids: tuple[str, ...]) -> list[Problem]:
    found = design_sections(text)
    order = [int(m.group(1)) for s in markdown.sections(text) if s.level == 2
             for m in [re.match(r"^§(\d+)\b", s.title)] if m]
    problems = []
    if order != list(range(DESIGN_COUNT)):
        problems.append(Problem(DESIGN, "sections", f"'## §N' headings are {order}, need §0..§10 in order",
                                "use the section list of docs/stage-artefacts.md", "design_violation"))
    for n, line in enumerate(text.splitlines(), 1):
        if DESIGN_FORBIDDEN.search(line):
            problems.append(Problem(DESIGN, f"line {n}", "holds TBD/TODO/待定", "decide it now", "design_violation"))
    if 8 in found:
        table = markdown.first_table(found[8].body)
        ids = {dict(zip(table[0], r)).get("id") for r in table[1]} if table and "id" in table[0] else set()
        missing = [c for c in p0_ids if c not in ids]
        if missing:
            problems.append(Problem(DESIGN, "§8 table", f"SPEC P0 cases missing: {missing}",
                                    "list every P0 case id in the §8 table (column id)", "design_violation"))
    if 9 in found and "❌" in found[9].body:
        problems.append(Problem(DESIGN, "§9", "the assessment holds ❌", "resolve the item", "design_violation"))
    return problems + placeholders(text, DESIGN)
