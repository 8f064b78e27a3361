"""Ranked keyword search (Okapi BM25) over the plugin references and the local PyPTO docs cache.

Corpus (default roots, in this order): the plugin's ``references/`` and ``skills/*/references/``,
then, when ``$PYPTO_DEVKIT_DIR`` is set, its ``docs/pypto_pro/api/``, ``docs/pypto_pro/tutorials/``,
``docs/guide/programming_guide/pro/``, ``docs/guide/quick_start/pro/``,
``docs/guide/introduction.md`` and ``pro_ops/`` (official samples). Only ``.md`` and ``.py`` files,
no symlinks, none above 2 MB.

Chunks: a markdown file is cut at every heading outside fenced code (text before the first heading
is a chunk named after the file); a Python file at every top-level ``def``/``class``. A chunk's
text is its heading (counted twice: headings name the topic) plus its body.

Tokens: lower-cased runs of ``[a-z0-9_]``; an identifier with ``_`` also yields its parts
(``make_tile_group`` -> ``make_tile_group``, ``make``, ``tile``, ``group``), so both the exact API
name and its words match; CJK text yields single characters and adjacent pairs.

Score: BM25 with k1 = 1.2, b = 0.75 and idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (never
negative), summed over the distinct query tokens. Ties (scores equal to 1e-9) are ordered by root
order, file path, then line, so the output is deterministic.

Cache readiness (:func:`check_cache`, ``docs_search.py --check``): READY when
``$PYPTO_DEVKIT_DIR`` is a directory holding at least one ``.md`` under ``docs/pypto_pro/api/``, at
least one ``.md`` in one of the guide folders, and at least one ``.py`` under ``pro_ops/``;
otherwise NEED_PROVISION with the missing parts. Provisioning itself belongs to the docs skill.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ContractError

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
DEVKIT_ENV = "PYPTO_DEVKIT_DIR"
DEVKIT_API = "docs/pypto_pro/api"
DEVKIT_GUIDES = ("docs/pypto_pro/tutorials", "docs/guide/programming_guide/pro", "docs/guide/quick_start/pro")
DEVKIT_SAMPLES = "pro_ops"
DEVKIT_PARTS = (DEVKIT_API, *DEVKIT_GUIDES, "docs/guide/introduction.md", DEVKIT_SAMPLES)
EXTENSIONS = (".md", ".py")
MAX_FILE_BYTES = 2 * 1024 * 1024
K1, B = 1.2, 0.75
HEADING_WEIGHT = 2
SNIPPET_CHARS = 200

_WORD = re.compile(r"[a-z0-9_]+|[\u3400-\u9fff]+")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PY_DEF = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Root:
    """A folder (or file) to index; files are shown as ``prefix + path relative to base``."""

    path: Path
    base: Path
    prefix: str = ""


@dataclass(frozen=True)
class Chunk:
    root: int
    file: str
    path: str
    heading: str
    line: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Hit:
    file: str
    path: str
    heading: str
    line: int
    snippet: str
    snippet_line: int
    score: float


def tokenize(text: str) -> list[str]:
    """Search tokens of ``text`` (see the module docstring)."""
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word[0] >= "\u3400":
            tokens.extend(word)
            tokens.extend(word[i:i + 2] for i in range(len(word) - 1))
            continue
        word = word.strip("_")
        if word:
            tokens.append(word)
            if "_" in word:
                tokens.extend(part for part in word.split("_") if part)
    return tokens


def chunk_markdown(text: str, name: str) -> list[tuple[str, int, list[str]]]:
    """``(heading, first line, lines)`` per heading section; fenced code never starts a section."""
    sections: list[tuple[str, int, list[str]]] = [(name, 1, [])]
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            sections.append((match.group(2).strip(), number, [line]))
        else:
            sections[-1][2].append(line)
    return [s for s in sections if any(l.strip() for l in s[2]) or s[1] > 1]


def chunk_python(text: str, name: str) -> list[tuple[str, int, list[str]]]:
    """``(heading, first line, lines)`` per top-level def/class; the module head is one chunk."""
    sections: list[tuple[str, int, list[str]]] = [(name, 1, [])]
    for number, line in enumerate(text.splitlines(), start=1):
        match = _PY_DEF.match(line)
        if match:
            kind = "class" if line.startswith("class") else "def"
            sections.append((f"{kind} {match.group(1)}", number, [line]))
        else:
            sections[-1][2].append(line)
    return [s for s in sections if any(l.strip() for l in s[2])]


def default_roots(plugin_root: Path = PLUGIN_ROOT, devkit_dir: str | None = None) -> list[Root]:
    """Plugin references first, then the parts of the devkit cache that exist."""
    roots = [Root(plugin_root / "references", plugin_root)]
    roots += [Root(p, plugin_root) for p in sorted(plugin_root.glob("skills/*/references"))]
    if devkit_dir:
        base = Path(devkit_dir)
        roots += [Root(base / part, base, f"${DEVKIT_ENV}/") for part in DEVKIT_PARTS]
    return [r for r in roots if r.path.exists()]


def explicit_roots(paths: Sequence[str]) -> list[Root]:
    """User-given roots (``--root``); each must be an existing directory."""
    roots = []
    for text in paths:
        path = Path(text)
        if not path.is_dir():
            raise ContractError(text, "--root", "not a directory", "pass folders that hold .md/.py files")
        roots.append(Root(path, path))
    return roots


def _files(root: Root) -> Iterable[Path]:
    if root.path.is_file():
        yield root.path
        return
    for folder, dirs, names in os.walk(root.path):  # symlinked folders are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(folder) / name
            if path.suffix in EXTENSIONS and not path.is_symlink() and path.stat().st_size <= MAX_FILE_BYTES:
                yield path


def load_chunks(roots: Sequence[Root]) -> list[Chunk]:
    """Every chunk of every file under ``roots``, in root, file and line order."""
    chunks = []
    for index, root in enumerate(roots):
        for path in _files(root):
            text = path.read_text(encoding="utf-8", errors="replace")
            shown = root.prefix + path.relative_to(root.base).as_posix()
            cut = chunk_python if path.suffix == ".py" else chunk_markdown
            for heading, line, lines in cut(text, path.name):
                chunks.append(Chunk(index, shown, str(path.resolve()), heading, line, tuple(lines)))
    return chunks


class Index:
    """A BM25 index over chunks (built once, searched many times)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for i, chunk in enumerate(self.chunks):
            tokens = tokenize(chunk.heading) * HEADING_WEIGHT + tokenize("\n".join(chunk.lines))
            lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                postings[term].append((i, count))
        self.doc_len = np.asarray(lengths, dtype=float)
        self.avgdl = float(self.doc_len.mean()) if lengths and self.doc_len.mean() > 0 else 1.0
        n = len(self.chunks)
        self.postings = {t: (np.fromiter((i for i, _ in p), dtype=np.int64, count=len(p)),
                             np.fromiter((c for _, c in p), dtype=float, count=len(p))) for t, p in postings.items()}
        self.idf = {t: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for ``query`` (0 where no query token occurs)."""
        scores = np.zeros(len(self.chunks))
        norm = K1 * (1.0 - B + B * self.doc_len / self.avgdl)
        for term in dict.fromkeys(tokenize(query)):
            if term in self.postings:
                ids, tf = self.postings[term]
                scores[ids] += self.idf[term] * tf * (K1 + 1.0) / (tf + norm[ids])
        return scores

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """The ``limit`` best chunks, best first, deterministic tie order."""
        scores = self.scores(query)
        found = [int(i) for i in np.nonzero(scores > 0)[0]]
        key = lambda i: (-round(float(scores[i]), 9), self.chunks[i].root, self.chunks[i].file, self.chunks[i].line)  # noqa: E731
        terms = set(tokenize(query))
        return [self._hit(self.chunks[i], float(scores[i]), terms) for i in sorted(found, key=key)[:limit]]

    @staticmethod
    def _hit(chunk: Chunk, score: float, terms: set[str]) -> Hit:
        best, best_count = 0, -1
        for offset, line in enumerate(chunk.lines):
            count = len(terms & set(tokenize(line)))
            if count > best_count and line.strip():
                best, best_count = offset, count
        text = " ".join(chunk.lines[best].split()) if chunk.lines else ""
        snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 3] + "..."
        return Hit(chunk.file, chunk.path, chunk.heading, chunk.line, snippet, chunk.line + best, round(score, 6))


def _has(folder: Path, suffix: str) -> bool:
    return folder.is_dir() and any(p.suffix == suffix and p.is_file() for p in folder.rglob(f"*{suffix}"))


def check_cache(devkit_dir: str | None) -> dict[str, Any]:
    """READY / NEED_PROVISION for the devkit docs cache, with the missing parts."""
    if not devkit_dir:
        return {"dir": "", "status": "NEED_PROVISION", "missing": [f"${DEVKIT_ENV} is not set"]}
    base = Path(devkit_dir)
    if not base.is_dir():
        return {"dir": str(base), "status": "NEED_PROVISION", "missing": [f"{base} is not a directory"]}
    missing = []
    if not _has(base / DEVKIT_API, ".md"):
        missing.append(f"{DEVKIT_API}/*.md")
    if not any(_has(base / g, ".md") for g in DEVKIT_GUIDES):
        missing.append("a guide folder (" + " | ".join(f"{g}/*.md" for g in DEVKIT_GUIDES) + ")")
    if not _has(base / DEVKIT_SAMPLES, ".py"):
        missing.append(f"{DEVKIT_SAMPLES}/*.py")
    return {"dir": str(base), "status": "NEED_PROVISION" if missing else "READY", "missing": missing}
