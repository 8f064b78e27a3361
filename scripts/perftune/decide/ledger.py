"""The optimisation-item ledger ``docs/perf/ledger.json`` (DESIGN §4.5): items, transitions, closure.

Pure core: building items from enumerated sources (:mod:`perftune.decide.ledger_sources`), every edit
(init, add, update, reopen, sweep) as a function ``ledger -> new ledger`` that validates the
transition and appends one ``history`` entry, and :func:`check_ledger`, which lists every closure
problem. Thin I/O at the bottom: :func:`load_ledger`, :func:`modify_ledger` (lock + atomic write), :func:`check`.

Decisions DESIGN left open (see docs/ledger.md):
- ``revision`` counts edits; every history entry carries the revision it created. The final sweep
  records ``at_revision``; any later edit makes the sweep stale (no clock comparisons).
- A terminal status changes only through ``reopen`` (back to ``pending``); history keeps the old
  conclusion. ``update`` may still add evidence to a terminal item (it is logged).
- Closing needs grounds: every terminal transition carries a note; ``accepted``/``implemented``
  need a correctness run and a formal collection; ``rejected`` needs a ``reason_code`` and the
  evidence that code implies (``quick_not_promoted`` → a quick id, ``correctness_failed`` → a
  correctness run, ``control_faster``/``no_stable_gain``/``slower`` → a quick or formal id).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import fsio
from ..contract import manifest, protocol, schemas
from ..errors import ContractError
from .ledger_sources import DiskFacts, Enumeration, SourceItem, disk_facts, enumerate_sources

SCHEMA_VERSION = 1
APPLICABILITY = ("applicable", "not_applicable", "not_triggered", "to_be_proven")
SWEEP_TARGETS = ("frozen_contract", "capability_limit")
TERMINAL = protocol.KB_TERMINAL_STATUSES + protocol.OTHER_TERMINAL_STATUSES
_EVIDENCE_FOR_REASON = {
    "quick_not_promoted": ("quick",), "correctness_failed": ("correctness",),
    "control_faster": ("quick", "formal"), "no_stable_gain": ("quick", "formal"), "slower": ("quick", "formal"),
}


def allowed_statuses(kind: str) -> tuple[str, ...]:
    terminal = protocol.KB_TERMINAL_STATUSES if kind == "kb_selected" else protocol.OTHER_TERMINAL_STATUSES
    return protocol.NON_TERMINAL_STATUSES + terminal


def is_terminal(status: str) -> bool:
    return status in TERMINAL


@dataclass(frozen=True)
class Problem:
    """One reason the ledger is not closed."""

    code: str
    item_id: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "item_id": self.item_id, "message": self.message}


@dataclass(frozen=True)
class ItemChange:
    """What ``ledger.py update`` may change; ``None``/empty means unchanged."""

    status: str | None = None
    reason_code: str | None = None
    note: str = ""
    code_ref: str | None = None
    correctness: str | None = None
    quick: tuple[str, ...] = ()
    formal: tuple[str, ...] = ()
    mechanism: str | None = None
    restore_point: str | None = None
    relations: tuple[tuple[str, str], ...] = ()
    applicability: str | None = None
    grounds: str | None = None
    expected_metric: str | None = None
    hypothesis: str | None = None


def _history(ledger: dict, *, at: str, actor: str, action: str, old: str | None, new: str | None,
             note: str) -> dict[str, Any]:
    return {"revision": ledger["revision"], "at": at, "actor": actor, "action": action,
            "from": old, "to": new, "note": note}


def new_item(src: SourceItem, ledger: dict, *, at: str, actor: str, action: str = "init",
             hypothesis: str | None = None) -> dict[str, Any]:
    """A fresh ``pending`` item for an enumerated (or derived) source (with its gates, if any)."""
    item = {
        "item_id": src.item_id, "source_kind": src.source_kind, "title": src.title,
        "source_ref": {"file": src.file, "anchor": src.anchor, "sha256": src.sha256},
        "case_scope": list(src.case_scope), "applicability": {"state": "to_be_proven", "grounds": ""},
        "expected_metric": src.expected_metric, "hypothesis": hypothesis, "status": "pending",
        "reason_code": None,
        "evidence": {"code_ref": None, "correctness": None, "quick": [], "formal": [],
                     "mechanism": None, "restore_point": None},
        "relations": [],
        "history": [_history(ledger, at=at, actor=actor, action=action, old=None, new="pending",
                             note=f"enumerated from {src.file}#{src.anchor}")],
    }
    if src.gates:
        item["gates"] = dict(src.gates)
    return item


def init_ledger(enum: Enumeration, *, at: str, actor: str) -> dict[str, Any]:
    """The first ledger: one pending item per enumerated preset source, in source order."""
    ledger: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "revision": 1, "created_at": at,
                              "sources": enum.summary(), "sources_origin": dict(enum.origin), "items": [],
                              "sweep": None}
    ledger["items"] = [new_item(src, ledger, at=at, actor=actor) for src in enum.items]
    return ledger


def find_item(ledger: dict, item_id: str, source: str = "ledger.json") -> dict[str, Any]:
    for item in ledger["items"]:
        if item["item_id"] == item_id:
            return item
    raise ContractError(source, "item_id", f"no item {item_id!r}", "see 'ledger.py show'")


def open_presets(ledger: dict) -> list[str]:
    """Preset items that are not terminal (``enabler`` counts as open)."""
    return [i["item_id"] for i in ledger["items"]
            if i["source_kind"] in protocol.PRESET_SOURCE_KINDS and not is_terminal(i["status"])]


def add_derived(ledger: dict, src: SourceItem, *, hypothesis: str, at: str, actor: str) -> dict:
    """Add a ``bottleneck_derived`` item; refused while any preset item is open."""
    still_open = open_presets(ledger)
    if still_open:
        raise ContractError("ledger.json", "source_kind", f"bottleneck_derived refused: {len(still_open)} "
                            f"preset items still open ({', '.join(still_open[:3])})",
                            "close every kb_selected/general_method/knowledge_card/template item first")
    if any(i["item_id"] == src.item_id for i in ledger["items"]):
        raise ContractError("ledger.json", "item_id", f"{src.item_id!r} already exists", "choose a new id")
    if not hypothesis.strip():
        raise ContractError("ledger.json", "hypothesis", "is empty", "state a falsifiable mechanism")
    out = _bump(ledger)
    out["items"].append(new_item(src, out, at=at, actor=actor, action="add", hypothesis=hypothesis))
    return out


def _bump(ledger: dict) -> dict:
    out = copy.deepcopy(ledger)
    out["revision"] += 1
    return out


def closing_problems(item: dict) -> list[str]:
    """Why ``item`` may not hold its terminal status (empty when it may)."""
    status, ev, reason = item["status"], item["evidence"], item.get("reason_code")
    found = []
    if status in ("accepted", "implemented"):
        if not ev["correctness"]:
            found.append(f"{status} needs a correctness run id (evidence.correctness)")
        if not ev["formal"]:
            found.append(f"{status} needs a formal collection id (evidence.formal)")
    if status == "not_applicable" and item.get("gates"):
        grounds = item["applicability"]["grounds"]
        if not any(f"gate:{key}" in grounds for key in item["gates"]):
            names = ", ".join(f"gate:{key}" for key in item["gates"])
            found.append(f"not_applicable needs applicability grounds naming the failed gate ({names})")
    if status == "rejected":
        if not reason:
            found.append("rejected needs a reason_code")
        elif reason in _EVIDENCE_FOR_REASON and not any(ev[k] for k in _EVIDENCE_FOR_REASON[reason]):
            need = " or ".join(f"evidence.{k}" for k in _EVIDENCE_FOR_REASON[reason])
            found.append(f"rejected/{reason} needs {need}")
    return found


def _set_status(item: dict, change: ItemChange) -> None:
    new, old = change.status, item["status"]
    if new not in allowed_statuses(item["source_kind"]):
        raise ContractError("ledger.json", f"{item['item_id']}.status", f"{new!r} is not allowed for "
                            f"{item['source_kind']}", f"use one of {list(allowed_statuses(item['source_kind']))}")
    if is_terminal(old) and new != old:
        raise ContractError("ledger.json", f"{item['item_id']}.status", f"is terminal ({old})",
                            "use 'ledger.py reopen' when new evidence invalidates the conclusion")
    if is_terminal(new) and not change.note.strip():
        raise ContractError("ledger.json", f"{item['item_id']}.status", f"closing as {new} without grounds",
                            "pass --note with the evidence-based conclusion")
    item["status"] = new
    item["reason_code"] = change.reason_code


def _apply_evidence(item: dict, change: ItemChange) -> None:
    ev = item["evidence"]
    for key in ("code_ref", "correctness", "mechanism", "restore_point"):
        if getattr(change, key) is not None:
            ev[key] = getattr(change, key)
    for key in ("quick", "formal"):
        ev[key] = list(dict.fromkeys([*ev[key], *getattr(change, key)]))
    if change.applicability is not None:
        item["applicability"]["state"] = change.applicability
    if change.grounds is not None:
        item["applicability"]["grounds"] = change.grounds
    if change.expected_metric is not None:
        item["expected_metric"] = change.expected_metric
    if change.hypothesis is not None:
        if not change.hypothesis.strip():
            raise ContractError("ledger.json", "hypothesis", "is empty", "state a falsifiable mechanism")
        item["hypothesis"] = change.hypothesis


def _add_relations(ledger: dict, item: dict, relations: tuple[tuple[str, str], ...]) -> None:
    for kind, target in relations:
        if kind not in protocol.RELATION_KINDS:
            raise ContractError("ledger.json", "relations.kind", f"{kind!r} is unknown",
                                f"use one of {list(protocol.RELATION_KINDS)}")
        if target == item["item_id"]:
            raise ContractError("ledger.json", "relations.item_id", "an item cannot relate to itself", "fix it")
        find_item(ledger, target)
        entry = {"kind": kind, "item_id": target}
        if entry not in item["relations"]:
            item["relations"].append(entry)


def update_item(ledger: dict, item_id: str, change: ItemChange, *, at: str, actor: str) -> dict:
    """Change an item's status/evidence/relations; validates the transition, appends history."""
    out = _bump(ledger)
    item = find_item(out, item_id)
    old = item["status"]
    if change.reason_code is not None and change.reason_code not in protocol.REASON_CODES:
        raise ContractError("ledger.json", "reason_code", f"{change.reason_code!r} is unknown",
                            f"use one of {list(protocol.REASON_CODES)}")
    if change.applicability is not None and change.applicability not in APPLICABILITY:
        raise ContractError("ledger.json", "applicability", f"{change.applicability!r} is unknown",
                            f"use one of {list(APPLICABILITY)}")
    _apply_evidence(item, change)
    _add_relations(out, item, change.relations)
    if change.status is not None:
        _set_status(item, change)
    elif change.reason_code is not None:
        item["reason_code"] = change.reason_code
    if is_terminal(item["status"]):
        problems = closing_problems(item)
        if problems:
            raise ContractError("ledger.json", f"{item_id}.evidence", problems[0],
                                "record the evidence with --correctness/--quick/--formal first")
    item["history"].append(_history(out, at=at, actor=actor, action="update", old=old,
                                    new=item["status"], note=change.note))
    return out


