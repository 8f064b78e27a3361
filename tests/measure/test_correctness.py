"""check_correctness.py: output parsing (pure) and real runs of the example's tests."""

import json
import os

import pytest
from hypothesis import given, strategies as st

from conftest import assert_one_line_error, freeze_example, run_script, tree_digest
from perftune.measure import correctness, evidence
from perftune.contract import manifest, schemas


def test_parse_output_takes_the_last_printed_values_and_missing_is_none():
    text = "matched_ratio=0.5\nmatched_ratio=0.999500\nmax_abs_error=2.865e-08\nPASS\n"
    assert correctness.parse_output(text) == {"matched_ratio": 0.9995, "max_abs_error": 2.865e-08,
                                              "printed_pass": True}
    assert correctness.parse_output("AssertionError: boom") == {"matched_ratio": None, "max_abs_error": None,
                                                                "printed_pass": False}
    assert correctness.parse_output("max_abs_error=nan\nmatched_ratio: 1")["max_abs_error"] is None


@given(st.text(max_size=300))
def test_parse_output_never_raises_and_returns_finite_or_none(text):
    parsed = correctness.parse_output(text)
    for key in ("matched_ratio", "max_abs_error"):
        value = parsed[key]
        assert value is None or (isinstance(value, float) and abs(value) != float("inf") and value == value)


def test_a_p0_test_run_inside_its_probe_passes_only_when_the_probe_ran_it_to_the_end():
    clean = correctness._from_probe({"test_error": None, "probes": []}, "matched_ratio=1.0\nPASS\n")
    assert (clean["passed"], clean["returncode"], clean["matched_ratio"], clean["ran_in"]) == (True, 0, 1.0, "probe")
    failed = correctness._from_probe({"test_error": "AssertionError: off by one"}, "")
    assert (failed["passed"], failed["returncode"]) == (False, 1) and "off by one" in failed["output_tail"]
    crashed = correctness._from_probe({"problem": "probe runner exited 1: Killed"}, "")
    assert crashed["passed"] is False    # a probe that never reported on the test is no pass


def test_tests_run_side_by_side_only_where_they_share_no_card(tmp_path, monkeypatch):
    monkeypatch.setattr(correctness, "DEVICE_NODES", tmp_path)
    assert correctness.shares_no_card(None)                 # before the freeze, a machine without a card
    (tmp_path / "davinci0").touch()
    assert not correctness.shares_no_card(None)             # a card: one after another
    for backend, side in (("cpu", True), ("pypto-sim", True), ("msprof", False)):
        man = type("M", (), {"protocol": type("P", (), {"backend": backend})()})()
        assert correctness.shares_no_card(man) is side
    monkeypatch.setenv("PERFTUNE_JOBS", "1")
    sim = type("M", (), {"protocol": type("P", (), {"backend": "pypto-sim"})()})()
    assert correctness.side_by_side(sim) == 1
    monkeypatch.setenv("PERFTUNE_JOBS", "9")
    assert correctness.side_by_side(sim) == 4 and correctness.side_by_side(man) == 1   # msprof: one card


def test_tail_keeps_the_last_lines():
    assert correctness.tail("\n".join(map(str, range(30))), 3) == "27\n28\n29"


