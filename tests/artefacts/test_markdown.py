"""The markdown reader the artefact formats rest on: exact cases and properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from perftune.artefacts import documents, markdown
from perftune.artefacts.problems import placeholders

TEXT = """# T
intro
## §0 A
a body
```
## not a heading
```
### sub
deep
## §1 B
| id | x |
|----|---|
| a | `1` |
| b | 2 |
after
"""


def test_sections_bodies_and_fences():
    found = markdown.sections(TEXT)
    assert [(s.level, s.title, s.line) for s in found] == [(1, "T", 1), (2, "§0 A", 3), (3, "sub", 8), (2, "§1 B", 10)]
    assert "## not a heading" in found[1].body and "deep" in found[1].body
    assert markdown.first_table(found[3].body) == (["id", "x"], [["a", "1"], ["b", "2"]])
    assert set(documents.design_sections(TEXT)) == {0, 1}
    assert markdown.first_table("no table\n|a|\n") is None
    assert not markdown.has_content("<!-- x -->\n\n#### h\n") and markdown.has_content("x")


def test_placeholders_are_one_problem_naming_the_first_line():
    assert placeholders("a\n<FILL: b>\nc <FILL: d>\n", "F.md")[0].line() == (
        "F.md: line 2: 2 line(s) still hold a scaffold placeholder (replace every <FILL: ...> with the real content)")
    assert placeholders("filled\n", "F.md") == []


LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
               max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(LINE, st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), LINE),
                          st.just("```"), st.just("|a|b|"), st.just("|-|-|")), max_size=30))
def test_readers_never_raise_and_bodies_stay_inside_the_text(lines):
    text = "\n".join(lines)
    for section in markdown.sections(text):
        assert section.body in text and 1 <= section.line <= text.count("\n") + 1
        markdown.first_table(section.body)
    for check in (documents.check_explore, documents.check_memory, lambda t: documents.check_design(t, ("a",)),
                  lambda t: documents.check_material(t, ("c",)), documents.check_spec):
        assert all("\n" not in p.line() for p in check(text))
