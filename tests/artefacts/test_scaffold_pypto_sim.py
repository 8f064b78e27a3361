"""new_operator.py --backend pypto-sim: a real, running PyPTO operator (bf16, two named inputs)
from the scaffold to a Stage 5 PASS, importing the shipped helper, never copying private API."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from conftest import assert_one_line_error, run_script
import stage5_run

HAVE_PYPTO = importlib.util.find_spec("pypto") is not None
CASE = "r64_c256_bf16"
PRIVATE = ("_CMakeContext", "_setup_verify_data", "SetVerifyData", "TILE_FWK_OUTPUT_DIR")


def scaffold(tmp_path, *extra):
    return run_script("new_operator.py", "--op", "rms", "--dir", tmp_path / "custom", "--backend", "pypto-sim",
                      "--case-id", CASE, "--shape", "x:[64,256],gamma:[256]", "--dtype", "bfloat16", *extra)


def test_bad_cases_are_one_line_errors(tmp_path):
    for flags, field in ((("--shape", "x:[256]"), "--shape"), (("--dtype", "int8"), "--dtype"),
                         (("--case-id", "1x"), "--case-id"), (("--shape", "x:[0,3]"), "--shape/--dtype")):
        proc = run_script("new_operator.py", "--op", "rms", "--dir", tmp_path, "--backend", "pypto-sim", *flags)
        assert_one_line_error(proc, 2, field)
    assert not (tmp_path / "rms").exists()


def test_the_golden_expresses_bfloat16_in_numpy_and_reads_named_groups(tmp_path):
    assert scaffold(tmp_path).returncode == 0
    op = tmp_path / "custom" / "rms"
    spec = importlib.util.spec_from_file_location("rms_golden", op / "rms_golden.py")
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    assert golden._groups("x:[64,256],gamma:[256]", "x:bfloat16,gamma:float32") == [
        ("x", (64, 256), "bfloat16"), ("gamma", (256,), "float32")]
    x, gamma = golden._make_inputs("x:[64,256],gamma:[256]", "bfloat16")
    assert x.dtype == np.float32 and x.shape == (64, 256) and gamma.shape == (256,)
    assert not (x.view(np.uint32) & 0xFFFF).any()          # every value is a bfloat16 number
    torch = pytest.importorskip("torch") if HAVE_PYPTO else None
    if torch is not None:   # round to nearest even, as torch rounds
        wide = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
        assert np.array_equal(golden._as_bfloat16(wide), torch.from_numpy(wide).to(torch.bfloat16).float().numpy())
    [(case_id, args, kwargs)] = golden.golden_cases([{"id": CASE, "shape": "x:[64,256],gamma:[256]",
                                                       "dtype": "bfloat16"}])
    assert case_id == CASE and len(args) == 2 and kwargs == {}


def test_scaffold_to_stage5_pass_on_pypto_sim(tmp_path):
    made = scaffold(tmp_path, "--json")
    assert made.returncode == 0, made.stderr
    op = tmp_path / "custom" / "rms"
    assert {"test_rms.py", "rms_golden.py", "variants/variants.json"} <= set(json.loads(made.stdout)["files"])
    test = (op / "test_rms.py").read_text()
    assert "pypto_sim_support as sim" in test and not [name for name in PRIVATE if name in test]
    if not HAVE_PYPTO:   # without the extra the freeze stops with the install line
        proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE,
                          "--selection-mode", "single_p0", "--backend", "pypto-sim", "--op-name", "rms_kernel")
        assert_one_line_error(proc, 3, "pypto is not installed")
        return
    # Stage 1/4 content a user writes: one KB obligation the skeleton meets
    (op / "KB_SELECTION.json").write_text(json.dumps({"schema_version": 1, "classes": [{
        "class_id": "rms", "reason": "elementwise skeleton", "optional_patterns": [], "required_constraints": [
            {"req_id": "out-by-kernel", "kind": "obligation", "reference": "SPEC.md#1-semantics",
             "text": "the kernel writes every output element", "expected_metric": "no host-side work"}]}]}))
    code, verdict = stage5_run.run(op, [CASE], "rms_kernel", ["kb-rms-out-by-kernel"], backend="pypto-sim")
    assert code == 0 and verdict["verdict"] == "PASS", verdict.get("failures") or verdict
    # code-level hotspots (issue 37): cycles per tile op of the final round, in the evidence and the report
    [case] = json.loads((op / "docs/perf/terminal_evidence.json").read_text())["cases"]
    tops = case["hotspots"]["tile_ops"]["top"]
    assert "COPY_IN" in [t["name"] for t in tops] and sum(t["cycles"] for t in tops) <= case["hotspots"]["tile_ops"]["total_cycles"]
    report = (op / "PERFORMANCE_REPORT.md").read_text()
    assert "### Code-level hotspots" in report and f"| {CASE} | {tops[0]['name']} | {tops[0]['cycles']} |" in report
    [run] = [json.loads(p.read_text()) for p in (op / "docs/perf/correctness").glob("c*.json")]
    # the P0 test ran inside its probe; the three other tests shared one batch process (one pypto import)
    assert [(c["p0"], c.get("ran_in"), c.get("batch")) for c in run["cases"]] == [
        (True, "probe", None), (False, "batch", 1), (False, "batch", 1), (False, "batch", 1)] and run["all_passed"]
    first, final = [json.loads(p.read_text()) for p in sorted((op / "docs/perf").glob("round_*/collection.json"))]
    assert final["environment"]["backend"] == "pypto-sim" and final["environment"]["pypto"] == "0.2.0"
    # the selector preflight is asked once per code hash: the `preflight` step asked it, the first
    # round and both arms of the paired final round (baseline = the delivered code) reuse that answer
    [asked] = first["preflight"]
    assert asked["reused"] is True and (op / asked["record"]).is_file()
    assert [(a["arm"], a["key"], a["reused"]) for a in final["preflight"]] == [
        ("baseline", asked["key"], True), ("candidate", asked["key"], True)]
    assert [p.name for p in (op / "docs/perf/preflight").iterdir()] == [f"{asked['key']}.json"]
    # repeats prove determinism once: the final round simulated nothing; each arm of each repeat is a
    # recorded reuse of round_001's launches, with the sha256 of the files (the verifier accepted them)
    assert [(r["arm"], r["repeat"], r["source"].split("/")[2], r["source_collection_id"]) for r in final["reused"]] \
        == [(arm, i, "round_001", first["collection_id"]) for arm in ("baseline", "candidate") for i in (1, 2)]
    assert "reused" not in first and verdict["remeasure"]["method"] == "resimulation"
    # a quick screen of the same code asks nothing new either: both repeats reused from round_001
    quick = json.loads(run_script("collect_perf.py", "quick", "--op-dir", op, "--json", cwd=op).stdout)
    assert quick["status"] == "complete" and [(r["repeat"], r["source"].split("/")[2]) for r in quick["reused"]] \
        == [(1, "round_001"), (2, "round_001")]
    [measured] = (op / "docs/perf/round_001").glob("case_*/measurement.json")
    assert quick["cases"][0]["duration_samples_us"] == json.loads(measured.read_text())["duration_samples_us"]
    # correctness of the same code, goldens, manifest and simulator: the passed record answers it again
    runs = sorted((op / "docs/perf/correctness").glob("c*.json"))
    again = run_script("check_correctness.py", "--op-dir", op, "--json", cwd=op)
    assert again.returncode == 0, again.stderr
    first_run, reused = json.loads(runs[-1].read_text()), json.loads(again.stdout)
    assert reused["reused_from"] == first_run["run_id"] and reused["question"] == first_run["question"]
    assert reused["cases"] == first_run["cases"] and reused["run_id"] != first_run["run_id"]
    correctness = json.loads(sorted((op / "docs/perf/correctness").glob("c*.json"))[-1].read_text())
    assert correctness["all_passed"] and correctness["cases"][0]["probe"]["gate_dtype"] == "bfloat16"