def reopen_item(ledger: dict, item_id: str, *, note: str, by: str | None, at: str, actor: str) -> dict:
    """Reopen a terminal item (same id, back to ``pending``); ``by`` records a ``reopens`` relation."""
    out = _bump(ledger)
    item = find_item(out, item_id)
    if not is_terminal(item["status"]):
        raise ContractError("ledger.json", f"{item_id}.status", f"is not terminal ({item['status']})",
                            "only a closed conclusion can be reopened")
    if not note.strip():
        raise ContractError("ledger.json", "note", "reopening needs the invalidating change",
                            "pass --note")
    if by is not None:
        _add_relations(out, find_item(out, by), (("reopens", item_id),))
    old = item["status"]
    item["status"], item["reason_code"] = "pending", None
    item["history"].append(_history(out, at=at, actor=actor, action="reopen", old=old, new="pending",
                                    note=note if by is None else f"{note} (reopened by {by})"))
    return out


def record_sweep(ledger: dict, *, scope: str, examined: list[str], findings: list[dict[str, str]],
                 at: str, actor: str, examined_files: list[dict] | None = None) -> dict:
    """Record the final sweep (``examined_files``: ``citations.record``); refused while an item is open."""
    still_open = [i["item_id"] for i in ledger["items"] if not is_terminal(i["status"])]
    if still_open:
        raise ContractError("ledger.json", "sweep", f"{len(still_open)} items still open "
                            f"({', '.join(still_open[:3])})", "close every item before the final sweep")
    if not scope.strip() or not examined:
        raise ContractError("ledger.json", "sweep", "scope and evidence_examined are required",
                            "pass --scope and --examined")
    for finding in findings:
        problem = _finding_problem(ledger, finding)
        if problem:
            raise ContractError("ledger.json", "sweep.findings", problem, "map it to a closed item id, "
                                "frozen_contract or capability_limit")
    out = _bump(ledger)
    out["sweep"] = {"scope": scope, "evidence_examined": list(examined), "findings": list(findings),
                    "performed_at": at, "actor": actor, "at_revision": out["revision"],
                    **({"examined_files": examined_files} if examined_files is not None else {})}
    return out


