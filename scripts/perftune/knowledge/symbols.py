"""API symbols of PyPTO-Pro: extracted from public samples, and found in our cards and templates.

A symbol is a dotted name rooted at ``pl`` (``import pypto_pro.language as pl``) or ``vf`` (the
namespace that exists inside a ``@pl.vector_function`` body), e.g. ``pl.make_tile_group``,
``pl.MemorySpace.Vec``, ``vf.exp_sub``; plus the TileGroup methods ``TileGroup.next``,
``TileGroup.current`` and ``TileGroup.previous`` (a ``.next()``-style call in code that creates a
tile group). Code is read from ``.py`` files and from the fenced ``python`` blocks of ``.md`` files.

Keywords: for every ``pl.*``/``vf.*`` call in a code block that parses as Python (:mod:`ast`; a
markdown fence is parsed on its own, fragments that do not parse are skipped) the keyword argument
names are recorded, so ``pl.make_tile_group(type=..., addrs=..., mutex_ids=...)`` is known and
``pl.make_tile_group(shape, slots=2)`` is not.

:func:`extract_tree` builds the committed symbol list (``references/api-symbols.json``) from a
checkout of the public samples; :func:`symbols_in` finds the symbols a card or template uses. Both
are pure over text except :func:`extract_tree`, which reads the files it is given.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

_SYMBOL = re.compile(r"(?<![\w.])((?:pl|vf)(?:\.[A-Za-z_]\w*)+)")
_GROUP_METHOD = re.compile(r"\.(next|current|previous)\(\s*\)")
_FENCE = re.compile(r"^```(\w*)\s*$")
SEEN_LIMIT = 3


def blocks_of(text: str, suffix: str) -> list[str]:
    """Code blocks of a file: all of a ``.py``/``.tmpl`` file, each ``python`` fence of markdown."""
    if suffix != ".md":
        return [text]
    blocks: list[str] = []
    current: list[str] | None = None
    keep = False
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            fence = _FENCE.match(stripped)
            if fence:
                current, keep = [], fence.group(1) in ("python", "py")
            continue
        if stripped.startswith("```"):
            if keep:
                blocks.append("\n".join(current))
            current = None
            continue
        current.append(line)
    return blocks


def code_of(text: str, suffix: str) -> str:
    """The code of a file: all of a ``.py``/``.tmpl`` file, the ``python`` fences of markdown."""
    return "\n".join(blocks_of(text, suffix))


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in ("pl", "vf"):
        return ".".join([node.id, *reversed(parts)])
    return None


def calls_in(code: str) -> dict[str, set[str]] | None:
    """``pl.*``/``vf.*`` callee -> keyword names used; ``None`` when ``code`` does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := _dotted(node.func)):
            found.setdefault(name, set()).update(k.arg for k in node.keywords if k.arg)
    return found


def symbols_in(code: str) -> set[str]:
    """Every ``pl.*``/``vf.*`` dotted name and TileGroup method used in ``code`` (comments ignored)."""
    lines = [line.split("#", 1)[0] for line in code.splitlines()]
    body = "\n".join(lines)
    found = set(_SYMBOL.findall(body))
    if "make_tile_group" in body:
        found.update(f"TileGroup.{m}" for m in _GROUP_METHOD.findall(body))
    return found


def extract_tree(root: Path, globs: tuple[str, ...], *, repository: str, commit: str) -> dict[str, Any]:
    """The symbol list of the files under ``root`` matching ``globs``: where each symbol was seen and
    the keyword names seen with it."""
    seen: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    keywords: dict[str, set[str]] = {}
    files = sorted({p for g in globs for p in root.glob(g) if p.is_file()})
    for path in files:
        rel = path.relative_to(root).as_posix()
        blocks = blocks_of(path.read_text(encoding="utf-8", errors="replace"), path.suffix)
        for sym in sorted(symbols_in("\n".join(blocks))):
            counts[sym] = counts.get(sym, 0) + 1
            if len(seen.setdefault(sym, [])) < SEEN_LIMIT:
                seen[sym].append(rel)
        for block in blocks:
            for sym, names in (calls_in(block) or {}).items():
                keywords.setdefault(sym, set()).update(names)
    return {
        "schema_version": 2, "repository": repository, "commit": commit, "globs": list(globs),
        "files_scanned": len(files),
        "symbols": {s: {"files": counts[s], "seen_in": seen[s], "keywords": sorted(keywords.get(s, ()))}
                    for s in sorted(seen)},
    }
