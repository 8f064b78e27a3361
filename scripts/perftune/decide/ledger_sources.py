"""What the ledger is checked against: the enumerated preset sources and the evidence ids on disk.

The four preset sources (DESIGN §4.5) are enumerated mechanically, never by scanning folders:

- ``kb_selected``: every requirement with ``kind: obligation`` in ``KB_SELECTION.json``
  (``classes[].optional_patterns[]`` and ``classes[].required_constraints[]``); item id
  ``kb-<class_id>-<req_id>``; identity key ``(class_id, selection_field, reference, req_id)``;
  content hash = sha256 of KB_SELECTION.json.
- ``general_method`` / ``knowledge_card`` / ``template``: the first markdown table of
  ``<sources>/general-methods/INDEX.md``, ``knowledge-cards/INDEX.md``, ``templates/INDEX.md``;
  only rows with ``lifecycle`` = active and ``optimization_eligible`` = yes; item id = the ``id``
  cell; content hash = sha256 of the row's ``file`` (relative to the INDEX folder).

A missing source file is a contract error (missing is never zero); an INDEX whose table has no
enumerable row records a count of 0. The formats are documented in docs/ledger.md.

Origin (one source of truth): ``ledger.py init`` records where the three INDEX folders came from as
``sources_origin {base: op|plugin, path}``; ``base`` is the operator directory or the plugin root
(the folder holding ``scripts/``), ``path`` is relative to it, never absolute. Every file record of
an enumerated source is written relative to that base (``plugin:`` prefixed for the plugin), so
``ledger_check.py`` and ``stage5_check.py`` re-enumerate exactly the recorded folder, and a moved
plugin with identical content still verifies. A ledger without the field reads ``<op>/sources``.

Gates: an item's applicability gates are read from its file (:func:`parse_gates`): the bullets
``- **key**: text`` of a markdown ``## Gates`` section, or the ``# Gates: key=text; ...`` header
comment of a template. A file without gates yields none (the item then carries no ``gates``). The
optional ``backend`` gate (``not pypto-sim (why)``) names the measuring backends the item cannot apply to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest, protocol
from ..errors import ContractError

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
PLUGIN_PREFIX = "plugin:"
KB_FILE = "KB_SELECTION.json"
SOURCES_DIR = "sources"
PLUGIN_REFERENCES = "skills/pypto-pro-op-perf-tune/references"   # the plugin's preset sources
INDEX_DIRS = {"general_method": "general-methods", "knowledge_card": "knowledge-cards", "template": "templates"}
SELECTION_FIELDS = ("optional_patterns", "required_constraints")
REQUIREMENT_KINDS = ("obligation", "precondition", "validation_scope")
INDEX_COLUMNS = ("id", "title", "lifecycle", "optimization_eligible", "file")
GATE_KEYS = ("platform", "dtype", "shape", "bound")           # every item states these
OPTIONAL_GATE_KEYS = ("backend", "occupancy")               # backend: where a backend cannot apply it;
                                                             # occupancy: block_dim cards (ledger_gates)
_MD_GATE = re.compile(r"^- \*\*(\w+)\*\*: *(\S.*)$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class SourceItem:
    """One enumerated source row: the identity a ledger item is created from."""

    item_id: str
    source_kind: str
    title: str
    file: str
    anchor: str
    sha256: str
    case_scope: tuple[str, ...]
    expected_metric: str
    gates: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class IndexRow:
    item_id: str
    title: str
    file: str
    anchor: str
    case_scope: str
    expected_metric: str


@dataclass(frozen=True)
class Enumeration:
    """All enumerated preset items plus the file record of each source index."""

    items: tuple[SourceItem, ...]
    indexes: dict[str, dict[str, Any]]
    origin: dict[str, str] = field(default_factory=lambda: {"base": "op", "path": SOURCES_DIR})

    def summary(self) -> dict[str, Any]:
        return {kind: {"index": record, "count": sum(i.source_kind == kind for i in self.items)}
                for kind, record in sorted(self.indexes.items())}


@dataclass(frozen=True)
class DiskFacts:
    """Evidence ids found on disk: formal collection id/round name → status, quick and correctness ids."""

    formal: dict[str, str] = field(default_factory=dict)
    quick: frozenset[str] = frozenset()
    correctness: frozenset[str] = frozenset()


def resolve_scope(text: str, case_ids: tuple[str, ...], source: str, field: str) -> tuple[str, ...]:
    """``all``/empty → every P0 case id; otherwise comma/space separated known ids."""
    if not text.strip() or text.strip().lower() in ("all", "all_p0", "*"):
        return tuple(case_ids)
    scope = tuple(dict.fromkeys(t for t in re.split(r"[,\s]+", text.strip()) if t))
    unknown = [c for c in scope if c not in case_ids]
    if unknown:
        raise ContractError(source, field, f"unknown case ids {unknown}", f"use 'all' or ids from {list(case_ids)}")
    return scope


def _requirement(req: Any, where: str, source: str) -> dict[str, str]:
    if not isinstance(req, dict):
        raise ContractError(source, where, "is not an object", "see docs/ledger.md for the format")
    for key in ("req_id", "kind", "reference", "text"):
        if not isinstance(req.get(key), str) or not req[key].strip():
            raise ContractError(source, f"{where}.{key}", "is missing or empty", "see docs/ledger.md")
    if req["kind"] not in REQUIREMENT_KINDS:
        raise ContractError(source, f"{where}.kind", f"{req['kind']!r} is unknown", f"use one of {list(REQUIREMENT_KINDS)}")
    if not _ID.match(req["req_id"]):
        raise ContractError(source, f"{where}.req_id", f"{req['req_id']!r} is not a safe id", "use [A-Za-z0-9._-]")
    return req


def parse_kb_selection(obj: Any, *, file: str, sha256: str, case_ids: tuple[str, ...],
                       source: str = KB_FILE) -> list[SourceItem]:
    """kb_selected items: one per ``kind: obligation`` requirement, in file order (pure)."""
    classes = obj.get("classes") if isinstance(obj, dict) else None
    if not isinstance(classes, list):
        raise ContractError(source, "classes", "is missing or not a list", "see docs/ledger.md for the format")
    items: list[SourceItem] = []
    for ci, cls in enumerate(classes):
        class_id = cls.get("class_id") if isinstance(cls, dict) else None
        if not isinstance(class_id, str) or not _ID.match(class_id):
            raise ContractError(source, f"classes[{ci}].class_id", "is missing or not a safe id", "name the class")
        for fld in SELECTION_FIELDS:
            reqs = cls.get(fld, [])
            if not isinstance(reqs, list):
                raise ContractError(source, f"classes[{ci}].{fld}", "is not a list", "see docs/ledger.md")
            for ri, raw in enumerate(reqs):
                req = _requirement(raw, f"classes[{ci}].{fld}[{ri}]", source)
                if req["kind"] != "obligation":
                    continue
                items.append(SourceItem(
                    item_id=f"kb-{class_id}-{req['req_id']}", source_kind="kb_selected", title=req["text"],
                    file=file, anchor=f"classes[{class_id}].{fld}[{req['req_id']}]@{req['reference']}",
                    sha256=sha256, expected_metric=str(req.get("expected_metric") or "obligation satisfied"),
                    case_scope=resolve_scope(str(req.get("case_scope", "")), case_ids, source,
                                             f"classes[{ci}].{fld}[{ri}].case_scope")))
    return items


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def parse_index(text: str, source: str = "INDEX.md") -> list[IndexRow]:
    """Enumerable rows (lifecycle active, optimization_eligible yes) of the INDEX table (pure)."""
    lines = text.splitlines()
    for at, line in enumerate(lines[:-1]):
        if line.strip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[at + 1]):
            header = [c.lower() for c in _cells(line)]
            break
    else:
        raise ContractError(source, "table", "no markdown table", "see docs/ledger.md for the INDEX format")
    missing = [c for c in INDEX_COLUMNS if c not in header]
    if missing:
        raise ContractError(source, "table header", f"missing columns {missing}", f"add {list(INDEX_COLUMNS)}")
    rows = []
    for number, line in enumerate(lines[at + 2:], 1):
        if not line.strip().startswith("|"):
            break
        cell = dict(zip(header, _cells(line)))
        if len(_cells(line)) != len(header):
            raise ContractError(source, f"table row {number}", "cell count differs from the header", "fix the row")
        if cell["lifecycle"].lower() != "active" or cell["optimization_eligible"].lower() not in ("yes", "true", "y"):
            continue
        if not _ID.match(cell["id"]) or not cell["file"] or cell["file"] == "-":
            raise ContractError(source, f"table row {number}", "enumerable row needs a safe id and a file",
                                "fill the id and file cells")
        rows.append(IndexRow(cell["id"], cell["title"], cell["file"], cell.get("anchor") or f"#{cell['id']}",
                             cell.get("case_scope", ""), cell.get("expected_metric") or "-"))
    return rows


def parse_gates(text: str) -> tuple[tuple[str, str], ...]:
    """(key, text) gates of an item file, in :data:`GATE_KEYS` + :data:`OPTIONAL_GATE_KEYS` order (pure;
    empty when none)."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    if text.startswith("# template-"):
        header = " ".join(ln.lstrip("#").strip() for ln in lines if ln.startswith("#"))
        match = re.search(r"Gates:(.*?)(?:Source:|$)", header)
        for part in (match.group(1).split(";") if match else []):
            key, _, value = part.partition("=")
            if value.strip():
                found[key.strip()] = value.strip().rstrip(".")
    else:
        inside = False
        for line in lines:
            if line.startswith("## "):
                inside = line[3:].strip() == "Gates"
            elif inside and (m := _MD_GATE.match(line)):
                found[m.group(1)] = m.group(2).strip()
    return tuple((k, found[k]) for k in GATE_KEYS + OPTIONAL_GATE_KEYS if k in found)