def _finding_problem(ledger: dict, finding: dict[str, str]) -> str | None:
    target = finding.get("maps_to", "")
    if target in SWEEP_TARGETS:
        return None
    items = {i["item_id"]: i for i in ledger["items"]}
    if target not in items:
        return f"finding {finding.get('finding')!r} maps to unknown target {target!r}"
    if not is_terminal(items[target]["status"]):
        return f"finding maps to open item {target!r}"
    return None


def _status_at(item: dict, revision: int) -> str | None:
    status = None
    for entry in item["history"]:
        if entry["revision"] <= revision:
            status = entry["to"]
    return status


def _coverage_problems(ledger: dict, enum: Enumeration) -> list[Problem]:
    found = []
    now = {s.item_id: s for s in enum.items}
    have = {i["item_id"]: i for i in ledger["items"] if i["source_kind"] in protocol.PRESET_SOURCE_KINDS}
    for item_id in now.keys() - have.keys():
        found.append(Problem("coverage_missing", item_id, f"enumerated {now[item_id].source_kind} source "
                             "has no ledger item"))
    for item_id in have.keys() - now.keys():
        found.append(Problem("coverage_extra", item_id, "preset item is not enumerated from the sources now"))
    for item_id in now.keys() & have.keys():
        src, ref = now[item_id], have[item_id]["source_ref"]
        if have[item_id]["source_kind"] != src.source_kind:
            found.append(Problem("source_changed", item_id, f"kind {have[item_id]['source_kind']} != {src.source_kind}"))
        elif (ref["file"], ref["anchor"]) != (src.file, src.anchor):
            found.append(Problem("source_changed", item_id, f"recorded {ref['file']}#{ref['anchor']} is now "
                                 f"enumerated as {src.file}#{src.anchor}"))
        elif ref["sha256"] != src.sha256:
            found.append(Problem("source_changed", item_id, f"content of {src.file} changed since enumerated "
                                 f"(sha256 {ref['sha256'][:12]} -> {src.sha256[:12]}): restore it or reopen the item"))
    return found


