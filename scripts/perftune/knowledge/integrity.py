"""Integrity of the shipped knowledge base (``skills/pypto-pro-op-perf-tune/references``).

Checked (each finding is one :class:`Finding` with a code):

- ``index_file``: every INDEX row names a file that exists; ``orphan_file``: every card, method,
  template or case file is named by exactly one INDEX row (drafts and retired rows count).
- ``duplicate_id``: ids are unique across the four INDEX tables; ``anchor``: the row's anchor
  (``#id``) appears in its file; ``lifecycle``: lifecycle is active/draft/retired and a retired
  or draft row is not ``optimization_eligible``.
- ``section``: the required ``## `` sections of each kind (:data:`REQUIRED`) are present; ``gate``:
  every gate key (:data:`GATE_KEYS`) is stated (cards and methods: ``## Gates`` bullets
  ``- **key**: text``; templates: a ``# Gates:`` header comment with ``key=text`` parts).
- ``api_symbol``: every ``pl.*``/``vf.*`` name and TileGroup method used in a card's ``python``
  fences or in a template is in the committed symbol list ``provenance/api-symbols.json``
  (extracted from public PyPTO-Pro samples, recording where each was seen); ``api_keyword``: every
  keyword argument of such a call was seen with that callable in the samples; ``snippet_syntax``:
  the code must parse as Python for that check.
- ``citation``: every item cites at least one source (backticked ``repository:path`` in its
  ``## Source`` section, or ``# Source:`` header lines of a template) and every citation is listed in
  ``provenance/sources.json``.
- ``template_syntax``: every template parses as Python (:func:`ast.parse`).
- ``case_field``: case rows use the operator-type-free but closed vocabularies for bound and
  evidence grade; ``coverage``: every card family has at least one active card.

Pure core :func:`check_tree` over a mapping ``relative path -> text``; :func:`check` reads the tree.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..decide import ledger_sources
from ..errors import ContractError
from . import symbols as symbols_mod

KINDS = {"knowledge-cards": "knowledge_card", "general-methods": "general_method",
         "templates": "template", "case-library": "case"}
REQUIRED = {
    "knowledge_card": ("Gates", "Mechanism", "Action", "Closing metric", "API snippet", "Source"),
    "general_method": ("Gates", "Applies when", "Action", "Boundary", "Closing metric", "Source"),
    "case": ("Problem", "Change", "Measured effect", "Platform", "Evidence grade", "Source"),
    "template": (),
}
GATE_KEYS = ledger_sources.GATE_KEYS
FAMILIES = ("cube", "mem", "pipe", "scalar", "vec", "cross")
LIFECYCLES = ("active", "draft", "retired")
EVIDENCE_GRADES = ("measured_public_doc", "measured_third_party", "described", "inferred")
CASE_BOUNDS = ("compute", "data_movement", "scalar", "wait", "any")
SYMBOLS_FILE = "provenance/api-symbols.json"
SOURCES_FILE = "provenance/sources.json"
_CITATION = re.compile(r"`([A-Za-z0-9][\w.-]*/[\w.-]+:[^`\s]+)`")
_SECTION = re.compile(r"^## +(.+?)\s*$", re.M)


@dataclass(frozen=True)
class Finding:
    code: str
    file: str
    message: str


@dataclass(frozen=True)
class Row:
    kind: str
    folder: str
    cells: dict[str, str]

    @property
    def item_id(self) -> str:
        return self.cells.get("id", "")

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.cells.get('file', '')}"


def table_rows(text: str) -> list[dict[str, str]]:
    """Every row of the first markdown table in ``text`` as ``header -> cell`` (all lifecycles)."""
    lines = text.splitlines()
    for at, line in enumerate(lines[:-1]):
        if line.strip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[at + 1]):
            header = [c.strip().lower() for c in line.strip().strip("|").split("|")]
            break
    else:
        return []
    rows = []
    for line in lines[at + 2:]:
        if not line.strip().startswith("|"):
            break
        cells = [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]
        rows.append(dict(zip(header, cells)))
    return rows


def sections(text: str) -> dict[str, str]:
    """``## Heading`` -> body text up to the next ``## `` heading."""
    marks = list(_SECTION.finditer(text))
    return {m.group(1): text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(text)]
            for i, m in enumerate(marks)}


def gates_of(text: str) -> dict[str, str]:
    """Gate key -> text, read by the same rule the ledger uses (:func:`ledger_sources.parse_gates`)."""
    return dict(ledger_sources.parse_gates(text))


def citations_of(text: str, kind: str) -> list[str]:
    if kind == "template":
        return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("# Source:")]
    return _CITATION.findall(sections(text).get("Source", ""))


def code_of_item(text: str, kind: str) -> str:
    return text if kind == "template" else symbols_mod.code_of(text, ".md")


