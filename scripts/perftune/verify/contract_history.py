"""Gate P2, the history of the frozen contract: the frozen-input record and manifest replacements.

- ``FROZEN_INPUTS.json`` (:mod:`..contract.frozen_inputs`) must exist: without it nothing shows that
  SPEC.md, the goldens, KB_SELECTION.json and module_interfaces.yaml are the frozen ones. Every round
  records the file (``frozen_inputs`` in ``collection.json`` / ``quick_performance.json``); the file
  must still be the one every round recorded, so a frozen input edited by the shell and its record
  re-made afterwards is named with the first round that saw the old record. A round without the field
  was collected while the record was missing (or by a plugin older than the field).
- A manifest replacement (``freeze_cases.py freeze --replace``, ``docs/perf/manifest_history.json``)
  must precede every round: its ``replaced_at`` is not later than any round's ``created_at``, no
  round measured a replaced manifest, and the history's chain of hashes ends at the current manifest.

Every problem is ``stage5_contract_blocked`` (docs/stage5-check.md): the frozen contract changed
once evidence existed, which Stage 5 cannot repair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import frozen_inputs, protocol
from ..contract.freeze import HISTORY_DIR, HISTORY_NAME
from ..errors import PerftuneError

CATEGORY = "stage5_contract_blocked"
Problem = tuple[str, str]


def round_headers(op_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, header) of every formal round and quick screen, in creation order; unreadable ones are
    left to P3."""
    perf = op_dir / protocol.PERF_DIR
    files = [p / "collection.json" for p in sorted(perf.glob(f"{protocol.ROUND_PREFIX}*"))]
    files += [p / protocol.QUICK_NAME for p in sorted((perf / "quick").glob("quick_*"))]
    out = []
    for path in files:
        try:
            obj = fsio.read_json(path, what="round header")
        except PerftuneError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("created_at"), str):
            out.append((path.parent.name, obj))
    return sorted(out, key=lambda row: (row[1]["created_at"], row[0]))


def frozen_record_problems(op_dir: Path, headers: list[tuple[str, dict[str, Any]]]) -> list[Problem]:
    """FROZEN_INPUTS.json exists and is the file every round recorded."""
    path = op_dir / frozen_inputs.RECORD_NAME
    if not path.is_file():
        return [(CATEGORY, f"{frozen_inputs.RECORD_NAME} is missing: nothing shows the frozen inputs are the ones "
                 "of the freeze (restore the file freeze_cases.py freeze wrote, e.g. git checkout; never re-create it)")]
    current = fsio.sha256_file(path)
    unrecorded = [name for name, header in headers if not isinstance(header.get("frozen_inputs"), dict)]
    changed = [name for name, header in headers
               if isinstance(header.get("frozen_inputs"), dict) and header["frozen_inputs"].get("sha256") != current]
    out = []
    if unrecorded:
        out.append((CATEGORY, f"rounds {unrecorded} recorded no {frozen_inputs.RECORD_NAME}: it was missing when they "
                    "were collected, so the record present now was written after them"))
    if changed:
        recorded = dict(headers)[changed[0]]["frozen_inputs"]["sha256"]
        out.append((CATEGORY, f"{frozen_inputs.RECORD_NAME} was rewritten after {changed[0]} ({len(changed)} round(s) "
                    f"recorded {recorded[:12]}, now {current[:12]}): a frozen input changed and its record was re-made"))
    return out


def _entries(op_dir: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    perf = op_dir / protocol.PERF_DIR
    path = perf / HISTORY_NAME
    if not path.is_file():
        if (perf / HISTORY_DIR).is_dir():
            return [], [(CATEGORY, f"{protocol.PERF_DIR}/{HISTORY_DIR}/ exists but {HISTORY_NAME} is missing: a "
                         "manifest replacement is no longer recorded (restore it)")]
        return [], []
    try:
        entries = fsio.read_json(path, what="manifest history").get("entries")
        ok = isinstance(entries, list) and all(isinstance(e.get("replaced_at"), str)
                                               and isinstance(e.get("replaced", {}).get("sha256"), str)
                                               and isinstance(e.get("replaced_by_sha256"), str) for e in entries)
    except (PerftuneError, AttributeError):
        ok = False
    if not ok:
        return [], [(CATEGORY, f"{HISTORY_NAME} is malformed (entries with replaced, replaced_by_sha256, "
                     "replaced_at are needed); restore it")]
    return entries, []


def replacement_problems(op_dir: Path, manifest_sha: str, headers: list[tuple[str, dict[str, Any]]]) -> list[Problem]:
    """Every manifest replacement came before the first round, and the history ends at this manifest."""
    entries, out = _entries(op_dir)
    first = headers[0] if headers else None
    previous = None
    for number, entry in enumerate(entries, 1):
        label = f"manifest replacement {number} ({entry.get('reason')!r}, {entry['replaced_at']})"
        if first and entry["replaced_at"] > first[1]["created_at"]:
            out.append((CATEGORY, f"{label} came after the first round {first[0]} ({first[1]['created_at']}): the "
                        "contract is final once a round exists (freeze_cases.py refuses --replace then)"))
        if previous is not None and entry["replaced"]["sha256"] != previous:
            out.append((CATEGORY, f"{label} replaced a manifest the previous entry did not write: the history "
                        "is broken"))
        previous = entry["replaced_by_sha256"]
    if previous is not None and previous != manifest_sha:
        out.append((CATEGORY, f"the last manifest replacement wrote {previous[:12]} but the manifest is "
                    f"{manifest_sha[:12]}: it changed outside freeze_cases.py"))
    replaced = {e["replaced"]["sha256"] for e in entries} - {manifest_sha}   # a same-content re-freeze
    stale = [name for name, header in headers if (header.get("performance_cases") or {}).get("sha256") in replaced]
    if stale:
        out.append((CATEGORY, f"rounds {stale} measured a manifest that a later replacement archived: the "
                    "contract changed once evidence existed"))
    return out


def problems(op_dir: Path, manifest_record: dict[str, Any]) -> list[Problem]:
    """The P2 findings of this module (``manifest_record``: the current manifest's file record)."""
    headers = round_headers(op_dir)
    return frozen_record_problems(op_dir, headers) + replacement_problems(op_dir, manifest_record["sha256"], headers)