def test_all_cases_pass_and_the_record_carries_the_code_identity(op_dir):
    freeze_example(op_dir)
    proc = run_script("check_correctness.py", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    record = json.loads((op_dir / out["record"]).read_text())
    schemas.validate(record, "correctness")
    man = manifest.load_manifest(op_dir / "PERFORMANCE_CASES.json")
    sha = evidence.executable_sha256(op_dir, evidence.source_files(op_dir, man))
    assert record["executable_sha256"] == sha and record["run_id"] == f"c001-{sha[:8]}"
    assert record["all_passed"] is True and [c["id"] for c in record["cases"]] == list(man.case_ids)
    assert all(c["matched_ratio"] == 1.0 and c["printed_pass"] and c["max_abs_error"] > 0 for c in record["cases"])
    assert correctness.load_record(op_dir, record["run_id"]) == record
    again = json.loads(run_script("check_correctness.py", "--op-dir", op_dir, "--json").stdout)
    assert again["run_id"] == f"c002-{sha[:8]}"
    assert not list(op_dir.glob("__pycache__"))


def test_a_failing_case_exits_1_with_its_numbers_and_the_device_rule_holds(op_dir):
    freeze_example(op_dir)
    test = op_dir / "test_softmax.py"
    text = test.read_text().replace("import numpy as np", "import os\nimport numpy as np", 1)
    text = text.replace('    shape, dtype = CASES[case_id]\n', '    shape, dtype = CASES[case_id]\n'
                        '    print("DEVICE", os.environ.get("TILE_FWK_DEVICE_ID"), os.environ.get("ASCEND_RT_VISIBLE_DEVICES"))\n'
                        '    if case_id == "r512_c1024_fp32":\n        TOLERANCE[dtype] = (0.0, 0.0)\n')
    test.write_text(text)
    proc = run_script("check_correctness.py", "--op-dir", op_dir, "--json", env={"ASCEND_RT_VISIBLE_DEVICES": "3"})
    assert proc.returncode == 1, proc.stderr
    cases = {c["id"]: c for c in json.loads(proc.stdout)["cases"]}
    bad = cases["r512_c1024_fp32"]
    assert bad["passed"] is False and bad["printed_pass"] is False and bad["returncode"] == 1
    assert bad["matched_ratio"] is not None and bad["matched_ratio"] < 0.999 and "precision gate failed" in bad["output_tail"]
    assert all(c["passed"] for cid, c in cases.items() if cid != "r512_c1024_fp32")
    assert all("DEVICE 0 None" in c["output_tail"] for c in cases.values())


def test_a_search_points_run_stops_at_its_first_failed_test_and_records_what_did_not_run(op_dir):
    """``stop_at_first_failure`` (tune_point only): the first P0 case fails, no other test runs, the record
    names them and is never all_passed; without it (check_correctness.py) the same code runs every test."""
    frozen = freeze_example(op_dir)
    first, *rest = [c["id"] for c in frozen["cases"]]
    test = op_dir / "test_softmax.py"
    original = test.read_text()
    test.write_text(original.replace('    shape, dtype = CASES[case_id]\n', '    shape, dtype = CASES[case_id]\n'
                                     f'    if case_id == "{first}":\n        TOLERANCE[dtype] = (0.0, 0.0)\n', 1))
    started = []   # on_first_pass: a search point's screen starts there (tune_point), only after a passed first test
    _, stopped = correctness.run_all(op_dir, at="2026-01-01T00:00:00Z", stop_at_first_failure=True,
                                     on_first_pass=lambda: started.append("screen"))
    assert started == []
    schemas.validate(stopped, "correctness")
    assert [c["id"] for c in stopped["cases"]] == [first] and stopped["cases"][0]["passed"] is False
    assert stopped["stopped"] == {"failed": first, "not_run": rest} and stopped["all_passed"] is False
    assert correctness.missing_tests(op_dir, stopped)   # P5 would see the tests it did not run
    _, full = correctness.run_all(op_dir, at="2026-01-01T00:00:01Z")
    assert [c["id"] for c in full["cases"]] == [first, *rest] and "stopped" not in full
    assert [c["id"] for c in full["cases"] if not c["passed"]] == [first]
    test.write_text(original)
    _, passed = correctness.run_all(op_dir, at="2026-01-01T00:00:02Z", stop_at_first_failure=True,
                                    on_first_pass=lambda: started.append("screen"))
    assert started == ["screen"] and passed["all_passed"] and [c["id"] for c in passed["cases"]] == [first, *rest]


def test_a_missing_test_file_is_a_one_line_contract_error(op_dir):
    before = tree_digest(op_dir)
    assert_one_line_error(run_script("check_correctness.py", "--op-dir", op_dir, "--test-file", "test_nope.py"),
                          2, "test file not found")
    assert tree_digest(op_dir) == before
    freeze_example(op_dir)
    assert_one_line_error(run_script("check_correctness.py", "--op-dir", op_dir, "--test-file", "test_nope.py"),
                          2, "test file not found")


BROKEN_NON_P0 = '''

def test_odd_rows_non_p0():
    x = _make_inputs((3, 5), "float32")
    out = softmax_wrapper(x)
    out[0, 0] += 1.0
    _assert_precision(out, softmax_golden_cpu(x), "float32")
'''


def test_every_test_runs_without_a_manifest_and_a_broken_non_p0_test_fails_the_run_and_p5(op_dir):
    test = op_dir / "test_softmax.py"
    test.write_text(test.read_text() + BROKEN_NON_P0)
    proc = run_script("check_correctness.py", "--op-dir", op_dir, "--json")  # before the freeze: no manifest
    assert proc.returncode == 1, proc.stderr
    cases = {c["id"]: c for c in json.loads(proc.stdout)["cases"]}
    assert cases["test_odd_rows_non_p0"]["passed"] is False and cases["test_odd_rows_non_p0"]["p0"] is None
    assert cases["r64_c4096_fp32"]["p0"] is True and len(cases) == 5  # SPEC.md labels the P0 tests
    freeze_example(op_dir)
    proc = run_script("check_correctness.py", "--op-dir", op_dir)
    assert proc.returncode == 1 and "non-P0 FAIL" in proc.stdout and "FAILED" in proc.stdout
    proc = run_script("stage5_check.py", "--op-dir", op_dir, "--target-case-ids", "r64_c4096_fp32",
                      "r64_c4096_fp16", "--selection-mode", "user_selected", "--json")
    gates = {g["id"]: g for g in json.loads(proc.stdout)["gates"]}
    assert proc.returncode == 1 and gates["P5"]["status"] == "FAIL"
    assert "non-P0 test test_odd_rows_non_p0 fails" in gates["P5"]["detail"]


@pytest.mark.parametrize("after_first_call,printed", [
    # the op dies when the probe calls it again with fresh inputs (as a bf16 op did when the probe
    # could not read its output)
    ('        raise TypeError("Got unsupported ScalarType BFloat16")\n', "probe FAILED: probe runner exited 1: TypeError: Got unsupported"),
    # the fresh-seed calls get a wrong output (a memoised kernel, or one that meets the gate on seed 42
    # only): the run fails here, at step 1, not only at stage5_check's P9 after the whole loop
    ("        out[...] = 0\n        return\n", "probe FAILED: misses the frozen precision gate on seed"),
], ids=["probe_error", "probe_misses_gate"])
def test_a_failed_probe_is_never_all_passed(op_dir, after_first_call, printed):
    """The tests pass on the seed-42 inputs, but the probe's later calls fail: the run is not
    all_passed and exits 1, naming the probe's failure."""
    freeze_example(op_dir)
    test = op_dir / "test_softmax.py"
    text = test.read_text().replace('    xf = x.astype(np.float64)\n', '    _CALLS.append(1)\n    if len(_CALLS) > 1:\n'
                                    + after_first_call + '    xf = x.astype(np.float64)\n', 1)
    test.write_text(text.replace("\ndef softmax_kernel(", "\n_CALLS = []\n\n\ndef softmax_kernel(", 1))
    proc = run_script("check_correctness.py", "--op-dir", op_dir)
    assert proc.returncode == 1 and printed in proc.stdout, proc.stdout + proc.stderr
    record = json.loads(sorted((op_dir / "docs/perf/correctness").glob("c*.json"))[-1].read_text())
    assert all(c["passed"] for c in record["cases"]) and record["all_passed"] is False
    assert [c["id"] for c in record["cases"] if correctness.probe_failure(c)] == [
        c["id"] for c in record["cases"] if c["p0"]]


def test_a_batch_runs_its_tests_in_one_process_each_result_its_own(tmp_path):
    """A deterministic backend's tests share one process (one import of pypto): each test's output,
    exit and figures are its own; a test that kills the process runs again alone, with its own code."""
    (tmp_path / "test_b.py").write_text(
        "import os\n_SEEN = []\n"
        "def test_one():\n    _SEEN.append(1)\n    print('matched_ratio=0.5')\n    print('PASS')\n"
        "def test_two():\n    raise AssertionError('two is wrong')\n"
        "def test_three():\n    print('matched_ratio=1.0', len(_SEEN))\n    os._exit(3 if _SEEN else 0)\n"
        "def test_four():\n    print('max_abs_error=0.25')\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    one, two, three, four = correctness.run_batch(tmp_path, "test_b", ["test_one", "test_two", "test_three",
                                                                       "test_four"], env, 60, 2)
    assert (one["passed"], one["matched_ratio"], one["printed_pass"], one["ran_in"], one["batch"]) == \
        (True, 0.5, True, "batch", 2)
    assert two["passed"] is False and "two is wrong" in two["output_tail"] and two["matched_ratio"] is None
    # test_three ended the batch process: it ran again alone (fresh module state: exit 0), so did test_four
    assert three["passed"] is True and "ran_in" not in three and three["output_tail"].startswith("matched_ratio=1.0 0")
    assert four["passed"] is True and four["max_abs_error"] == 0.25 and "ran_in" not in four
    jobs = correctness._test_jobs(tmp_path, "test_b", ["test_one", "test_two", "test_four"], env, 60, batches=2)
    assert [r["batch"] for job in jobs for r in job()] == [1, 2, 2]     # in order, two processes
    assert [len(job()) for job in correctness._test_jobs(tmp_path, "test_b", ["test_one", "test_four"], env, 60,
                                                         batches=0)] == [1, 1]   # elsewhere: a process each
