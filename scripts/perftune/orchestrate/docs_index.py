"""Ranked keyword search over the docs corpus (:mod:`.docs_corpus`) on SQLite FTS5, with a cache.

Index (SQLite FTS5, ``unicode61`` tokenizer): one row per chunk with an indexed ``heading`` and
``body``; ``_``, ``.`` and other punctuation separate tokens, so ``make_tile_group`` is indexed as
``make tile group``. CJK runs are stored as their single characters plus adjacent pairs (``行切分``
-> ``行 切 分 行切 切分``) — a documented choice over the ``trigram`` tokenizer, which matches no
term shorter than three characters while most Chinese technical words have two.

Query: :func:`~.docs_corpus.tokenize` the query; each distinct token becomes an FTS5 phrase —
``make_tile_group`` the phrase ``"make tile group"`` (the whole name, adjacent) and ``make``,
``tile``, ``group`` on their own — joined with ``OR``. Score: FTS5 ``bm25()`` (k1 = 1.2, b = 0.75,
idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6) with column weights heading 3, body 1, shown
negated (higher is better). Ties (equal to 1e-9) are ordered by root order, file path, then line.
The snippet is the chunk line sharing the most query tokens (FTS5 ``snippet()`` would show the
stored, CJK-segmented text and no line number).

Cache (:func:`open_index`): one SQLite file per root list in ``$PERFTUNE_CACHE_DIR`` (default
``$XDG_CACHE_HOME/pypto-perftune/docs-index`` or ``~/.cache/pypto-perftune/docs-index``), never
inside the plugin root. Each run refreshes it by file: unchanged size and mtime keep the rows, a
changed file is re-hashed (sha256) and re-chunked only when its hash changed, a vanished file is
dropped. An unwritable or unreadable cache falls back to an in-memory index (reported).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import fsio
from ..errors import ContractError, EnvError
from .docs_corpus import (DEVKIT_ENV, PLUGIN_ROOT, Chunk, Hit, Root, check_cache, chunk_markdown,
                          chunk_python, default_roots, explicit_roots, file_chunks, files_of, load_chunks,
                          tokenize)

__all__ = ["DEVKIT_ENV", "Chunk", "Hit", "Index", "Root", "cache_dir", "check_cache", "chunk_markdown",
           "chunk_python", "default_roots", "explicit_roots", "load_chunks", "match_expression", "open_index",
           "segment", "tokenize"]

HEADING_WEIGHT, BODY_WEIGHT = 3.0, 1.0
SNIPPET_CHARS = 200
CACHE_ENV = "PERFTUNE_CACHE_DIR"
CACHE_VERSION = 2
_CJK = re.compile(r"[\u3400-\u9fff]+")
_SCHEMA = (
    "CREATE VIRTUAL TABLE chunks USING fts5(heading, body, root UNINDEXED, file UNINDEXED, "
    "path UNINDEXED, line UNINDEXED, title UNINDEXED, raw UNINDEXED, tokenize = 'unicode61')",
    "CREATE TABLE files(path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, sha256 TEXT, "
    "first_row INTEGER, rows INTEGER)",
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
)


def segment(text: str) -> str:
    """Text as stored in the FTS5 table: CJK runs become characters plus adjacent pairs."""
    return _CJK.sub(lambda m: " " + " ".join([*m.group(), *(m.group()[i:i + 2] for i in range(len(m.group()) - 1))]) + " ",
                    text)


def match_expression(query: str) -> str:
    """The FTS5 MATCH text for ``query``: each distinct token a quoted phrase, joined with OR."""
    phrases = [" ".join(t.split("_")) if "_" in t else t for t in dict.fromkeys(tokenize(query))]
    return " OR ".join(f'"{p}"' for p in dict.fromkeys(phrases))


class Index:
    """An FTS5 index of chunks: in memory from ``chunks``, or an opened cache connection."""

    def __init__(self, chunks: Sequence[Chunk] = (), *, db: sqlite3.Connection | None = None) -> None:
        self.db = db or _connect(":memory:")
        if db is None:
            _insert(self.db, chunks)

    @property
    def size(self) -> int:
        return self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def scores(self, query: str) -> np.ndarray:
        """Score of every row in rowid order (0 where no query token occurs)."""
        scores = np.zeros(self.size)
        expr = match_expression(query)
        if expr:
            sql = f"SELECT rowid, -bm25(chunks, {HEADING_WEIGHT}, {BODY_WEIGHT}) FROM chunks WHERE chunks MATCH ?"
            for rowid, score in self.db.execute(sql, (expr,)):
                scores[rowid - 1] = score
        return scores

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """The ``limit`` best chunks, best first, deterministic tie order."""
        expr = match_expression(query)
        if not expr:
            return []
        top = self.db.execute(
            f"SELECT rowid, -bm25(chunks, {HEADING_WEIGHT}, {BODY_WEIGHT}) AS s FROM chunks WHERE chunks MATCH ? "
            "ORDER BY round(s, 9) DESC, root, file, line LIMIT ?", (expr, limit)).fetchall()
        terms = set(tokenize(query))   # text columns are read for the top rows only (the sort stays narrow)
        text = "SELECT title, file, path, line, raw FROM chunks WHERE rowid = ?"
        return [_hit(*self.db.execute(text, (rowid,)).fetchone(), score, terms) for rowid, score in top]


def _hit(heading: str, file: str, path: str, line: int, raw: str, score: float, terms: set[str]) -> Hit:
    lines, line = raw.split("\n") if raw else [], int(line)
    best, best_count = 0, -1
    for offset, text in enumerate(lines):
        count = len(terms & set(tokenize(text)))
        if count > best_count and text.strip():
            best, best_count = offset, count
    text = " ".join(lines[best].split()) if lines else ""
    snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 3] + "..."
    return Hit(file, path, heading, line, snippet, line + best, round(score, 6))


def _connect(target: str | Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(target), timeout=60, isolation_level=None)
    if not db.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone():
        db.execute("BEGIN IMMEDIATE")
        if not db.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone():
            try:
                for statement in _SCHEMA:
                    db.execute(statement)
            except sqlite3.OperationalError as exc:
                if "fts5" not in str(exc):
                    raise
                raise EnvError("sqlite3", "fts5", f"SQLite {sqlite3.sqlite_version} has no FTS5 module",
                               "use a Python whose sqlite3 is built with FTS5 (python.org and distro builds are)") from exc
            db.execute("INSERT INTO meta VALUES ('version', ?)", (str(CACHE_VERSION),))
        db.execute("COMMIT")
    return db


def _insert(db: sqlite3.Connection, chunks: Iterable[Chunk]) -> tuple[int, int]:
    """Append ``chunks``; returns (first rowid, count)."""
    first = (db.execute("SELECT max(rowid) FROM chunks").fetchone()[0] or 0) + 1
    rows = [(segment(c.heading), segment("\n".join(c.lines)), c.root, c.file, c.path, c.line, c.heading,
             "\n".join(c.lines)) for c in chunks]
    db.executemany("INSERT INTO chunks(rowid, heading, body, root, file, path, line, title, raw) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(first + i, *row) for i, row in enumerate(rows)])
    return first, len(rows)


def cache_dir(plugin_root: Path = PLUGIN_ROOT) -> Path:
    """Where index files live: ``$PERFTUNE_CACHE_DIR`` or the user cache; never inside the plugin."""
    if os.environ.get(CACHE_ENV):
        folder = Path(os.environ[CACHE_ENV])
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = base / "pypto-perftune" / "docs-index"
    resolved = folder.resolve()
    if resolved == plugin_root.resolve() or plugin_root.resolve() in resolved.parents:
        raise ContractError(folder, CACHE_ENV, "the index cache is inside the plugin root",
                            "point PERFTUNE_CACHE_DIR outside the plugin (the plugin folder stays read-only)")
    return folder


def open_index(roots: Sequence[Root], folder: Path | None = None) -> tuple[Index, dict[str, Any]]:
    """The cached index of ``roots``, refreshed by file (see the module docstring), and what changed."""
    folder = cache_dir() if folder is None else folder
    key = json.dumps([CACHE_VERSION, [[str(r.path.resolve()), str(r.base.resolve()), r.prefix] for r in roots]])
    target = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.sqlite"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        db = _connect(target)
        stats = _refresh(db, roots)
        stats["cache"] = str(target)
    except (OSError, sqlite3.DatabaseError) as exc:
        db = _connect(":memory:")
        stats = _refresh(db, roots)
        stats["cache"] = None
        stats["cache_error"] = f"{target}: {exc}"
    return Index(db=db), stats


def _refresh(db: sqlite3.Connection, roots: Sequence[Root]) -> dict[str, Any]:
    stats = {"files": 0, "reindexed": 0, "removed": 0}
    db.execute("BEGIN IMMEDIATE")
    known = {row[0]: row[1:] for row in db.execute("SELECT path, size, mtime_ns, sha256, first_row, rows FROM files")}
    seen = set()
    for index, root in enumerate(roots):
        for path in files_of(root):
            resolved = str(path.resolve())
            seen.add(resolved)
            stats["files"] += 1
            st = path.stat()
            old = known.get(resolved)
            if old and old[:2] == (st.st_size, st.st_mtime_ns):
                continue
            digest = fsio.sha256_file(path)
            if old and old[2] == digest:
                db.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (st.st_size, st.st_mtime_ns, resolved))
                continue
            if old:
                db.execute("DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (old[3], old[3] + old[4] - 1))
            first, count = _insert(db, file_chunks(index, root, path))
            db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                       (resolved, st.st_size, st.st_mtime_ns, digest, first, count))
            stats["reindexed"] += 1
    for resolved, old in known.items():
        if resolved not in seen:
            db.execute("DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (old[3], old[3] + old[4] - 1))
            db.execute("DELETE FROM files WHERE path = ?", (resolved,))
            stats["removed"] += 1
    db.execute("COMMIT")
    return stats
