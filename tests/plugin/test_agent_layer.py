"""The prompts as a product: frontmatter, size budgets, always-on cost, one owner per rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from perftune import errors
from perftune.decide.ledger_sources import parse_index

AGENTS = sorted((ROOT / "agents").glob("*.md"))
COMMANDS = sorted((ROOT / "commands").glob("*.md"))
SKILLS = sorted((ROOT / "skills").glob("*/SKILL.md"))
PROMPTS = sorted(p for d in ("agents", "commands", "skills", "references") for p in (ROOT / d).rglob("*.md"))
ROLES = ("planner", "mathematician", "architect", "coder", "optimizer", "verifier")
COLORS = {"blue", "cyan", "green", "yellow", "magenta", "red"}
WRITE_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
ALWAYS_ON_BUDGET_TOKENS = 1500


def frontmatter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, f"{path}: no YAML frontmatter"
    meta = yaml.safe_load(match.group(1))
    assert isinstance(meta, dict), path
    return meta, match.group(2)


def tools_of(meta: dict) -> set[str]:
    tools = meta["tools"]
    return set(tools) if isinstance(tools, list) else {t.strip() for t in tools.split(",")}


def test_the_six_role_agents_exist():
    assert [p.stem for p in AGENTS] == sorted(f"pypto-pro-op-{r}" for r in ROLES)


@pytest.mark.parametrize("path", AGENTS, ids=lambda p: p.stem)
def test_agent_frontmatter_is_claude_native(path):
    meta, body = frontmatter(path)
    assert set(meta) == {"name", "description", "tools", "model", "color"}, sorted(meta)
    assert meta["name"] == path.stem and re.fullmatch(r"[a-z][a-z-]{2,49}", meta["name"])
    assert meta["model"] == "inherit" and meta["color"] in COLORS
    # always-on context (#18): one short description that says what the role does and when it
    # is dispatched; the orchestrator's routing (commands/pypto-pro-op.md) names every dispatch.
    description = meta["description"]
    assert "<example>" not in description and len(description) <= 300, description
    assert re.search(r"\bUse (first|after|with|before)\b", description), description
    assert tools_of(meta) and len(body.strip()) > 200
    assert len(path.read_text().splitlines()) <= 120


def test_verifier_cannot_write_and_runs_the_gate_scripts():
    meta, body = frontmatter(ROOT / "agents" / "pypto-pro-op-verifier.md")
    assert not tools_of(meta) & WRITE_TOOLS
    assert "scripts/stage5_check.py" in body and "scripts/stage4_gates.py" in body
    assert "verification PASSED." in body and "verification FAILED." in body


def test_optimizer_has_one_procedure_three_exits_and_a_hand_off():
    _, body = frontmatter(ROOT / "agents" / "pypto-pro-op-optimizer.md")
    assert body.count("pypto-pro-op-perf-tune") == 1
    assert re.search(r"## Exits \(exactly one\)\n1\. \*\*Closed loop\*\*.*\n2\. \*\*`env_error`\*\*.*"
                     r"\n3\. \*\*`stage5_contract_blocked`\*\*", body, re.S)
    assert "## Hand-off" in body and "rollback_to_stage" in body


@pytest.mark.parametrize("path", SKILLS, ids=lambda p: p.parent.name)
def test_skill_frontmatter_and_sections(path):
    meta, body = frontmatter(path)
    assert set(meta) == {"name", "description"} and meta["name"] == path.parent.name
    assert re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"]) and 40 <= len(meta["description"]) <= 1024
    assert "Use " in meta["description"] or "use " in meta["description"]
    for section in ("## Purpose", "## When to use / not", "## Procedure", "## Outputs", "## References"):
        assert section in body, (path, section)
    references = path.read_text().split("\n## References", 1)[1]   # the resources table (issue 29) is extra
    assert len(path.read_text().splitlines()) - len(references.splitlines()) <= 200


def test_perf_skill_steps_are_numbered_and_every_command_is_a_block():
    _, body = frontmatter(ROOT / "skills" / "pypto-pro-op-perf-tune" / "SKILL.md")
    procedure = body.split("## Procedure", 1)[1].split("\n## ", 1)[0]
    steps = re.split(r"\n(?=\d+\. \*\*)", procedure)[1:]
    assert [int(s.split(".", 1)[0]) for s in steps] == list(range(1, len(steps) + 1)) and len(steps) >= 20
    for step in steps:   # a command is a step block, never prose (#38 Deliver 4); at most two blocks a step
        blocks = step.count("```bash step=")
        assert step.count("${CLAUDE_PLUGIN_ROOT}/scripts/") == blocks <= 2, step
    kinds = re.findall(r"^\d\. `(\w+)`", body, re.M)
    assert kinds == ["kb_selected", "general_method", "knowledge_card", "template", "bottleneck_derived"]
    for heading in ("## Goal and boundaries", "## Reads and freezes", "## Deliverables"):
        assert heading in body


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.stem)
def test_command_frontmatter(path):
    meta, body = frontmatter(path)
    assert set(meta) == {"description", "argument-hint", "allowed-tools"}
    assert 10 <= len(meta["description"]) <= 70 and isinstance(meta["argument-hint"], str)
    assert "$ARGUMENTS" in body


def test_orchestrator_command_has_phases_and_stop_points():
    _, body = frontmatter(ROOT / "commands" / "pypto-pro-op.md")
    assert len(re.findall(r"^## Phase", body, re.M)) >= 5
    assert body.count("**Stop point**") >= 3 and "OR-5" in body and "OR-6" in body


def always_on_chars() -> dict[str, int]:
    sizes = {}
    for path in AGENTS + COMMANDS + SKILLS:
        meta, _ = frontmatter(path)
        sizes[path.relative_to(ROOT).as_posix()] = len(meta["description"])
    return sizes


def test_always_on_cost_is_within_budget():
    sizes = always_on_chars()
    tokens = sum(sizes.values()) / 4
    print(f"\nalways-on descriptions: {sum(sizes.values())} chars ~ {tokens:.0f} tokens "
          f"(budget {ALWAYS_ON_BUDGET_TOKENS})")
    assert tokens <= ALWAYS_ON_BUDGET_TOKENS, sizes


def sentences(path: Path) -> set[str]:
    """Normalised sentences of >= 12 words (code blocks, tables and frontmatter excluded)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = "\n".join("" if line.lstrip().startswith(("|", "#")) else line for line in text.splitlines())
    out = set()
    for raw in re.split(r"(?<=[.!?;:])\s+|\n\s*\n|\n\s*[-*\d]+[.)]?\s", text):
        words = re.findall(r"[a-z0-9_]+", raw.lower())
        if len(words) >= 12:
            out.add(" ".join(words))
    return out


