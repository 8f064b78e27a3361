"""The docs-search corpus: which folders, which files, how they are cut into chunks, and tokens.

Default roots, in this order: the plugin's ``references/`` and ``skills/*/references/``, then, when
``$PYPTO_DEVKIT_DIR`` is set, its ``docs/pypto_pro/api/``, ``docs/pypto_pro/tutorials/``,
``docs/guide/programming_guide/pro/``, ``docs/guide/quick_start/pro/``,
``docs/guide/introduction.md`` and ``pro_ops/`` (official samples). Only ``.md`` and ``.py`` files,
no symlinks, none above 2 MB.

Chunks: a markdown file is cut at every heading outside fenced code (text before the first heading
is a chunk named after the file); a Python file at every top-level ``def``/``class``.

Tokens (:func:`tokenize`, used to build queries and pick snippet lines): lower-cased runs of
``[a-z0-9_]``; an identifier with ``_`` also yields its parts (``make_tile_group`` ->
``make_tile_group``, ``make``, ``tile``, ``group``); CJK text yields single characters and
adjacent pairs.

Cache readiness (:func:`check_cache`, ``docs_search.py --check``): READY when
``$PYPTO_DEVKIT_DIR`` is a directory holding at least one ``.md`` under ``docs/pypto_pro/api/``, at
least one ``.md`` in one of the guide folders, and at least one ``.py`` under ``pro_ops/``;
otherwise NEED_PROVISION with the missing parts. Provisioning itself belongs to the docs skill.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ContractError

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
DEVKIT_ENV = "PYPTO_DEVKIT_DIR"
DEVKIT_API = "docs/pypto_pro/api"
DEVKIT_GUIDES = ("docs/pypto_pro/tutorials", "docs/guide/programming_guide/pro", "docs/guide/quick_start/pro")
DEVKIT_SAMPLES = "pro_ops"
DEVKIT_PARTS = (DEVKIT_API, *DEVKIT_GUIDES, "docs/guide/introduction.md", DEVKIT_SAMPLES)
EXTENSIONS = (".md", ".py")
MAX_FILE_BYTES = 2 * 1024 * 1024

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


def files_of(root: Root) -> Iterable[Path]:
    if root.path.is_file():
        yield root.path
        return
    for folder, dirs, names in os.walk(root.path):  # symlinked folders are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(folder) / name
            if path.suffix in EXTENSIONS and not path.is_symlink() and path.stat().st_size <= MAX_FILE_BYTES:
                yield path


def file_chunks(index: int, root: Root, path: Path) -> list[Chunk]:
    text = path.read_text(encoding="utf-8", errors="replace")
    shown = root.prefix + path.relative_to(root.base).as_posix()
    cut = chunk_python if path.suffix == ".py" else chunk_markdown
    return [Chunk(index, shown, str(path.resolve()), heading, line, tuple(lines))
            for heading, line, lines in cut(text, path.name)]


def load_chunks(roots: Sequence[Root]) -> list[Chunk]:
    """Every chunk of every file under ``roots``, in root, file and line order."""
    return [c for index, root in enumerate(roots) for path in files_of(root) for c in file_chunks(index, root, path)]


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
