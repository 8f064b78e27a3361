"""docs_index.open_index: the FTS5 index persists outside the plugin and is refreshed by file hash."""

import os
import sqlite3

import pytest

from conftest import ROOT, assert_one_line_error, run_script
from perftune.errors import ContractError
from perftune.orchestrate import docs_index


def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\nmake_tile_group rotates slots\n")
    (root / "b.md").write_text("# Beta\nvector function exp\n")
    return docs_index.explicit_roots([str(root)]), root


def test_refresh_reindexes_only_changed_files_and_drops_vanished_ones(tmp_path):
    roots, root = corpus(tmp_path)
    cache = tmp_path / "cache"
    index, stats = docs_index.open_index(roots, cache)
    assert (stats["files"], stats["reindexed"], stats["removed"]) == (2, 2, 0) and stats["cache"].startswith(str(cache))
    assert [h.heading for h in index.search("make_tile_group")] == ["Alpha"]
    _, stats = docs_index.open_index(roots, cache)
    assert (stats["reindexed"], stats["removed"]) == (0, 0)
    (root / "a.md").write_text("# Alpha\nsomething else entirely\n")
    os.utime(root / "b.md", ns=(1, 1))                      # new mtime, same bytes: hash says unchanged
    index, stats = docs_index.open_index(roots, cache)
    assert (stats["reindexed"], stats["removed"]) == (1, 0)
    assert index.search("make_tile_group") == [] and index.size == 2
    (root / "b.md").unlink()
    index, stats = docs_index.open_index(roots, cache)
    assert (stats["files"], stats["removed"], index.size) == (1, 1, 1)


def test_cache_inside_the_plugin_is_refused_and_a_broken_cache_falls_back_to_memory(tmp_path, monkeypatch):
    monkeypatch.setenv(docs_index.CACHE_ENV, str(ROOT / "references" / ".cache"))
    with pytest.raises(ContractError, match="inside the plugin root"):
        docs_index.cache_dir()
    proc = run_script("docs_search.py", "tile", env={**os.environ, docs_index.CACHE_ENV: str(ROOT / "x")})
    assert_one_line_error(proc, 2, "inside the plugin root")
    roots, _ = corpus(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder belongs")
    index, stats = docs_index.open_index(roots, blocker)
    assert stats["cache"] is None and "not-a-folder" in stats["cache_error"] and index.size == 2
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    index, stats = docs_index.open_index(roots, garbage)
    target = stats["cache"]
    with open(target, "wb") as handle:
        handle.write(b"not a database" * 100)
    index, stats = docs_index.open_index(roots, garbage)
    assert stats["cache"] is None and index.size == 2
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(target).execute("SELECT 1 FROM files").fetchall()
