"""perftune.orchestrate.docs_index: tokens, chunks, exact BM25 numbers, expected rankings on the fixture corpus."""

import math
from pathlib import Path

import pytest

from perftune.orchestrate import docs_index
from perftune.orchestrate.docs_index import Chunk, Index

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "docs"


@pytest.fixture(scope="module")
def index():
    roots = docs_index.explicit_roots([str(CORPUS / "references"), str(CORPUS / "devkit")])
    return Index(docs_index.load_chunks(roots))


def test_tokens_keep_identifiers_and_their_words():
    assert docs_index.tokenize("pl.make_tile_group(auto_mutex=True)") == [
        "pl", "make_tile_group", "make", "tile", "group", "auto_mutex", "auto", "mutex", "true"]
    assert docs_index.tokenize("__init__ 910B") == ["init", "910b"]
    assert docs_index.tokenize("行切分") == ["行", "切", "分", "行切", "切分"]


def test_markdown_chunks_by_heading_outside_code():
    text = "intro\n# A\nbody a\n```\n# not a heading\n```\n## B ##\nbody b\n"
    assert docs_index.chunk_markdown(text, "f.md") == [
        ("f.md", 1, ["intro"]), ("A", 2, ["# A", "body a", "```", "# not a heading", "```"]),
        ("B", 7, ["## B ##", "body b"])]
    assert docs_index.chunk_markdown("# Only\n", "g.md") == [("Only", 1, ["# Only"])]


def test_python_chunks_by_top_level_definition():
    text = '"""doc"""\nimport x\n\ndef f():\n    def inner():\n        pass\nclass K:\n    pass\n'
    assert [(h, n) for h, n, _ in docs_index.chunk_python(text, "m.py")] == [
        ("m.py", 1), ("def f", 4), ("class K", 7)]


def test_bm25_exact_scores():
    """Re-derived for SQLite FTS5 bm25() (issue 21): per phrase idf = ln((N - n + 0.5) / (n + 0.5)) floored
    at 1e-6, term frequency = sum of column weight x occurrences (heading 3, body 1), document length =
    all tokens of the row (unweighted), k1 = 1.2, b = 0.75; the score shown is the negated bm25()."""
    chunks = [Chunk(0, "a.md", "/a.md", "alpha", 1, ("alpha beta",)),
              Chunk(0, "b.md", "/b.md", "gamma", 1, ("beta beta",)),
              Chunk(0, "c.md", "/c.md", "delta", 1, ("epsilon zeta",))]
    idx = Index(chunks)  # every row has 3 tokens, so every length norm is 1.2
    idf_alpha, idf_beta = math.log(2.5 / 1.5), 1e-6  # beta is in 2 of 3 rows: ln(1.5 / 2.5) < 0 -> floor
    assert idx.scores("alpha").tolist() == pytest.approx([idf_alpha * 4 * 2.2 / 5.2, 0.0, 0.0], rel=1e-9)
    assert idx.scores("beta").tolist() == pytest.approx([idf_beta * 2.2 / 2.2, idf_beta * 4.4 / 3.2, 0.0], rel=1e-6)
    assert idx.scores("alpha alpha ALPHA").tolist() == idx.scores("alpha").tolist()  # distinct terms only
    assert [h.file for h in idx.search("beta")] == ["b.md", "a.md"]
    assert idx.search("omega") == []


def test_identifiers_match_by_whole_name_and_by_parts():
    chunks = [Chunk(0, "a.md", "/a", "h", 1, ("call make_tile_group here",)),
              Chunk(0, "b.md", "/b", "h", 1, ("make a tile for the group",)),
              Chunk(0, "c.md", "/c", "h", 1, ("nothing relevant at all",))]
    idx = Index(chunks)
    assert docs_index.match_expression("pl.make_tile_group") == '"pl" OR "make tile group" OR "make" OR "tile" OR "group"'
    assert [h.file for h in idx.search("make_tile_group")] == ["a.md", "b.md"]
    assert [h.file for h in idx.search("group")] == ["a.md", "b.md"]


def test_cjk_is_stored_as_characters_and_pairs():
    assert docs_index.segment("按行切分 tile") == " 按 行 切 分 按行 行切 切分  tile"


def test_equal_scores_are_ordered_by_root_file_and_line():
    same = ("tile group",)
    chunks = [Chunk(1, "a.md", "/x", "h", 1, same), Chunk(0, "z.md", "/y", "h", 9, same),
              Chunk(0, "z.md", "/y", "h", 3, same), Chunk(0, "b.md", "/w", "h", 5, same)]
    hits = Index(chunks).search("tile")
    assert len({h.score for h in hits}) == 1
    assert [(h.file, h.line) for h in hits] == [("b.md", 5), ("z.md", 3), ("z.md", 9), ("a.md", 1)]