def origin_of(op_dir: str | Path, sources_dir: str | Path | None) -> dict[str, str]:
    """``{base, path}`` of a sources folder: inside the op dir or the plugin, never absolute. Without
    ``sources_dir``: the operator's own ``sources/`` when it holds an INDEX file, else the plugin's
    references (the scaffold's ``sources/README.md`` says so)."""
    root = Path(op_dir).resolve()
    if sources_dir is None:
        own = any((root / SOURCES_DIR / folder / "INDEX.md").is_file() for folder in INDEX_DIRS.values())
        return {"base": "op", "path": SOURCES_DIR} if own else {"base": "plugin", "path": PLUGIN_REFERENCES}
    folder = Path(sources_dir).resolve()
    for base, anchor in (("op", root), ("plugin", PLUGIN_ROOT)):
        if folder == anchor or anchor in folder.parents:
            return {"base": base, "path": folder.relative_to(anchor).as_posix() or "."}
    raise ContractError(sources_dir, "--sources-dir", "is neither inside the operator directory nor inside "
                        "the plugin", "copy the sources into <op-dir>/sources or use the plugin's references")


def origin_dir(op_dir: str | Path, origin: dict[str, str]) -> Path:
    """The folder an origin names today (the plugin root is where this code runs from)."""
    anchor = Path(op_dir) if origin["base"] == "op" else PLUGIN_ROOT
    return fsio.safe_join(anchor, origin["path"], field="sources_origin.path") if origin["path"] != "." else anchor