def _item_problems(ledger: dict, item: dict, facts: DiskFacts) -> list[Problem]:
    iid, status, ev = item["item_id"], item["status"], item["evidence"]
    ids = {i["item_id"] for i in ledger["items"]}
    found = [Problem("status_kind", iid, f"status {status} not allowed for {item['source_kind']}")
             for _ in [0] if status not in allowed_statuses(item["source_kind"])]
    if not is_terminal(status):
        found.append(Problem("non_terminal", iid, f"status {status} is not terminal"))
    else:
        found += [Problem("closing_evidence", iid, text) for text in closing_problems(item)]
    for rel in item["relations"]:
        if rel["item_id"] not in ids:
            found.append(Problem("relation_target", iid, f"{rel['kind']} target {rel['item_id']!r} does not exist"))
    for cid in ev["formal"]:
        state = facts.formal.get(cid)
        if state != "complete":
            found.append(Problem("formal_missing", iid, f"formal collection {cid!r} is "
                                 f"{state or 'not on disk'}, not a complete formal round"))
    found += [Problem("quick_missing", iid, f"quick id {q!r} not on disk") for q in ev["quick"]
              if q not in facts.quick]
    if ev["correctness"] and ev["correctness"] not in facts.correctness:
        found.append(Problem("correctness_missing", iid, f"correctness run {ev['correctness']!r} not on disk"))
    return found