EXPECTED = [
    ("auto_mutex mutex ids", "docs/pypto_pro/api/make_tile_group.md", "auto_mutex"),
    ("tile parameters shape dtype count", "docs/pypto_pro/api/make_tile_group.md", "Parameters"),
    ("store tile to global memory", "docs/pypto_pro/api/load_store.md", "pl.store_tile"),
    ("vector function exp reduce max", "docs/pypto_pro/api/vector_function.md", "vf.exp and vf.reduce_max"),
    ("cross core event id", "docs/pypto_pro/api/cross_core.md", "set_cross_core and wait_cross_core"),
    ("double buffer ping pong", "docs/pypto_pro/tutorials/double_buffer.md", "Why ping-pong buffers help"),
    ("softmax_wrapper", "pro_ops/softmax/softmax_vf.py", "def softmax_wrapper"),
    ("matmul cube section", "pro_ops/matmul/matmul_cube.py", "def matmul_kernel"),
    ("Task Duration op_summary", "msprof-metrics.md", "op_summary files"),
    ("wrapper_boundary_violation priority", "failure-categories.md", "Priority of the primary category"),
    ("分块 切分", "tiling_zh.md", "行切分"),
    ("jit kernel launch once", "docs/pypto_pro/api/jit.md", "pl.jit"),
    ("AICore timeout deadlock", "performance-constraints.md", "PC-1 Rotating buffers"),
    ("stage5 contract blocked frozen input", "failure-categories.md", "stage5_contract_blocked"),
]


@pytest.mark.parametrize("query, file, heading", EXPECTED, ids=[q for q, _, _ in EXPECTED])
def test_expected_top_result(index, query, file, heading):
    top = index.search(query, limit=3)[0]
    assert (top.file, top.heading) == (file, heading), index.search(query, limit=3)


def test_results_carry_line_snippet_and_are_repeatable(index):
    first = index.search("store tile to global memory", limit=5)
    hit = first[0]
    assert (hit.line, hit.snippet_line) == (7, 9) and hit.snippet.startswith("Writes a tile from unified buffer")
    assert hit.path == str((CORPUS / "devkit/docs/pypto_pro/api/load_store.md").resolve())
    assert all(a.score >= b.score for a, b in zip(first, first[1:]))
    rebuilt = Index(docs_index.load_chunks(docs_index.explicit_roots([str(CORPUS / "references"),
                                                                      str(CORPUS / "devkit")])))
    assert rebuilt.search("store tile to global memory", limit=5) == first


def test_default_roots_cover_plugin_references_and_devkit(tmp_path):
    (tmp_path / "references").mkdir()
    (tmp_path / "skills" / "b" / "references").mkdir(parents=True)
    (tmp_path / "skills" / "a" / "references").mkdir(parents=True)
    roots = docs_index.default_roots(tmp_path, str(CORPUS / "devkit"))
    shown = [(r.path.relative_to(r.base).as_posix(), r.prefix) for r in roots]
    assert shown == [("references", ""), ("skills/a/references", ""), ("skills/b/references", ""),
                     ("docs/pypto_pro/api", "$PYPTO_DEVKIT_DIR/"), ("docs/pypto_pro/tutorials", "$PYPTO_DEVKIT_DIR/"),
                     ("pro_ops", "$PYPTO_DEVKIT_DIR/")]
    hits = Index(docs_index.load_chunks(roots)).search("softmax_wrapper")
    assert hits[0].file == "$PYPTO_DEVKIT_DIR/pro_ops/softmax/softmax_vf.py"


def test_cache_check(tmp_path):
    assert docs_index.check_cache(str(CORPUS / "devkit")) == {
        "dir": str(CORPUS / "devkit"), "status": "READY", "missing": []}
    (tmp_path / "docs" / "pypto_pro" / "api").mkdir(parents=True)
    (tmp_path / "docs" / "pypto_pro" / "api" / "x.md").write_text("# x\n")
    status = docs_index.check_cache(str(tmp_path))
    assert status["status"] == "NEED_PROVISION" and len(status["missing"]) == 2
    assert status["missing"][1] == "pro_ops/*.py"
    assert docs_index.check_cache(None)["missing"] == ["$PYPTO_DEVKIT_DIR is not set"]
    assert docs_index.check_cache(str(tmp_path / "nope"))["status"] == "NEED_PROVISION"