def _index_findings(files: Mapping[str, str]) -> tuple[list[Row], list[Finding]]:
    rows: list[Row] = []
    found: list[Finding] = []
    for folder, kind in KINDS.items():
        index = f"{folder}/INDEX.md"
        if index not in files:
            found.append(Finding("index_file", index, "INDEX.md is missing"))
            continue
        rows += [Row(kind, folder, cells) for cells in table_rows(files[index])]
    named: dict[str, int] = {}
    seen: set[str] = set()
    for row in rows:
        named[row.path] = named.get(row.path, 0) + 1
        if row.item_id in seen:
            found.append(Finding("duplicate_id", row.path, f"id {row.item_id!r} appears in more than one row"))
        seen.add(row.item_id)
        life, eligible = row.cells.get("lifecycle", ""), row.cells.get("optimization_eligible", "no")
        if life not in LIFECYCLES:
            found.append(Finding("lifecycle", row.path, f"{row.item_id}: lifecycle {life!r} not in {LIFECYCLES}"))
        elif life != "active" and eligible.lower() in ("yes", "true", "y") and row.kind != "case":
            found.append(Finding("lifecycle", row.path, f"{row.item_id}: a {life} row cannot be optimization_eligible"))
        if row.path not in files:
            found.append(Finding("index_file", row.path, f"{row.item_id}: file named by INDEX does not exist"))
        elif f"#{row.item_id}" not in files[row.path] and f"# {row.item_id}" not in files[row.path]:
            found.append(Finding("anchor", row.path, f"anchor #{row.item_id} not found in the file"))
    for path in sorted(files):
        folder = path.split("/", 1)[0]
        if folder in KINDS and not path.endswith("INDEX.md") and named.get(path, 0) != 1:
            found.append(Finding("orphan_file", path, f"named by {named.get(path, 0)} INDEX rows (want 1)"))
    return rows, found


def _item_findings(row: Row, text: str, known_symbols: dict[str, Any], known_sources: set[str]) -> list[Finding]:
    found = []
    have = sections(text)
    for name in REQUIRED[row.kind]:
        if not have.get(name, "").strip():
            found.append(Finding("section", row.path, f"section '## {name}' is missing or empty"))
    if row.kind != "case":
        gates = gates_of(text)
        missing = [k for k in GATE_KEYS if not gates.get(k)]
        if missing:
            found.append(Finding("gate", row.path, f"gates {missing} are not stated"))
    if row.kind == "template":
        try:
            ast.parse(text, filename=row.path)
        except SyntaxError as exc:
            found.append(Finding("template_syntax", row.path, f"does not parse as Python: line {exc.lineno}: {exc.msg}"))
    if row.kind in ("knowledge_card", "template"):
        code = code_of_item(text, row.kind)
        for sym in sorted(symbols_mod.symbols_in(code) - set(known_symbols)):
            found.append(Finding("api_symbol", row.path, f"{sym} is not in {SYMBOLS_FILE}"))
        calls = symbols_mod.calls_in(code)
        if calls is None and row.kind == "knowledge_card":
            found.append(Finding("snippet_syntax", row.path, "the API snippet does not parse as Python"))
        for sym, names in sorted((calls or {}).items()):
            unseen = sorted(names - set(known_symbols.get(sym, {}).get("keywords", names)))
            if unseen:
                found.append(Finding("api_keyword", row.path, f"{sym}({', '.join(k + '=' for k in unseen)}) "
                                                              f"was never seen in the public samples"))
    cites = citations_of(text, row.kind)
    if not cites:
        found.append(Finding("citation", row.path, "cites no public source"))
    for cite in cites:
        if cite not in known_sources:
            found.append(Finding("citation", row.path, f"{cite} is not listed in {SOURCES_FILE}"))
    if row.kind == "case":
        if row.cells.get("evidence_grade") not in EVIDENCE_GRADES:
            found.append(Finding("case_field", row.path, f"evidence_grade not in {EVIDENCE_GRADES}"))
        if row.cells.get("bound") not in CASE_BOUNDS:
            found.append(Finding("case_field", row.path, f"bound not in {CASE_BOUNDS}"))
    return found


def check_tree(files: Mapping[str, str]) -> dict[str, Any]:
    """The report over ``files`` (relative POSIX path -> text): findings and active counts (pure)."""
    known_symbols = _json(files, SYMBOLS_FILE).get("symbols", {})
    known_sources = {s.get("citation") for s in _json(files, SOURCES_FILE).get("sources", [])}
    rows, findings = _index_findings(files)
    for row in rows:
        if row.path in files:
            findings += _item_findings(row, files[row.path], known_symbols, known_sources)
    active = [r for r in rows if r.cells.get("lifecycle") == "active"]
    families = {r.item_id.split("-")[1] for r in active if r.kind == "knowledge_card" and r.item_id.count("-") >= 2}
    findings += [Finding("coverage", "knowledge-cards/INDEX.md", f"no active card in family {f!r}")
                 for f in FAMILIES if f not in families]
    counts = {kind: {"active": sum(r.kind == kind for r in active), "all": sum(r.kind == kind for r in rows)}
              for kind in KINDS.values()}
    return {"ok": not findings, "counts": counts, "symbols_known": len(known_symbols),
            "sources_known": len(known_sources), "findings": [asdict(f) for f in findings]}


def _json(files: Mapping[str, str], name: str) -> dict[str, Any]:
    if name not in files:
        raise ContractError(name, "-", "is missing", "restore the committed provenance file")
    try:
        obj = json.loads(files[name])
    except ValueError as exc:
        raise ContractError(name, "-", f"is not JSON ({exc})", "restore the committed provenance file") from exc
    if not isinstance(obj, dict):
        raise ContractError(name, "-", "is not a JSON object", "restore the committed provenance file")
    return obj


def read_tree(root: Path) -> dict[str, str]:
    """Every INDEX, item and provenance file under ``root`` (relative POSIX path -> text)."""
    if not root.is_dir():
        raise ContractError(root, "--references", "is not a directory", "pass the skill's references folder")
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and (rel.split("/", 1)[0] in KINDS or rel.startswith("provenance/")):
            files[rel] = path.read_text(encoding="utf-8", errors="replace")
    return files


def check(root: str | Path) -> dict[str, Any]:
    return check_tree(read_tree(Path(root)))
