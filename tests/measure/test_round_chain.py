"""The rounds' hash chain (issue 28 item 5): each completed round seals the round below it, so a
deleted, replaced or re-sealed round, or a link stripped from collection.json, is a finding; rounds
collected before the chain read as unchained."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from perftune.measure import round_chain


def seal(text: str) -> dict:
    return {"algorithm": "test", "n_files": 1, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def write(perf: Path, number: int, *, chained: bool = True, status: str = "complete", code: str = "a" * 64,
          cid: str | None = None) -> Path:
    """A round folder whose collection.json is written the way collect.py's _finish writes it."""
    folder = perf / f"round_{number:03d}"
    folder.mkdir(parents=True)
    obj = {"collection_id": cid or f"compare_{number}", "status": status, "mode": "compare",
           "executable_sha256": code}
    if status == "complete":
        obj["evidence_seal"] = seal(f"{number}{cid}")
        if chained:
            obj["previous_seal"] = round_chain.link(folder)
    (folder / "collection.json").write_text(json.dumps(obj))
    return folder


def history(op: Path, n: int = 4, **kw) -> Path:
    perf = op / "docs/perf"
    for number in range(1, n + 1):
        write(perf, number, **kw)
    return perf


def test_an_intact_chain_has_no_problem_and_links_commit_to_the_seals_below(tmp_path):
    perf = history(tmp_path)
    assert round_chain.problems(tmp_path) == ([], {"rounds": 4, "chained": 4, "unchained": []})
    first = json.loads((perf / "round_001/collection.json").read_text())["previous_seal"]
    second = json.loads((perf / "round_002/collection.json").read_text())["previous_seal"]
    assert first == {"round": None}
    assert second["round"] == "round_001" and second["sha256"] == seal("1None")["sha256"]


def test_a_deleted_round_in_the_middle_is_a_gap(tmp_path):
    perf = history(tmp_path)
    (perf / "round_002/collection.json").unlink()
    (perf / "round_002").rmdir()
    found, _ = round_chain.problems(tmp_path)
    assert any("['round_002'] are missing" in p for p in found) and any("no longer exists" in p for p in found)


def test_a_replaced_or_re_sealed_round_breaks_the_next_link(tmp_path):
    perf = history(tmp_path)
    path = perf / "round_002/collection.json"
    obj = json.loads(path.read_text())
    obj["evidence_seal"] = seal("another collection")
    path.write_text(json.dumps(obj))
    found, _ = round_chain.problems(tmp_path)
    assert len(found) == 1 and "round_003 sealed round_002" in found[0]
    obj["collection_id"] = "compare_other"
    path.write_text(json.dumps(obj))
    assert "the round was replaced" in round_chain.problems(tmp_path)[0][0]


def test_a_link_stripped_after_a_chained_round_is_found(tmp_path):
    perf = history(tmp_path)
    path = perf / "round_004/collection.json"
    obj = json.loads(path.read_text())
    del obj["previous_seal"]
    path.write_text(json.dumps(obj))
    found, note = round_chain.problems(tmp_path)
    assert note["unchained"] == ["round_004"] and any("its link was removed" in p for p in found)


def test_rounds_from_before_the_chain_read_as_unchained_and_a_failed_round_is_a_link(tmp_path):
    perf = history(tmp_path, 2, chained=False)
    write(perf, 3, status="failed")
    write(perf, 4)
    found, note = round_chain.problems(tmp_path)
    assert found == [] and note == {"rounds": 4, "chained": 1, "unchained": ["round_001", "round_002"]}


def test_the_final_round_must_be_the_last_formal_round_of_its_code(tmp_path):
    perf = history(tmp_path)
    final = json.loads((perf / "round_002/collection.json").read_text())
    assert "['round_003', 'round_004'] measured it later" in round_chain.last_round_problems(
        tmp_path, final, perf / "round_002")[0]
    last = json.loads((perf / "round_004/collection.json").read_text())
    assert round_chain.last_round_problems(tmp_path, last, perf / "round_004") == []
    write(perf, 5, code="b" * 64)   # a later round of other code does not count
    assert round_chain.last_round_problems(tmp_path, last, perf / "round_004") == []
