"""kb_check.py: the shipped knowledge base is complete and every finding kind can fire."""

import json
import shutil

import pytest

from conftest import ROOT, assert_one_line_error, run_script
from perftune.knowledge import integrity, symbols

REFS = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references"


def check(refs):
    proc = run_script("kb_check.py", "check", "--references", str(refs), "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout else None


@pytest.fixture
def refs(tmp_path):
    dst = tmp_path / "references"
    shutil.copytree(REFS, dst)
    return dst


def codes(report):
    return {f["code"] for f in report["findings"]}


def test_shipped_knowledge_base_is_clean_and_meets_the_counts():
    code, report = check(REFS)
    assert code == 0 and report["ok"], report["findings"]
    counts = {k: v["active"] for k, v in report["counts"].items()}
    assert counts["knowledge_card"] >= 25 and counts["general_method"] >= 18
    assert counts["template"] >= 6 and counts["case"] >= 10
    assert report["counts"]["general_method"]["all"] > counts["general_method"]   # the retired row stays listed


def test_every_card_family_has_active_cards_and_every_case_has_a_number_or_says_it_has_none():
    rows = integrity.table_rows((REFS / "knowledge-cards/INDEX.md").read_text())
    families = {r["id"].split("-")[1] for r in rows if r["lifecycle"] == "active"}
    assert families == set(integrity.FAMILIES)
    cases = integrity.table_rows((REFS / "case-library/INDEX.md").read_text())
    for row in cases:
        effect = integrity.sections((REFS / "case-library" / row["file"]).read_text())["Measured effect"]
        assert any(ch.isdigit() for ch in effect) or row["evidence_grade"] == "described", row["id"]
    assert sum(r["evidence_grade"].startswith("measured") for r in cases) >= 10


def test_an_api_name_or_keyword_not_in_the_public_samples_is_a_finding(refs):
    card = next((refs / "knowledge-cards" / "mem").glob("mem-01-*.md"))
    card.write_text(card.read_text().replace(
        "```python\n", "```python\ninp = pl.make_tile_group(shape, slots=2, auto_mutex=True)\nz = pl.make_tile_grp(1)\n", 1))
    code, report = check(refs)
    assert code == 1
    assert sorted(f["message"] for f in report["findings"]) == [
        "pl.make_tile_group(auto_mutex=, slots=) was never seen in the public samples",
        f"pl.make_tile_grp is not in {integrity.SYMBOLS_FILE}"]
    card.write_text(card.read_text().replace("```python\n", "```python\n    x = (\n", 1))
    assert "snippet_syntax" in codes(check(refs)[1])


def test_missing_section_gate_citation_and_syntax_are_findings(refs):
    card = next((refs / "knowledge-cards" / "vec").glob("vec-01-*.md"))
    card.write_text(card.read_text().replace("## Mechanism", "## Why").replace("- **dtype**:", "- dtype:"))
    method = refs / "general-methods" / "general-03.md"
    method.write_text(method.read_text().replace("`hicann/pypto:", "`hicann/pypto-typo:"))
    tmpl = refs / "templates" / "row_strip_pipeline.py.tmpl"
    tmpl.write_text(tmpl.read_text().replace("def strip_kernel(", "def strip_kernel(("))
    code, report = check(refs)
    assert code == 1 and codes(report) == {"section", "gate", "citation", "template_syntax"}


def test_index_and_files_must_match_one_to_one(refs):
    (refs / "knowledge-cards" / "vec" / "vec-99-stray.md").write_text("# stray\n")
    index = refs / "general-methods" / "INDEX.md"
    text = index.read_text()
    index.write_text(text.replace("| general-02 |", "| general-01 |", 1))
    (refs / "templates" / "cube_output_reuse.py.tmpl").unlink()
    code, report = check(refs)
    assert code == 1 and codes(report) == {"orphan_file", "duplicate_id", "index_file", "anchor"}


def test_symbol_extraction_records_where_each_symbol_was_seen(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("text pl.not_code\n```python\ng = pl.make_tile_group(type=t, addrs=0)\n"
                                            "x = g.next()  # pl.in_comment\n```\n")
    (tmp_path / "docs" / "b.py").write_text("@pl.vector_function\ndef f(a):\n    vf.exp_sub(a, a, m)\n")
    obj = symbols.extract_tree(tmp_path, ("docs/*.md", "docs/*.py"), repository="r/x", commit="c" * 40)
    assert obj["symbols"] == {
        "TileGroup.next": {"files": 1, "seen_in": ["docs/a.md"], "keywords": []},
        "pl.make_tile_group": {"files": 1, "seen_in": ["docs/a.md"], "keywords": ["addrs", "type"]},
        "pl.vector_function": {"files": 1, "seen_in": ["docs/b.py"], "keywords": []},
        "vf.exp_sub": {"files": 1, "seen_in": ["docs/b.py"], "keywords": []},
    }


def test_cli_usage_and_missing_inputs_are_one_line_errors(tmp_path, refs):
    assert_one_line_error(run_script("kb_check.py"), 2, "command")
    assert_one_line_error(run_script("kb_check.py", "check", "--references", str(tmp_path / "nope")), 2, "not a directory")
    (refs / "provenance" / "sources.json").write_text("{")
    assert_one_line_error(run_script("kb_check.py", "check", "--references", str(refs)), 2, "not JSON")
    proc = run_script("kb_check.py", "check", "--references", str(REFS))
    assert proc.returncode == 0 and proc.stdout.startswith("OK: knowledge_card")
