"""The perf-tune SKILL's References table: one row per reference file, each read at a real step (issue 29)."""

from __future__ import annotations

import re

from conftest import ROOT

SKILL = ROOT / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md"
REFS = SKILL.parent / "references"


def table() -> dict[str, str]:
    section = SKILL.read_text().split("## References", 1)[1]
    rows = re.findall(r"^\| (\[[^]]+\]\(([^)]+)\)|`([^`]+)`) \| ([^|]+) \| [^|]+ \|$", section, re.M)
    return {link or code: when for _, link, code, when in rows}


def test_every_reference_file_has_one_row_with_the_steps_that_read_it():
    rows = table()
    shipped = {f"references/{p.relative_to(REFS).as_posix()}" for p in REFS.glob("*.md")}
    shipped |= {f"references/{p.relative_to(REFS).as_posix()}" for p in REFS.glob("*/INDEX.md")}
    skill_rows = {r for r in rows if r.startswith("references/")}
    assert skill_rows == shipped
    for name in (r for r in rows if r.startswith("${CLAUDE_PLUGIN_ROOT}/references/")):
        assert (ROOT / name.split("}/", 1)[1]).is_file(), name
    steps = set(re.findall(r"```bash step=(\w+)", SKILL.read_text()))
    for name, when in rows.items():
        named = re.findall(r"`(\w+)`", when)
        assert named or "every step" in when, (name, when)
        assert set(named) <= steps, (name, sorted(set(named) - steps))