def _record(path: Path, op_dir: Path, origin: dict[str, str]) -> dict[str, Any]:
    """A file record relative to the origin's base (``plugin:<path>`` for the plugin)."""
    if origin["base"] == "op":
        return fsio.file_record(path, op_dir)
    record = fsio.file_record(path, PLUGIN_ROOT)
    return {**record, "path": PLUGIN_PREFIX + record["path"]}


def _index_items(kind: str, index: Path, op_dir: Path, case_ids: tuple[str, ...],
                 origin: dict[str, str]) -> list[SourceItem]:
    text = index.read_text(encoding="utf-8")
    items = []
    for row in parse_index(text, str(index)):
        target = fsio.safe_join(index.parent, row.file, field=f"{row.item_id}.file", source=index)
        if not target.is_file():
            raise ContractError(index, f"{row.item_id}.file", f"{row.file} does not exist",
                                "fix the INDEX row or add the file")
        record = _record(target, op_dir, origin)
        items.append(SourceItem(row.item_id, kind, row.title, record["path"], row.anchor,
                                record["sha256"], resolve_scope(row.case_scope, case_ids, str(index),
                                                                         f"{row.item_id}.case_scope"),
                                row.expected_metric,
                                parse_gates(target.read_text(encoding="utf-8", errors="replace"))))
    return items


