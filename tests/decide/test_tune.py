"""tune.py end to end on the cpu example: a frozen two-point search, its archive, and P7.search on planted cherry-picks."""

import json
import shutil

import pytest

from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script
from perftune.decide import next_step, tune
from perftune.demo import skill
from perftune.verify import search_check
from perftune.verify.checks import findings

KERNEL = "    xf = x.astype(np.float64)\n"
# the base and the point EXTRA_PASSES=4 do four more exponent passes: several times slower than the point
# EXTRA_PASSES=0, a gap no load swing closes
PARAMETERISED = KERNEL + "    _ = [np.exp(xf) for _ in range(EXTRA_PASSES)]\n"


def ok(script, *args):
    proc = run_script(script, *map(str, args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    op = tmp_path_factory.mktemp("tune") / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    test = op / "test_softmax.py"
    text = test.read_text().replace(KERNEL, PARAMETERISED).replace("\n\ndef softmax_kernel", "\nEXTRA_PASSES = 4\n\n\ndef softmax_kernel", 1)
    test.write_text(text)
    freeze_example(op, "--noise-band", "0.2", "--noise-band-reason", "a loaded shared 2-core test machine")
    run = json.loads(ok("check_correctness.py", "--op-dir", op, "--json").stdout)["run_id"]
    ok("collect_perf.py", "formal", "--op-dir", op, "--json")
    ok("ledger.py", "init", "--op-dir", op, "--json")
    ok("select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", "round_001", "--correctness",
       run, "--compliance", "one kernel, one launch", "--json")
    ledger = json.loads((op / "docs/perf/ledger.json").read_text())
    item = next(i["item_id"] for i in ledger["items"] if i["source_kind"] == "general_method")
    declared = json.loads(ok("tune.py", "declare", "--op-dir", op, "--item", item, "--param", "EXTRA_PASSES=4,0",
                             "--batch", "2", "--hypothesis", "fewer passes, less time", "--json").stdout)
    # perf_next's item loop (SKILL steps 11-20; this fixture skips the golden and platform steps before it)
    before = next_step.explore(next_step.gather(op))
    # the multi-host path on one machine: Dask distributed, a LocalCluster of two worker processes
    out = json.loads(ok("tune.py", "run", "--op-dir", op, "--item", item, "--engine", "dask", "--workers", "2",
                        "--json").stdout)
    after = next_step.explore(next_step.gather(op))
    return op, item, declared, out, (before, after)


def _copy(searched, tmp_path):
    op = tmp_path / "softmax"
    shutil.copytree(searched[0], op, symlinks=True)
    return op, op / "docs/perf/search" / searched[1]


def test_every_point_is_measured_once_archived_and_the_best_is_in_place(searched):
    op, item, declared, out, _ = searched
    assert declared["points"] == 2 and declared["search"]["budget"] == 2
    assert (out["engine"], out["workers"], out["storage"]) == ("dask", 2, "sqlite:study.db")
    assert sorted(p["values"]["EXTRA_PASSES"] for p in out["points"]) == [0, 4]
    assert all(p["status"] == "measured" and p["correctness"]["all_passed"] for p in out["points"])
    fast = next(p for p in out["points"] if p["values"]["EXTRA_PASSES"] == 0)
    slow = next(p for p in out["points"] if p["values"]["EXTRA_PASSES"] == 4)
    # the objective is the paired screen's score vs the base (EXTRA_PASSES=4 is the base's own code)
    assert slow["objective"] < 1.5 < fast["objective"]
    # the base's own code is the base: its recorded correctness run, not a new one; any other point runs the gate
    candidates = json.loads((op / "docs/perf/candidates.json").read_text())["candidates"]
    assert slow["correctness"]["base_code"] == "v000" and "base_code" not in fast["correctness"]
    assert slow["correctness"]["run_id"] == candidates[0]["correctness"]["run_id"] != fast["correctness"]["run_id"]
    assert out["best"]["trial"] == fast["trial"] and out["ranking"][0] == fast["trial"]
    assert "EXTRA_PASSES = 0\n" in (op / "test_softmax.py").read_text()
    for p in out["points"]:
        folder = op / "docs/perf/search" / item / "points" / f"t_{p['trial']:03d}"
        assert {"point.json", "test_softmax.py", "correctness.json", "quick_performance.json",
                "quick_compare.json"} <= {f.name for f in folder.iterdir()}
        assert f"EXTRA_PASSES = {p['values']['EXTRA_PASSES']}\n" in (folder / "test_softmax.py").read_text()
    assert search_check.problems(op) == []          # the honest twin of every planted case below


def test_a_search_is_measured_once_and_its_block_never_changes(searched, tmp_path):
    op, item = searched[0], searched[1]
    assert_one_line_error(run_script("tune.py", "run", "--op-dir", op, "--item", item, "--json"), 2, "already measured")
    assert_one_line_error(run_script("tune.py", "declare", "--op-dir", op, "--item", item, "--param", "EXTRA_PASSES=1",
                                     "--hypothesis", "h", "--json"), 2)
    copy, _ = _copy(searched, tmp_path)
    assert_one_line_error(run_script("tune.py", "declare", "--op-dir", copy, "--item", item, "--param", "NO_SUCH=1,2",
                                     "--hypothesis", "h", "--json"), 2)


def _p7(op):
    return findings("P7.search", search_check.problems(op))


def test_a_dropped_point_fails_p7_search_as_cheating(searched, tmp_path):
    op, folder = _copy(searched, tmp_path)
    record = json.loads((folder / "search.json").read_text())
    slow = next(p for p in record["points"] if p["values"]["EXTRA_PASSES"] == 4)
    record["points"].remove(slow)           # the bad point never happened
    shutil.rmtree(folder / "points" / f"t_{slow['trial']:03d}")
    (folder / "search.json").write_text(json.dumps(record))
    found = _p7(op)
    assert found and {f.check for f in found} == {"P7.search"} and {f.category for f in found} == {"cheating"}
    assert any("not 0..1" in f.message for f in found)


def test_a_point_re_measured_until_better_fails_p7_search(searched, tmp_path):
    import optuna
    op, folder = _copy(searched, tmp_path)
    record = json.loads((folder / "search.json").read_text())
    slow = next(p for p in record["points"] if p["values"]["EXTRA_PASSES"] == 4)
    # the agent measured the slow point again (one more trial in the study) and kept the better figure
    study = optuna.load_study(study_name=record["study"], storage=f"sqlite:///{folder / 'study.db'}")
    study.enqueue_trial(slow["values"])
    trial = study.ask()
    study.tell(trial, slow["objective"] + 10)
    slow["objective"] += 10
    (folder / "points" / f"t_{slow['trial']:03d}" / "point.json").write_text(json.dumps(slow))
    record["ranking"], record["best"] = [slow["trial"]], {**record["best"], "trial": slow["trial"]}
    (folder / "search.json").write_text(json.dumps(record))
    messages = " | ".join(f.message for f in _p7(op) if f.check == "P7.search" and f.category == "cheating")
    assert "study storage holds 3 trials" in messages and "not its screen's score" in messages


def test_choosing_another_point_than_the_rule_fails_p7_search(searched, tmp_path):
    op, folder = _copy(searched, tmp_path)
    record = json.loads((folder / "search.json").read_text())
    record["best"]["trial"] = record["ranking"][1]
    (folder / "search.json").write_text(json.dumps(record))
    assert [f.category for f in _p7(op)] == ["cheating"]


def test_perf_next_prints_tune_for_a_declared_search_then_goes_on_with_the_best_point(searched):
    before, after = searched[4]
    assert [s["key"] for s in before] == ["tune"] and before[0]["values"]["ITEM_ID"] == searched[1]
    assert "scripts/tune.py run --op-dir DIR --item ITEM_ID" in skill.load().command("tune")
    assert [s["key"] for s in after] == ["correctness"]     # the best point's code in place: the normal path


def test_the_report_lists_every_point_and_draws_the_space(searched, tmp_path):
    from perftune.report import final_md, search_plots
    record = searched[3]
    inputs = final_md.FinalInputs("softmax", {}, {}, {}, None, None, None, [], {}, (record,))
    text = "\n".join(final_md._searches(inputs))
    assert text.count("| t_00") == 2 and f"search/{searched[1]}/search.json" in text
    points = [{**p, "values": {**p["values"], "ROWS": r}} for p in record["points"] for r in (1, 2)]
    png = search_plots.space(["EXTRA_PASSES", "ROWS"], [[4, 0], [1, 2]], points, 0, tmp_path / "map.png", "t")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_a_range_expands_high_included_and_bad_declarations_are_one_line_contract_errors():
    from perftune.decide import search
    from perftune.errors import ContractError
    assert search.parse_param("TILE_BYTES=4096:16384:4096")["values"] == [4096, 8192, 12288, 16384]
    assert search.parse_param("_build.rows=1,2,'a'")["values"] == [1, 2, "a"]
    for bad in ("TILE=", "TILE=1,1", "TILE=8:4:1", "TILE=1:2:0", "1TILE=1", "TILE=[1]"):
        with pytest.raises(ContractError):
            search.parse_param(bad)
    code = "A = 1\nB = 'x'\n\ndef f(x, rows=8):\n    return x\n"
    assert search.apply(code, {"A": 3, "f.rows": 16}, "t.py") == "A = 3\nB = 'x'\n\ndef f(x, rows=16):\n    return x\n"
    with pytest.raises(ContractError):
        search.apply(code + "A = 2\n", {"A": 3}, "t.py")       # two literals named A: which one is the point's?


def test_a_plan_experiment_may_carry_a_search_instead_of_a_variant_file():
    from perftune.demo import plan
    from perftune.errors import ContractError
    base = json.loads((EXAMPLE.parent / "pypto_softmax/variants/variants.json").read_text())
    parsed = plan.parse_plan(base)
    assert parsed.experiments[0].search[:2] == ("--param", "TILE_BYTES=4096:49152:4096")
    base["variants"][0]["search"] = "TILE_BYTES=1,2"
    with pytest.raises(ContractError, match="search"):
        plan.parse_plan(base)


@pytest.mark.parametrize("workers,points,jobs", [(2, 4, 1), (2, 2, 1), (2, 1, 2), (4, 3, 1), (8, 3, 2), (3, 0, 3)])
def test_a_batch_that_does_not_fill_the_cores_shares_the_rest_among_its_points(workers, points, jobs):
    assert tune.point_jobs(workers, points) == jobs