def test_no_rule_sentence_is_written_twice():
    owners: dict[str, str] = {}
    duplicates = []
    for path in PROMPTS:
        for sentence in sentences(path):
            rel = path.relative_to(ROOT).as_posix()
            if sentence in owners and owners[sentence] != rel:
                duplicates.append((owners[sentence], rel, sentence))
            owners.setdefault(sentence, rel)
    assert not duplicates, duplicates


def test_duplicate_detector_catches_a_copied_rule(tmp_path):
    rule = "Never change the environment, such as conda activate, export or pip install, in any subagent.\n"
    (tmp_path / "a.md").write_text("# A\n" + rule)
    (tmp_path / "b.md").write_text("Intro.\n\n- " + rule)
    assert sentences(tmp_path / "a.md") & sentences(tmp_path / "b.md")


def test_failure_categories_page_agrees_with_errors_module():
    text = (ROOT / "references" / "failure-categories.md").read_text()
    table = re.findall(r"^\| (\d+) \| `([a-z0-9_]+)` \|", text, re.M)
    assert [int(n) for n, _ in table] == list(range(1, 25))
    assert tuple(c for _, c in table) == errors.FAILURE_CATEGORIES
    priority = text.split("## FC-2", 1)[1].split("## FC-3", 1)[0]
    assert tuple(re.findall(r"^\d+\. `([a-z0-9_]+)`", priority, re.M)) == errors.CATEGORY_PRIORITY


def test_rule_ids_cited_in_prompts_have_an_owner():
    owned = set()
    for path in PROMPTS:
        text = path.read_text()
        owned.update(re.findall(r"^#+ \**([A-Z][A-Z0-9]{1,2}-\d+)\b", text, re.M))
        owned.update(re.findall(r"^#+ .*\(([A-Z][A-Z0-9]{1,2}-\d+)\)", text, re.M))
        owned.update(re.findall(r"^- \*\*([A-Z][A-Z0-9]{1,2}-\d+)\b", text, re.M))
    assert {"OR-1", "SA-1", "PC-1", "PC-2", "FC-1", "S5-1", "PB-3", "EV-7", "MS-2"} <= owned
    cited = {ref for path in PROMPTS for ref in re.findall(r"\b((?:OR|SA|PC|FC|S5|PB|EV|MS)-\d+)\b", path.read_text())}
    assert cited <= owned, sorted(cited - owned)


def test_relative_links_resolve():
    broken = []
    for path in PROMPTS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
            plugin = target.startswith("${CLAUDE_PLUGIN_ROOT}/")
            if not (ROOT / target.split("}/", 1)[1] if plugin else path.parent / target).exists():
                broken.append((path.relative_to(ROOT).as_posix(), target))
    assert not broken, broken


@pytest.mark.parametrize("folder,expected", [("general-methods", 19), ("knowledge-cards", 31), ("templates", 6)])
def test_shipped_sources_enumerate_through_the_ledger_parser(folder, expected):
    index = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references" / folder / "INDEX.md"
    rows = parse_index(index.read_text(), str(index))
    assert len(rows) == expected
    for row in rows:
        assert (index.parent / row.file).is_file(), row
        assert row.anchor.lstrip("#") in (index.parent / row.file).read_text(), row