def enumerate_sources(op_dir: str | Path, case_ids: tuple[str, ...],
                      sources_dir: str | Path | None = None, *, origin: dict[str, str] | None = None) -> Enumeration:
    """Read KB_SELECTION.json and the three INDEX files of ``origin`` (or of ``sources_dir``, which
    becomes the origin); every item id must be unique."""
    root = Path(op_dir)
    origin = origin or origin_of(root, sources_dir)
    base = origin_dir(root, origin)
    kb_path = root / KB_FILE
    kb_record = fsio.file_record(kb_path, root) if kb_path.is_file() else None
    if kb_record is None:
        raise ContractError(kb_path, "-", "KB_SELECTION.json is missing (frozen input)",
                            "stage5_contract_blocked: restore the Stage 3 selection, never rebuild it")
    items = parse_kb_selection(fsio.read_json(kb_path, what="KB selection"), file=kb_record["path"],
                               sha256=kb_record["sha256"], case_ids=case_ids, source=str(kb_path))
    indexes = {"kb_selected": kb_record}
    for kind, folder in INDEX_DIRS.items():
        index = base / folder / "INDEX.md"
        if not index.is_file():
            where = f"{origin['base']}:{origin['path']}"
            raise ContractError(index, "-", f"{kind} INDEX is missing in the sources folder {where} (the ledger's "
                                "sources_origin)", "restore that folder; ledger init recorded it, checks read only it")
        indexes[kind] = _record(index, root, origin)
        items += _index_items(kind, index, root, case_ids, origin)
    seen: set[str] = set()
    for item in items:
        if item.item_id in seen:
            raise ContractError(item.file, "item_id", f"{item.item_id!r} is enumerated twice",
                                "give every source row a unique id")
        seen.add(item.item_id)
    return Enumeration(tuple(items), indexes, dict(origin))


def recorded_sources(op_dir: str | Path, ledger: dict[str, Any]) -> Enumeration:
    """The sources re-enumerated from the folder ``ledger init`` recorded (``sources_origin``)."""
    case_ids = manifest.load_manifest(Path(op_dir) / protocol.MANIFEST_NAME).case_ids
    return enumerate_sources(op_dir, case_ids, origin=ledger.get("sources_origin"))


def _collection_states(perf: Path) -> dict[str, str]:
    states: dict[str, str] = {}
    for path in sorted(perf.glob(f"{protocol.ROUND_PREFIX}*/collection.json")):
        try:
            obj = fsio.read_json(path, what="collection")
        except ContractError:
            states[path.parent.name] = "unreadable"
            continue
        state = "quick" if obj.get("mode") == "quick" else str(obj.get("status", "unknown"))
        states[path.parent.name] = state
        if isinstance(obj.get("collection_id"), str):
            states[obj["collection_id"]] = state
    return states


def disk_facts(op_dir: str | Path) -> DiskFacts:
    """Which formal collections, quick results and correctness runs exist under docs/perf/."""
    perf = Path(op_dir) / protocol.PERF_DIR
    quick: set[str] = set()
    for path in sorted(perf.glob(f"quick/*/{protocol.QUICK_NAME}")):
        quick.add(path.parent.name)
        try:
            obj = fsio.read_json(path, what="quick result")
        except ContractError:
            continue
        quick.update(obj[k] for k in ("collection_id", "quick_id") if isinstance(obj, dict) and isinstance(obj.get(k), str))
    correctness = frozenset(p.stem for p in sorted((perf / "correctness").glob("*.json")))
    return DiskFacts(_collection_states(perf), frozenset(quick), correctness)



def derived_source(op_dir: str | Path, *, item_id: str, title: str, evidence_file: str, anchor: str,
                   case_scope: str, expected_metric: str, case_ids: tuple[str, ...]) -> SourceItem:
    """The source identity of a ``bottleneck_derived`` item: the bottleneck evidence file it cites."""
    if not _ID.match(item_id):
        raise ContractError("--item-id", "item_id", f"{item_id!r} is not a safe id", "use [A-Za-z0-9._-]")
    target = fsio.safe_join(op_dir, evidence_file, field="--evidence-file")
    if not target.is_file():
        raise ContractError(target, "--evidence-file", "does not exist", "cite the profiler/analysis file")
    if not title.strip() or not expected_metric.strip():
        raise ContractError("--title", "title", "title and expected metric are required", "state both")
    return SourceItem(item_id, "bottleneck_derived", title, fsio.display_path(target, op_dir), anchor or "-",
                      fsio.sha256_file(target), resolve_scope(case_scope, case_ids, "--case-scope", "case_scope"),
                      expected_metric)
