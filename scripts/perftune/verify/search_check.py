"""P7.search: a declared search was measured as frozen and its choice follows the rule (issue 39).

For every ledger item with a ``search`` block: the record ``docs/perf/search/<item>/search.json``
holds the frozen block unchanged (sha256), exactly ``budget`` points with trials 0..budget-1, no
point measured twice, every point archived (``points/t_NNN/point.json`` equal to the record, no
archived point outside it, the archived code = the base version with the point's values), the
study storage (SQLite default) holds exactly those trials, the sampler's sequence recomputes from
its seed (:func:`tune.replay`), each measured objective is its archived quick compare's score, the
ranking and the best point are the rule's (:func:`search.ranked`), the code the item measured after
the search is the best point's, and a closed item's note cites the record. A dropped point, a point
re-measured until better or another point than the best is ``cheating``: the frozen search forbids
it; a search item closed without a record is ``performance_item_coverage_invalid``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..decide import ledger as ledger_mod, search, tune, tune_point
from ..errors import PerftuneError

CHEAT, COVERAGE = "cheating", "performance_item_coverage_invalid"


def problems(op_dir: str | Path) -> list[tuple[str, str]]:
    root = Path(op_dir)
    path = ledger_mod.ledger_path(root)
    if not path.is_file():
        return []
    try:
        led = ledger_mod.load_ledger(path)
    except PerftuneError:   # an unusable ledger is P7.ledger's finding (one owner), not this gate's input error
        return []
    out: list[tuple[str, str]] = []
    for item in search.searched_items(led):
        try:
            out += [(cat, f"{item['item_id']}: {msg}") for cat, msg in _item(root, item)]
        except (PerftuneError, OSError, KeyError, TypeError, ValueError) as exc:
            out.append((CHEAT if isinstance(exc, KeyError) else COVERAGE, f"{item['item_id']}: the search record "
                        f"does not load ({exc.line() if isinstance(exc, PerftuneError) else exc!r})"))
    return out


def _item(root: Path, item: dict[str, Any]) -> list[tuple[str, str]]:
    block, record = item["search"], search.load_record(root, item["item_id"])
    if record is None:
        return [(COVERAGE, f"no search record {search.record_rel(item['item_id'])}")] \
            if ledger_mod.is_terminal(item["status"]) else []
    if record.get("search") != block or search.block_sha(block) != block["sha256"]:
        return [(CHEAT, "the record's search block is not the frozen one of the ledger")]
    if record.get("status") != "complete":
        return [(COVERAGE, f"the search is {record.get('status')}, not complete")]
    points = record["points"]
    trials = [p["trial"] for p in points]
    found = []
    if sorted(trials) != list(range(block["budget"])):
        found.append((CHEAT, f"trials {sorted(trials)} are not 0..{block['budget'] - 1} each once "
                      "(a point missing or measured twice)"))
    measured = [fsio.dumps(p["values"]) for p in points if p["status"] != "repeat"]
    if len(set(measured)) != len(measured):
        found.append((CHEAT, "a point of the space was measured more than once"))
    found += _archive(root, item["item_id"], block, points)
    found += _storage(root, item["item_id"], record)
    told = [p["objective"] if p["status"] in ("measured", "repeat") else None for p in points]
    if [p["values"] for p in points] != tune.replay(block, told):
        found.append((CHEAT, f"the points are not the sequence the {block['sampler']} sampler asks from seed "
                      f"{block['seed']} with the told objectives"))
    ranked = search.ranked(points)
    best = (record.get("best") or {}).get("trial")
    if record.get("ranking") != [p["trial"] for p in ranked] or best != (ranked[0]["trial"] if ranked else None):
        found.append((CHEAT, f"the recorded best t_{best} / ranking is not the rule's (objective descending, "
                      f"ties by trial: {[p['trial'] for p in ranked][:5]})"))
    return found + _followed(root, item, ranked[0] if ranked else None)


def _archive(root: Path, item_id: str, block: dict[str, Any], points: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = []
    folder = tune_point.point_dir(root, item_id, 0).parent
    archived = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    wanted = sorted(f"t_{p['trial']:03d}" for p in points if p["status"] != "repeat")
    if archived != wanted:
        found.append((CHEAT, f"archived points {archived} are not the record's measured points {wanted}"))
    base = (root / protocol.PERF_DIR / "versions" / block["base"]["version"] / block["file"]).read_text(encoding="utf-8")
    for p in points:
        d = tune_point.point_dir(root, item_id, p["trial"])
        if p["status"] == "repeat" or not (d / tune_point.POINT_NAME).is_file():
            continue
        if fsio.read_json(d / tune_point.POINT_NAME, what="point.json") != p:
            found.append((CHEAT, f"t_{p['trial']:03d}: the record differs from its archived point.json"))
        if (d / block["file"]).read_text(encoding="utf-8") != search.apply(base, p["values"], block["file"]):
            found.append((CHEAT, f"t_{p['trial']:03d}: the archived code is not the base with the point's values"))
        if p["status"] == "measured":
            compare = fsio.read_json(d / "quick_compare.json", what="quick_compare.json")
            if compare["promotion"]["score"] != p["objective"]:
                found.append((CHEAT, f"t_{p['trial']:03d}: objective {p['objective']} is not its screen's score "
                              f"{compare['promotion']['score']}"))
    return found


def _storage(root: Path, item_id: str, record: dict[str, Any]) -> list[tuple[str, str]]:
    if record.get("storage") != "sqlite:study.db":
        return []   # a shared database: the archive and the replay stand for it
    optuna = tune._optuna()
    study = optuna.load_study(study_name=record["study"], storage=tune._storage(root, item_id, None))
    if len(study.trials) != len(record["points"]):
        return [(CHEAT, f"the study storage holds {len(study.trials)} trials, the record "
                 f"{len(record['points'])} (a point re-measured or dropped)")]
    return []


def _followed(root: Path, item: dict[str, Any], best: dict[str, Any] | None) -> list[tuple[str, str]]:
    found = []
    quick_ids = item["evidence"].get("quick") or []
    for folder in sorted((root / protocol.PERF_DIR / "quick").glob("quick_*")):
        q = fsio.read_json(folder / protocol.QUICK_NAME, what="quick_performance.json")
        if q.get("collection_id") in quick_ids and (best is None or q["executable_sha256"] != best["code_sha256"]):
            found.append((CHEAT, f"the item's screen {q['collection_id']} measured other code than the best point"))
    if ledger_mod.is_terminal(item["status"]):
        note = item["history"][-1].get("note") or ""
        if search.record_rel(item["item_id"]) not in note:
            found.append((COVERAGE, f"the close note does not cite {search.record_rel(item['item_id'])}"))
    return found
