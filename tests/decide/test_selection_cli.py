"""select_best.py end to end on real cpu rounds of the example operator (record, choose, confirm)."""

import json
import shutil

import pytest

from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script, tree_digest
from perftune.contract import schemas


FP64 = "xf = x.astype(np.float64)"
FP32 = "xf = x.astype(np.float32)"
# the fixture's baseline also does redundant work, so v1 is several times faster: these tests are about
# recording, ranking and confirm mechanics, and a real effect that large survives a loaded 2-core machine
# (an fp64 -> fp32 change alone is within the load swing of independent rounds minutes apart)
SLOW = FP64 + "; _ = [np.exp(xf) for _ in range(6)]"


def ok(script, *args):
    proc = run_script(script, *map(str, args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def correctness_run(op):
    return json.loads(ok("check_correctness.py", "--op-dir", op, "--json").stdout)["run_id"]


def set_kernel(op, old, new):
    test = op / "test_softmax.py"
    test.write_text(test.read_text().replace(old, new))


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """Baseline v0 (round_001, no compliance evidence), v1 = fp32 accumulation (round_002), final round_003 of v1."""
    op = tmp_path_factory.mktemp("sel") / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    # a wide frozen band: these tests are about recording and ranking mechanics, and five repeats of
    # independent rounds on a shared machine must not turn noise into a gate-failing `slower` case
    set_kernel(op, FP64, SLOW)
    freeze_example(op, "--noise-band", "0.5", repeats=5, warmup=1)
    ok("collect_perf.py", "formal", "--op-dir", op)
    ok("ledger.py", "init", "--op-dir", op)
    for item in ("kb-softmax-output-by-kernel", "kb-softmax-accum-fp32"):
        ok("ledger.py", "update", "--op-dir", op, "--item", item, "--status", "already_implemented", "--note", "fp64")
    runs = {"v0": correctness_run(op)}
    ok("select_best.py", "record", "--op-dir", op, "--version-id", "v0", "--round", "round_001",
       "--correctness", runs["v0"])
    set_kernel(op, SLOW, FP32)
    runs["v1"] = correctness_run(op)
    ok("collect_perf.py", "formal", "--op-dir", op)
    ok("select_best.py", "record", "--op-dir", op, "--version-id", "v1", "--round", "round_002", "--items",
       "general-18", "--correctness", runs["v1"], "--compliance", "stage4 gates: PASS")
    ok("collect_perf.py", "formal", "--op-dir", op)
    return op, runs


@pytest.fixture
def work(evidence, tmp_path):
    """A private copy of the shared evidence for tests that change files."""
    target = tmp_path / "softmax"
    shutil.copytree(evidence[0], target)
    return target, evidence[1]


def test_help_documents_the_three_subcommands():
    proc = run_script("select_best.py", "--help")
    assert proc.returncode == 0 and all(w in proc.stdout for w in ("record", "choose", "confirm", "example:"))


def test_candidates_register_records_identity_and_order(evidence):
    op, runs = evidence
    register = json.loads((op / "docs/perf/candidates.json").read_text())
    schemas.validate(register, "candidates")
    v0, v1 = register["candidates"]
    assert (v0["evaluation_order"], v1["evaluation_order"]) == (0, 1)
    assert v1["items"] == ["general-18"] and v1["correctness"]["run_id"] == runs["v1"]
    assert v0["compliance"] is None and v1["kb_gaps_open"] is False
    assert v0["executable_sha256"] != v1["executable_sha256"]
    saved = (op / v1["saved_copy"] / "test_softmax.py").read_text()
    assert FP32 in saved and FP64 in (op / v0["saved_copy"] / "test_softmax.py").read_text()


def test_choose_recomputes_and_is_byte_identical(work):
    op, _ = work
    proc = run_script("select_best.py", "choose", "--op-dir", op, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    schemas.validate(result, "selection")
    v0, v1 = result["candidates"]
    assert v0["eligible"] is False and v0["ineligible_reason"] == "no_compliance_evidence" and v0["score"] == 1.0
    assert result["chosen"] == "v1" == result["anchor"] and result["tie_set"] == ["v1"] and v1["rank"] == 1
    first = (op / "docs/perf/selection.json").read_bytes()
    assert json.loads(first) == result
    ok("select_best.py", "choose", "--op-dir", op)
    assert (op / "docs/perf/selection.json").read_bytes() == first


def test_agent_written_numbers_are_never_used(work):
    op, _ = work
    ok("select_best.py", "choose", "--op-dir", op)
    before = (op / "docs/perf/selection.json").read_bytes()
    (op / "docs/perf/performance.json").write_text(json.dumps({"suite": {"mean_case_speedup": 99.0}}))
    ok("select_best.py", "choose", "--op-dir", op)
    assert (op / "docs/perf/selection.json").read_bytes() == before
    for path in (op / "docs/perf/round_002").glob("case_*/measurement.json"):
        obj = json.loads(path.read_text())
        obj["duration_samples_us"] = [1.0] * len(obj["duration_samples_us"])
        obj["aggregate_us"] = 1.0
        path.write_text(json.dumps(obj))
    proc = run_script("select_best.py", "choose", "--op-dir", op, "--json")
    v1 = json.loads(proc.stdout)["candidates"][1]
    assert proc.returncode == 1 and v1["score"] is None and v1["ineligible_reason"].startswith("round_invalid")


def test_failing_correctness_record_makes_a_version_ineligible(work):
    op, runs = work
    record = op / f"docs/perf/correctness/{runs['v1']}.json"
    obj = json.loads(record.read_text())
    obj["all_passed"] = False
    record.write_text(json.dumps(obj))
    proc = run_script("select_best.py", "choose", "--op-dir", op, "--json")
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["chosen"] is None and result["candidates"][1]["ineligible_reason"] == "correctness_failed"


@pytest.mark.parametrize("args, needle", [
    (["--version-id", "v1", "--round", "round_003"], "already recorded"),
    (["--version-id", "v2", "--round", "round_002"], "already belongs to another version"),
    (["--version-id", "v2", "--round", "quick_001"], "quick results never rank"),
    (["--version-id", "v2", "--round", "round_003"], "no ledger item"),
    (["--version-id", "../x", "--round", "round_003", "--items", "general-18"], "not a safe id"),
    (["--version-id", "v2", "--round", "round_009"], "round_009"),
])
def test_record_refusals_are_one_line_exit_2_and_write_nothing(work, args, needle):
    op, runs = work
    before = tree_digest(op)
    proc = run_script("select_best.py", "record", "--op-dir", op, "--correctness", runs["v1"], *args)
    assert_one_line_error(proc, 2, needle)
    assert tree_digest(op) == before


def test_record_refuses_a_round_or_correctness_run_of_other_code(work):
    op, runs = work
    proc = run_script("select_best.py", "record", "--op-dir", op, "--version-id", "v2", "--round", "round_003",
                      "--items", "general-18", "--correctness", runs["v0"])
    assert_one_line_error(proc, 2, "correctness_hash_mismatch")
    set_kernel(op, FP32, "xf = x.astype(np.float32)  # edited")
    proc = run_script("select_best.py", "record", "--op-dir", op, "--version-id", "v2", "--round", "round_003",
                      "--items", "general-18", "--correctness", runs["v1"])
    assert_one_line_error(proc, 2, "--correctness")


def test_confirm_compares_an_independent_final_round(work):
    op, _ = work
    chosen = json.loads(ok("select_best.py", "choose", "--op-dir", op, "--json").stdout)
    assert chosen["chosen"] == "v1" and chosen["confirm_partner"] is None  # ranked on an independent round
    proc = run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", "round_003", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    out = json.loads(proc.stdout)
    assert out["chosen"] == "v1" and out["final_collection_id"].endswith("round_003")
    assert (proc.returncode == 0) == out["consistent"]
    low, high = out["ratio_ci"]
    lower, upper = 1 / (1 + out["delta"]), 1 + out["delta"]
    assert out["consistent"] == (lower <= low and high <= upper)
    assert out["status"] == ("consistent" if out["consistent"] else
                             "inconsistent" if high < lower or low > upper else "unresolved")
    log = json.loads((op / "docs/perf/confirm.json").read_text())
    assert log["attempts"] == [out] and out["attempt"] == 1 and out["limit"] == 2
    again = json.loads(run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", "round_003",
                                  "--json").stdout)
    assert again == out and len(json.loads((op / "docs/perf/confirm.json").read_text())["attempts"]) == 1
    from perftune.decide import candidates
    problems = candidates.confirm_problems(op, out["executable_sha256"], 1)
    assert problems == ([] if not out["refuted"] else [problems[0]])
    assert out["refuted"] == (out["final_score_ci"][1] < 1)  # v1 vs the baseline round: never proven slower here
    assert candidates.confirm_problems(op, "0" * 64, 1) == ["confirm never ran on the chosen version's code"]
    assert_one_line_error(run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", "round_002"),
                          2, "ranking round itself")
    assert_one_line_error(run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", "round_001"),
                          2, "measured other code")


def test_confirm_refuses_a_round_that_does_not_repeat_the_ranking_comparison(work):
    op, _ = work  # v1 was ranked on an independent round; a round paired with v0 is another protocol
    ok("select_best.py", "choose", "--op-dir", op)
    ok("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v0")
    before = tree_digest(op)
    assert_one_line_error(run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", "round_004"),
                          2, "does not repeat the ranking comparison of v1", "confirm_partner")
    assert tree_digest(op) == before


def test_the_same_code_is_recorded_once_and_a_re_measurement_supersedes_it(work):
    op, runs = work  # the current code is v1 and round_003 is a newer formal round of it
    args = ("record", "--op-dir", op, "--round", "round_003", "--correctness", runs["v1"], "--compliance", "PASS")
    before = tree_digest(op)
    assert_one_line_error(run_script("select_best.py", *args, "--version-id", "v1-again", "--items", "general-18"),
                          2, "already recorded as 'v1'", "--supersedes v1")
    assert_one_line_error(run_script("select_best.py", *args, "--version-id", "v1b", "--supersedes", "v0"),
                          2, "--supersedes", "other code")
    assert_one_line_error(run_script("select_best.py", *args, "--version-id", "v1b", "--supersedes", "nope"),
                          2, "no recorded version 'nope'")
    assert tree_digest(op) == before
    ok("select_best.py", *args, "--version-id", "v1b", "--supersedes", "v1")
    register = json.loads((op / "docs/perf/candidates.json").read_text())
    schemas.validate(register, "candidates")
    assert register["candidates"][-1]["supersedes"] == "v1" and register["candidates"][-1]["items"] == ["general-18"]
    chosen = json.loads(ok("select_best.py", "choose", "--op-dir", op, "--json").stdout)
    rows = {r["version_id"]: r for r in chosen["candidates"]}
    assert not rows["v1"]["eligible"] and "superseded by v1b" in rows["v1"]["ineligible_reason"]
    assert rows["v1b"]["eligible"] and chosen["chosen"] in ("v0", "v1b")


def test_a_version_paired_with_code_that_is_no_recorded_version_never_ranks(work, tmp_path):
    op, _ = work  # the current code is v1; a new v2 is "paired" with a slowed copy that was never recorded
    slow = tmp_path / "slow"
    slow.mkdir()
    text = (op / "docs/perf/versions/v0/test_softmax.py").read_text()
    (slow / "test_softmax.py").write_text(text.replace(FP32, FP64).replace(FP64, FP64 + "; xf = xf + 0.0"))
    set_kernel(op, FP32, "xf = x.astype(np.float32)  # v2")
    v2_run = correctness_run(op)
    ok("collect_perf.py", "formal", "--op-dir", op, "--paired-with", slow)
    ok("select_best.py", "record", "--op-dir", op, "--version-id", "v2", "--round", "round_004", "--items",
       "general-18", "--correctness", v2_run, "--compliance", "PASS")
    out = json.loads(run_script("select_best.py", "choose", "--op-dir", op, "--json").stdout)
    v2 = next(c for c in out["candidates"] if c["version_id"] == "v2")
    assert not v2["eligible"] and "paired_partner_unknown" in v2["ineligible_reason"] and out["chosen"] != "v2"
    # its paired speed-up is against the slowed copy: no compare may present it as a speed-up over v0 or v1
    for baseline in ("round_001", "round_002"):
        assert_one_line_error(run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", baseline,
                                         "--candidate", "round_004"), 2, "was paired with other code", "--paired-with")


def test_a_paired_round_compares_only_against_a_round_of_its_partner_code(work):
    op, _ = work  # the current code is v1; round_004 is paired with v0's saved copy
    ok("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v0")
    assert_one_line_error(run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_002",
                                     "--candidate", "round_004"), 2, "was paired with other code")
    perf = json.loads(ok("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_001", "--candidate",
                         "round_004", "--json").stdout)
    assert perf["paired"] is True and perf["paired_baseline_version"].endswith("versions/v0")
