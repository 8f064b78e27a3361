"""ledger.py and ledger_check.py end to end on the example operator (real files, real scripts)."""

import json

import pytest

from conftest import assert_one_line_error, freeze_example, run_script, tree_digest
from perftune import fsio
from perftune.contract import schemas

PRESETS = ["kb-softmax-output-by-kernel", "kb-softmax-accum-fp32", "general-07", "general-13", "general-18",
           "general-19", "card-vec-01", "template-row-block"]


@pytest.fixture
def op(op_dir):
    freeze_example(op_dir)
    proc = run_script("ledger.py", "init", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    return op_dir


def ledger_of(op):
    return json.loads((op / "docs/perf/ledger.json").read_text())


def ok(script, *args):
    proc = run_script(script, *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return proc


def fake_round(op, name, status="complete", collection_id=None):
    """A collection.json as collect_perf.py leaves it (only the fields ledger_check reads matter here)."""
    fsio.write_json(op / "docs/perf" / name / "collection.json",
                    {"collection_id": collection_id or f"compare_{name}", "mode": "compare", "status": status})


def test_help_names_every_subcommand():
    proc = run_script("ledger.py", "--help")
    assert proc.returncode == 0 and all(c in proc.stdout for c in ("init", "add", "update", "reopen", "sweep", "show"))
    assert "example:" in run_script("ledger_check.py", "--help").stdout


def test_init_enumerates_the_example_sources_mechanically(op):
    led = ledger_of(op)
    schemas.validate(led, "ledger")
    assert [i["item_id"] for i in led["items"]] == PRESETS
    assert {k: v["count"] for k, v in led["sources"].items()} == {
        "general_method": 4, "kb_selected": 2, "knowledge_card": 1, "template": 1}
    g18 = next(i for i in led["items"] if i["item_id"] == "general-18")
    assert g18["source_ref"] == {"file": "sources/general-methods/general-18.md", "anchor": "#general-18",
                                 "sha256": fsio.sha256_file(op / "sources/general-methods/general-18.md")}
    assert g18["case_scope"] == ["r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16"]


def test_init_refuses_to_overwrite_and_missing_sources_are_contract_errors(op, op_dir):
    before = tree_digest(op)
    assert_one_line_error(run_script("ledger.py", "init", "--op-dir", op), 2, "never re-initialised")
    assert tree_digest(op) == before
    (op / "docs/perf/ledger.json").unlink()
    (op / "sources/templates/INDEX.md").unlink()
    assert_one_line_error(run_script("ledger.py", "init", "--op-dir", op), 2, "template INDEX is missing")
    (op / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    (op / "KB_SELECTION.json").write_text("{not json")
    assert_one_line_error(run_script("ledger.py", "init", "--op-dir", op), 2, "KB_SELECTION.json", "malformed JSON")
    assert not (op / "docs/perf/ledger.json").exists()


@pytest.mark.parametrize("args, needle", [
    (["--item", "general-18", "--status", "accepted", "--note", "x"], "needs a correctness run"),
    (["--item", "general-18", "--status", "rejected", "--note", "x"], "needs a reason_code"),
    (["--item", "kb-softmax-accum-fp32", "--status", "accepted", "--note", "x"], "not allowed for kb_selected"),
    (["--item", "nope", "--note", "x"], "no item 'nope'"),
    (["--item", "general-18", "--status", "done"], "invalid choice"),
    (["--item", "general-18", "--relation", "conflict", "ghost"], "no item 'ghost'"),
])
def test_refused_updates_are_one_line_exit_2_and_write_nothing(op, args, needle):
    before = tree_digest(op)
    assert_one_line_error(run_script("ledger.py", "update", "--op-dir", op, *args), 2, needle)
    assert tree_digest(op) == before


def test_add_is_refused_while_presets_are_open(op):
    proc = run_script("ledger.py", "add", "--op-dir", op, "--item-id", "bd-exp", "--title", "exp bound",
                      "--evidence-file", "SPEC.md", "--expected-metric", "exp time", "--hypothesis", "h")
    assert_one_line_error(proc, 2, "bottleneck_derived refused", "8 preset items still open")


def close_presets(op):
    for item in PRESETS[:2]:
        ok("ledger.py", "update", "--op-dir", op, "--item", item, "--status", "already_implemented",
           "--note", "baseline kernel already does it", "--code-ref", "test_softmax.py:softmax_kernel")
    for item in ("general-07", "general-13", "general-19", "card-vec-01", "template-row-block"):
        ok("ledger.py", "update", "--op-dir", op, "--item", item, "--status", "not_applicable", "--note", "n/a",
           "--applicability", "not_applicable", "--grounds", "no setup to hoist")


def test_full_closure_flow_and_ledger_check(op):
    fake_round(op, "round_002")
    fsio.write_json(op / "docs/perf/correctness/c001-0000abcd.json", {"run_id": "c001-0000abcd"})
    check = run_script("ledger_check.py", "--op-dir", op, "--json")
    assert check.returncode == 1, check.stderr
    report = json.loads(check.stdout)
    assert report["closed"] is False and sum(p["code"] == "non_terminal" for p in report["problems"]) == 8
    close_presets(op)
    # (accepted needs a real accepting compare: tests/decide/test_item_decision.py)
    ok("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status", "rejected", "--reason-code",
       "no_stable_gain", "--note", "CI inside band", "--correctness", "c001-0000abcd", "--formal", "round_002",
       "--relation", "requires", "kb-softmax-accum-fp32")
    ok("ledger.py", "add", "--op-dir", op, "--item-id", "bd-exp", "--title", "exp bound", "--evidence-file", "SPEC.md",
       "--expected-metric", "exp time", "--hypothesis", "exp dominates; vectorise it", "--case-scope", "r64_c4096_fp32")
    ok("ledger.py", "update", "--op-dir", op, "--item", "bd-exp", "--status", "rejected", "--reason-code",
       "no_stable_gain", "--formal", "compare_round_002", "--note", "CI inside band")
    ok("ledger.py", "sweep", "--op-dir", op, "--scope", "final code + round_002", "--examined", "round_002",
       "--finding", "exp is the residual", "bd-exp", "closed", "--finding", "fp16 casts", "frozen_contract", "SPEC")
    check = run_script("ledger_check.py", "--op-dir", op)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "closed" in check.stdout
    led = ledger_of(op)
    assert led["sweep"]["at_revision"] == led["revision"] == 12
    # a reopen invalidates the closure: the same item is pending again and the sweep is stale
    ok("ledger.py", "reopen", "--op-dir", op, "--item", "general-19", "--note", "v3 changed the buffers",
       "--by", "bd-exp")
    check = run_script("ledger_check.py", "--op-dir", op, "--json")
    assert check.returncode == 1
    assert [(p["code"], p["item_id"]) for p in json.loads(check.stdout)["problems"]] == [
        ("non_terminal", "general-19"), ("sweep_stale", "-")]
    show = ok("ledger.py", "show", "--op-dir", op)
    assert "general-19" in show.stdout and "revision 13" in show.stdout


def test_check_flags_incomplete_rounds_and_changed_sources(op):
    close_presets(op)
    fake_round(op, "round_002", status="failed")
    ok("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--status", "rejected", "--reason-code",
       "slower", "--formal", "round_002", "--note", "slower")
    (op / "sources/knowledge-cards/vec-01-row-reduction.md").write_text("edited after init\n")
    check = run_script("ledger_check.py", "--op-dir", op, "--json")
    assert check.returncode == 1
    codes = [(p["code"], p["item_id"]) for p in json.loads(check.stdout)["problems"]]
    assert codes == [("formal_missing", "general-18"), ("source_changed", "card-vec-01"), ("sweep_missing", "-")]


def test_ledger_check_on_a_malformed_ledger_exits_2(op):
    path = op / "docs/perf/ledger.json"
    obj = ledger_of(op)
    obj["items"][0]["status"] = "done"
    path.write_text(json.dumps(obj))
    assert_one_line_error(run_script("ledger_check.py", "--op-dir", op), 2, "ledger.json", "schema ledger")
    path.write_text("[")
    assert_one_line_error(run_script("ledger_check.py", "--op-dir", op), 2, "malformed JSON")


def test_every_field_the_playbook_asks_for_has_an_update_flag(op):
    """PB-3 step 2 writes the hypothesis into a preset item before the edit; an empty one is refused."""
    ok("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--hypothesis", "fp64 copy doubles bytes; "
       "fp32 halves them; risk: precision; stop: gate fails", "--expected-metric", "fp32 time -15 %",
       "--applicability", "applicable", "--grounds", "the kernel widens to float64", "--note", "before the edit")
    item = next(i for i in ledger_of(op)["items"] if i["item_id"] == "general-18")
    assert item["hypothesis"].startswith("fp64 copy") and item["expected_metric"] == "fp32 time -15 %"
    assert item["applicability"] == {"state": "applicable", "grounds": "the kernel widens to float64"}
    before = tree_digest(op)
    proc = run_script("ledger.py", "update", "--op-dir", op, "--item", "general-18", "--hypothesis", " ")
    assert_one_line_error(proc, 2, "hypothesis", "empty")
    assert tree_digest(op) == before