def _derived_problems(ledger: dict) -> list[Problem]:
    presets = [i for i in ledger["items"] if i["source_kind"] in protocol.PRESET_SOURCE_KINDS]
    found = []
    for item in ledger["items"]:
        if item["source_kind"] != "bottleneck_derived":
            continue
        born = item["history"][0]["revision"]
        early = [p["item_id"] for p in presets if not is_terminal(_status_at(p, born) or "pending")]
        if early:
            found.append(Problem("derived_too_early", item["item_id"], f"created while presets were open "
                                 f"({', '.join(early[:3])})"))
    return found


def _conflict_problems(ledger: dict) -> list[Problem]:
    accepted = {i["item_id"] for i in ledger["items"] if i["status"] in ("accepted", "implemented")}
    found, seen = [], set()
    for item in ledger["items"]:
        for rel in item["relations"]:
            pair = tuple(sorted((item["item_id"], rel["item_id"])))
            if rel["kind"] == "conflict" and set(pair) <= accepted and pair not in seen:
                seen.add(pair)
                found.append(Problem("conflict_accepted", pair[0], f"accepted together with conflicting {pair[1]}"))
    return found


def _sweep_problems(ledger: dict) -> list[Problem]:
    sweep = ledger.get("sweep")
    if not sweep:
        return [Problem("sweep_missing", "-", "no final candidate sweep recorded ('ledger.py sweep')")]
    found = []
    if sweep["at_revision"] != ledger["revision"]:
        found.append(Problem("sweep_stale", "-", f"ledger changed after the sweep (revision "
                             f"{sweep['at_revision']} < {ledger['revision']}); sweep again"))
    found += [Problem("sweep_target", "-", text) for f in sweep["findings"] if (text := _finding_problem(ledger, f))]
    return found


def check_ledger(ledger: dict, enum: Enumeration, facts: DiskFacts) -> list[Problem]:
    """Every reason the (schema-valid) ledger is not closed, in a stable order (pure)."""
    found = _coverage_problems(ledger, enum)
    for item in ledger["items"]:
        found += _item_problems(ledger, item, facts)
    found += _derived_problems(ledger) + _conflict_problems(ledger) + _sweep_problems(ledger)
    return sorted(found, key=lambda p: (p.code, p.item_id, p.message))


# ---- thin I/O edge -------------------------------------------------------------------------------

def ledger_path(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / protocol.LEDGER_NAME


def parse_ledger(obj: Any, source: str | Path) -> dict:
    """Schema-validate a ledger and refuse duplicate item ids (exit 2 on any problem)."""
    schemas.validate(obj, "ledger", source)
    ids = [i["item_id"] for i in obj["items"]]
    if len(set(ids)) != len(ids):
        raise ContractError(source, "items[].item_id", "duplicate item ids", "each item id appears once")
    return obj


def load_ledger(path: str | Path) -> dict:
    return parse_ledger(fsio.read_json(path, what="ledger"), path)


def modify_ledger(path: str | Path, edit: Callable[[dict], dict]) -> dict:
    """Under the file lock: load, apply ``edit``, validate, write atomically; returns the new ledger."""
    with fsio.file_lock(path):
        new = parse_ledger(edit(load_ledger(path)), path)
        fsio.write_json(path, new)
    return new


def check(ledger: dict, sources: Enumeration, op_dir: str | Path) -> list[Problem]:
    """:func:`check_ledger` against the evidence ids on disk under ``op_dir``."""
    return check_ledger(ledger, sources, disk_facts(op_dir))


def case_ids_of(op_dir: str | Path) -> tuple[str, ...]:
    """P0 case ids of the frozen manifest (the ledger's case scopes refer to them)."""
    return manifest.load_manifest(Path(op_dir) / protocol.MANIFEST_NAME).case_ids


def init_file(op_dir: str | Path, *, at: str, actor: str, sources_dir: str | Path | None = None) -> dict:
    """Enumerate the sources and write a new ledger; an existing ledger is never overwritten."""
    path = ledger_path(op_dir)
    if path.exists():
        raise ContractError(path, "-", "a ledger already exists and is never re-initialised",
                            "edit it with 'ledger.py update' or 'ledger.py reopen'")
    ledger = parse_ledger(init_ledger(enumerate_sources(op_dir, case_ids_of(op_dir), sources_dir),
                                      at=at, actor=actor), path)
    with fsio.file_lock(path):
        fsio.write_json(path, ledger, overwrite=False)
    return ledger
