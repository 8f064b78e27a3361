"""Markdown structure the artefact formats rely on: headings, sections and tables (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    line: int          # 1-based line of the heading
    body: str          # text up to the next heading of the same or a higher level


def sections(text: str) -> list[Section]:
    """Every heading outside fenced code, with its body."""
    lines = text.splitlines()
    heads: list[tuple[int, int, str]] = []
    fenced = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            heads.append((index, len(match.group(1)), match.group(2).strip()))
    out = []
    for pos, (index, level, title) in enumerate(heads):
        end = next((i for i, lv, _ in heads[pos + 1:] if lv <= level), len(lines))
        out.append(Section(level, title, index + 1, "\n".join(lines[index + 1:end])))
    return out


def has_content(body: str) -> bool:
    """True when the body has a line that is not blank, a heading or an HTML comment."""
    text = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def first_table(body: str) -> tuple[list[str], list[list[str]]] | None:
    """Header (lower case) and rows of the first markdown table in ``body``; None when there is none."""
    lines = body.splitlines()
    for at, line in enumerate(lines[:-1]):
        if line.strip().startswith("|") and _RULE.fullmatch(lines[at + 1]) and "-" in lines[at + 1]:
            header = [c.lower() for c in cells(line)]
            rows = []
            for row in lines[at + 2:]:
                if not row.strip().startswith("|"):
                    break
                rows.append(cells(row))
            return header, rows
    return None
