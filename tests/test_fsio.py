"""fsio: atomic writes, file records, safe paths, locks."""

import json
import multiprocessing
import os

import pytest

from perftune import fsio
from perftune.errors import ContractError


def test_write_json_is_canonical(tmp_path):
    path = fsio.write_json(tmp_path / "a.json", {"b": 1, "a": [1, 2]})
    assert path.read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_write_json_refuses_nan(tmp_path):
    with pytest.raises(ContractError, match="non-finite"):
        fsio.write_json(tmp_path / "a.json", {"x": float("nan")})
    assert not list(tmp_path.iterdir())


def test_no_overwrite_keeps_existing(tmp_path):
    fsio.write_json(tmp_path / "a.json", {"v": 1})
    with pytest.raises(ContractError, match="never overwritten"):
        fsio.write_json(tmp_path / "a.json", {"v": 2}, overwrite=False)
    assert json.loads((tmp_path / "a.json").read_text()) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


@pytest.mark.parametrize("content, needle", [
    (b"", "empty"), (b"{", "malformed JSON"), (b"\xff\xfe", "not UTF-8"), (b'{"a": NaN}', "malformed"),
])
def test_read_json_errors_are_contract_errors(tmp_path, content, needle):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(ContractError, match=needle):
        fsio.read_json(path)


def test_read_json_missing_and_symlink(tmp_path):
    with pytest.raises(ContractError, match="missing"):
        fsio.read_json(tmp_path / "nope.json")
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(ContractError, match="symlink"):
        fsio.read_json(tmp_path / "link.json")


def test_file_record_relative_and_match(tmp_path):
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "f.txt"
    target.write_bytes(b"abc")
    record = fsio.file_record(target, tmp_path)
    assert record == {"path": "d/f.txt", "size_bytes": 3,
                      "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
    assert fsio.record_matches(record, tmp_path)
    target.write_bytes(b"abd")
    assert not fsio.record_matches(record, tmp_path)


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../x", "a\x00b", ""])
def test_safe_join_refuses_escapes(tmp_path, bad):
    with pytest.raises(ContractError):
        fsio.safe_join(tmp_path, bad)


def test_safe_join_refuses_symlinks_inside(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert fsio.safe_join(tmp_path, "real/x") == (tmp_path / "real" / "x").resolve()
    with pytest.raises(ContractError, match="symlink"):
        fsio.safe_join(tmp_path, "link/x")


def _bump(path, n):
    for _ in range(n):
        with fsio.file_lock(path):
            value = int(path.read_text()) if path.exists() else 0
            fsio.write_text(path, str(value + 1))


def test_file_lock_serialises_processes(tmp_path):
    counter = tmp_path / "counter"
    procs = [multiprocessing.Process(target=_bump, args=(counter, 50)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert int(counter.read_text()) == 200
    assert os.path.exists(f"{counter}.lock")


def test_a_batch_replaces_the_per_file_fsyncs_by_one_sync_at_its_end(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync"))
    monkeypatch.setattr(os, "sync", lambda: calls.append("sync"))
    fsio.write_text(tmp_path / "alone.txt", "a")
    assert calls == ["fsync", "fsync"]            # the file, then its folder
    calls.clear()
    with fsio.batched_durability():
        with fsio.batched_durability():           # nested: still one sync, at the outermost end
            for number in range(50):
                fsio.write_text(tmp_path / "raw" / f"r{number}.csv", str(number))
        assert calls == []
    assert calls == ["sync"]
    assert [(tmp_path / "raw" / f"r{n}.csv").read_text() for n in (0, 49)] == ["0", "49"]
    calls.clear()
    with pytest.raises(RuntimeError), fsio.batched_durability():
        fsio.write_text(tmp_path / "half.csv", "x")
        raise RuntimeError("the collector stops")
    assert calls == ["sync"]                        # what was written is made durable before the error leaves
    fsio.write_text(tmp_path / "commit.json", "{}")
    assert calls == ["sync", "fsync", "fsync"]      # the commit record after the batch is fsynced as before


def test_a_batch_belongs_to_its_thread(tmp_path, monkeypatch):
    import threading
    calls = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(threading.current_thread().name))
    monkeypatch.setattr(os, "sync", lambda: None)
    with fsio.batched_durability():
        worker = threading.Thread(target=fsio.write_text, args=(tmp_path / "other.txt", "b"), name="lane")
        worker.start()
        worker.join()
    assert calls == ["lane", "lane"]
