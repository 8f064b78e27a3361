"""Issue 28 items 1, 9, 11: the parts of the sampled-values, dtype, file-write and plausibility checks that
the corpus (tests/cheats: wrong_after_n_calls_sampled, wrong_dtype_output, replay_file_outside_evidence,
arm_sabotage) does not isolate: the draw, the compact record, the harness's evidence-folder exclusion,
the plausibility rule. Real code on real arrays and files; no mocks of our own code.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from conftest import freeze_example
from perftune.contract.manifest import Case
from perftune.measure import sampled_values as kept
from perftune.measure.backends import harness_guard
from perftune.measure.backends.base import runner_env
from perftune.verify import plausibility, sampled_values


def test_the_draw_always_keeps_the_last_timed_call_and_one_unpredictable_other():
    draws = [kept.draw(20) for _ in range(200)]
    assert all(20 in d and d <= set(range(1, 21)) and 1 <= len(d) <= 2 for d in draws)
    assert len({min(d) for d in draws}) > 5          # not a fixed call: the kernel cannot know which
    assert kept.draw(1) == {1} and kept.draw(0) == set()


def test_kept_values_are_capped_and_decode_to_the_output_at_their_positions():
    rng = np.random.default_rng(7)
    big, small = rng.standard_normal((64, 4096)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float16)
    record = {"outputs": [{"arg": "1", "kind": "tensor"}, {"arg": "return", "kind": "tensor"}]}
    block = kept.keep(record, (None, big), {}, small, 2, 5)
    assert (block["call"], block["of"]) == (2, 5)
    first, second = block["outputs"]
    assert (first["elements"], first["size"], second["elements"]) == (kept.CAP_ELEMENTS, big.size, small.size)
    for output, array in ((first, big), (second, small)):
        where, values = kept.decode(block, output)
        assert np.array_equal(array.reshape(-1)[where], values)
    assert len(json.dumps(block)) < 30_000   # ~22 KiB of JSON per kept call at the cap


def test_a_write_during_the_call_counts_outside_the_evidence_folder_only(tmp_path):
    evidence, elsewhere = tmp_path / "round_001" / "case_a", tmp_path / "replay"
    evidence.mkdir(parents=True)
    elsewhere.mkdir()
    harness_guard.EVIDENCE_ROOT[:] = [str(evidence)]
    try:
        guard = harness_guard.CallGuard({})
        (evidence / "attestation.json").write_text("{}")      # the harness's own file: not counted
        (elsewhere / "index.txt").write_text("replay")        # a replay file: counted, however small
        (tmp_path / "replay" / "index.txt").read_text()        # reading is not writing
        guard.returned()
        (elsewhere / "after.txt").write_text("after the call") # outside the call: not this call's
        record = guard.finished([])
    finally:
        harness_guard.EVIDENCE_ROOT[:] = []
    assert record["file_writes"] == [str(elsewhere / "index.txt")]


def test_the_cpu_runner_keeps_values_of_the_last_timed_call(op_dir, tmp_path):
    freeze_example(op_dir, repeats=3, warmup=1)
    out = tmp_path / "scratch" / "result.json"
    argv = [sys.executable, "-m", "perftune.measure.backends.cpu_runner", "--op-dir", str(op_dir), "--runner",
            str(op_dir / "test_softmax.py"), "--manifest", str(op_dir / "PERFORMANCE_CASES.json"), "--case-id",
            "r64_c4096_fp32", "--op-name", "softmax_kernel", "--warmup", "1", "--repeats", "3", "--output", str(out)]
    proc = subprocess.run(argv, cwd=op_dir, env=runner_env(0), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    records = [s["attestation"] for s in json.loads(out.read_text())["samples"]]
    calls = [r["sampled"]["call"] for r in records if "sampled" in r]
    assert 3 in calls and 1 <= len(calls) <= 2 and records[-1]["sampled"]["of"] == 3
    assert all(r["harness"]["file_writes"] == [] for r in records)


def test_the_output_dtype_the_spec_fixes():
    def case(dtype):
        return Case("c", [4], dtype, True, None, None)
    assert sampled_values.expected_dtype(case("float16")) == "float16"
    assert sampled_values.expected_dtype(case("x:float16,w:float16")) == "float16"
    assert sampled_values.expected_dtype(case("x:float16,w:float32")) is None
    # a float16 matmul with a float32 result: the work model's written tensor fixes the output dtype
    model = {"tensors": [{"tensor": "a", "direction": "read", "elements": "m*k", "dtype": "float16"},
                         {"tensor": "y", "direction": "write", "elements": "m*n", "dtype": "fp32"}]}
    assert sampled_values.expected_dtype(case("a:float16,b:float16"), model) == "float32"
    assert sampled_values.expected_dtype(case("float16"), {"tensors": [{"tensor": "y", "direction": "write",
                                                                        "elements": "n", "dtype": None}]}) == "float16"
    assert sampled_values._dtype_ok("bfloat16", {"dtype": "float32", "type": "numpy.ndarray"})
    assert not sampled_values._dtype_ok("float32", {"dtype": "float64", "type": "numpy.ndarray"})


def test_plausibility_flags_a_speedup_far_beyond_the_accepted_items_and_never_fails_alone():
    per_case = [{"case": "a", "speedup": 20.0}, {"case": "b", "speedup": 6.0}, {"case": "c", "speedup": 3.0}]
    accepted = [{"item": "i1", "speedups": {"a": 2.0, "b": 2.0}}, {"item": "i2", "speedups": {"b": 1.5}}]
    block = plausibility.judge(per_case, accepted, ["a", "b", "c"])
    assert [(c["case"], c["explained_speedup"], c["implausible"]) for c in block["cases"]] == [
        ("a", 2.0, True), ("b", 3.0, False), ("c", 1.0, False)]
    assert block["implausible"] == ["a"] and len(plausibility.render(block).splitlines()) == 1
    quiet = plausibility.judge(per_case, accepted, ["b"])   # only target cases
    assert quiet["implausible"] == [] and plausibility.render(quiet) == ""


def test_the_plausibility_line_says_whether_a_fresh_data_run_follows():
    """issue 35 item 13: "fresh-data re-measurement forced" only where P10 runs one (cpu, pypto-sim, P10 on)."""
    ran = {}
    for backend, remeasured in (("cpu", True), ("pypto-sim", True), ("msprof", True), ("cpu", False)):
        block = plausibility.judge([{"case": "a", "speedup": 20.0}], [], ["a"])
        plausibility.follow_up(block, backend, remeasured)
        ran[backend, remeasured] = (block["fresh_forced"], plausibility.render(block).rstrip("\n").split(": ")[-1])
    forced = (True, "fresh-data re-measurement forced")
    assert ran == {("cpu", True): forced, ("pypto-sim", True): forced,
                   ("msprof", True): (False, "no fresh-data run (msprof has none)"),
                   ("cpu", False): (False, "no fresh-data run (the re-measurement is off)")}
