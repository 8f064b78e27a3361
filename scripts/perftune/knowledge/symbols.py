"""API symbols of PyPTO-Pro: extracted from public samples, and found in our cards and templates.

A symbol is a dotted name rooted at ``pl`` (``import pypto_pro.language as pl``) or ``vf`` (the
namespace that exists inside a ``@pl.vector_function`` body), e.g. ``pl.make_tile_group``,
``pl.MemorySpace.Vec``, ``vf.exp_sub``; plus the TileGroup methods ``TileGroup.next``,
``TileGroup.current`` and ``TileGroup.previous`` (a ``.next()``-style call in code that creates a
tile group). Code is read from ``.py`` files and from the fenced ``python`` blocks of ``.md`` files.

:func:`extract_tree` builds the committed symbol list (``references/api-symbols.json``) from a
checkout of the public samples; :func:`symbols_in` finds the symbols a card or template uses. Both
are pure over text except :func:`extract_tree`, which reads the files it is given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_SYMBOL = re.compile(r"(?<![\w.])((?:pl|vf)(?:\.[A-Za-z_]\w*)+)")
_GROUP_METHOD = re.compile(r"\.(next|current|previous)\(\s*\)")
_FENCE = re.compile(r"^```(\w*)\s*$")
SEEN_LIMIT = 3


def code_of(text: str, suffix: str) -> str:
    """The code of a file: all of a ``.py``/``.tmpl`` file, the ``python`` fences of markdown."""
    if suffix != ".md":
        return text
    out, inside = [], False
    for line in text.splitlines():
        fence = _FENCE.match(line.strip())
        if fence and not inside:
            inside = fence.group(1) in ("python", "py")
            continue
        if fence or line.strip() == "```":
            inside = False
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def symbols_in(code: str) -> set[str]:
    """Every ``pl.*``/``vf.*`` dotted name and TileGroup method used in ``code`` (comments ignored)."""
    lines = [line.split("#", 1)[0] for line in code.splitlines()]
    body = "\n".join(lines)
    found = set(_SYMBOL.findall(body))
    if "make_tile_group" in body:
        found.update(f"TileGroup.{m}" for m in _GROUP_METHOD.findall(body))
    return found


def extract_tree(root: Path, globs: tuple[str, ...], *, repository: str, commit: str) -> dict[str, Any]:
    """The symbol list of the files under ``root`` matching ``globs``: where each symbol was seen."""
    seen: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    files = sorted({p for g in globs for p in root.glob(g) if p.is_file()})
    for path in files:
        rel = path.relative_to(root).as_posix()
        for sym in sorted(symbols_in(code_of(path.read_text(encoding="utf-8", errors="replace"), path.suffix))):
            counts[sym] = counts.get(sym, 0) + 1
            if len(seen.setdefault(sym, [])) < SEEN_LIMIT:
                seen[sym].append(rel)
    return {
        "schema_version": 1, "repository": repository, "commit": commit, "globs": list(globs),
        "files_scanned": len(files),
        "symbols": {s: {"files": counts[s], "seen_in": seen[s]} for s in sorted(seen)},
    }
