"""stage5_check against cheats re-run through the real scripts (issue #16).

test_stage5_adversarial.py edits a finished deliverable one file at a time; here each cheat is
planted as an agent would plant it (in the delivered test_softmax.py, in the frozen reference, or
in the raw samples of the final round) and then the pipeline is re-run honestly: check_correctness,
a paired formal round, compare_perf (or a re-seal with the library's own evidence_seal and a new
compare). The evidence is then self-consistent (P3 and P4 pass), and the gates of #16 must still
catch the cheat with its category: P9 (inputs attested against the golden rebuild, the frozen
precision gate, caching probes) or P10 (the verifier's own re-measurement and wrapper/op timing).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import call_script, run_script
from perftune.measure import evidence
from perftune.report import formal

TARGET = ["r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16"]
TEST = "test_softmax.py"
KERNEL_DEF = 'def softmax_kernel(x, out):\n'  # whichever version the demo delivered
LAUNCH = "    softmax_kernel(x, out)\n    return out\n"
SHIPPED = Path(__file__).resolve().parents[1] / "cheats" / "kernels"


@pytest.fixture
def op(demo_delivery, tmp_path) -> Path:
    clean, _ = demo_delivery
    target = tmp_path / "softmax"
    shutil.copytree(clean, target, symlinks=True)
    shutil.rmtree(target / "docs/perf/stage5_remeasure", ignore_errors=True)
    return target


def script(name: str, *args, ok=(0,)) -> dict:
    """A pipeline step re-run after the plant, in this process (``conftest.call_script``); the verifier
    itself runs as its own process (:func:`check`)."""
    proc = call_script(name, *args, "--json")
    assert proc.returncode in ok, (name, proc.returncode, proc.stderr[-2000:])
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def check(op: Path, *, remeasure: bool) -> dict:
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", *TARGET, "--selection-mode",
                      "all_p0_no_questions", "--remeasure" if remeasure else "--no-remeasure", "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def perf(op: Path) -> dict:
    return json.loads((op / "performance.json").read_text())


def edit(path: Path, *pairs: tuple[str, str], append: str = "") -> None:
    text = path.read_text()
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text + append)


def rerun_code(op: Path) -> None:
    """What an agent does after changing the delivered code: correctness, paired formal round, compare."""
    script("check_correctness.py", "--op-dir", op, ok=(0, 1))
    round_ = script("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v000")
    script("compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(perf(op)["baseline_round"]).name,
           "--candidate", Path(round_["round"]).name, ok=(0, 1))


def assert_caught(verdict: dict, check: str, category: str, *, consistent: bool = True) -> None:
    """A failure under the catalogued ``check`` id with ``category`` (never a message substring)."""
    assert verdict["verdict"] == "FAIL", verdict["gates"]
    found = [(f["check"], f["category"]) for f in verdict["failures"]]
    assert (check, category) in found, (check, category, found)
    if consistent:  # the cheat was re-run through the pipeline: the pre-#16 evidence gates see nothing
        status = {g["id"]: g["status"] for g in verdict["gates"]}
        assert status["P3"] == status["P4"] == "PASS", verdict["failures"]


def _renamed_kernel(op: Path, *pairs: tuple[str, str], append: str) -> None:
    """The delivered kernel becomes ``_kernel_impl``; ``append`` defines the cheating ``softmax_kernel``."""
    edit(op / TEST, (KERNEL_DEF, KERNEL_DEF.replace("softmax_kernel", "_kernel_impl")), *pairs, append=append)


def test_clean_deliverable_passes_with_remeasurement(op):
    verdict = check(op, remeasure=True)
    assert (verdict["verdict"], verdict["failures"]) == ("PASS", []), verdict["failures"]
    note = verdict["remeasure"]
    assert note["status"] == "run" and (op / note["path"] / "remeasure.json").is_file()
    assert sorted(c["case"] for c in note["cases"]) == sorted(TARGET)
    stored = json.loads((op / "docs/perf/stage5_check.json").read_text())
    assert stored["remeasure"]["path"] == note["path"]
    from perftune.orchestrate import stage_gate   # the twin of the next test: re-measured, Stage 5 completes
    assert stage_gate.check_problem(op, 5, {"operator_name": stored["operator"]}) is None


def test_a_check_with_the_remeasurement_switched_off_never_completes_stage_5(op):
    verdict = check(op, remeasure=False)
    assert verdict["verdict"] == "PASS" and verdict["remeasure"]["default"] == "on"
    stored = json.loads((op / "docs/perf/stage5_check.json").read_text())
    from perftune.orchestrate import stage_gate
    problem = stage_gate.check_problem(op, 5, {"operator_name": stored["operator"]})
    assert problem is not None and stored["remeasure"]["status"] != "run"


def test_quarter_of_the_rows(op):
    edit(op / TEST, ("    shape, dtype = CASES[case_id]\n", "    shape, dtype = CASES[case_id]\n"
                     "    shape = (shape[0] // 4, shape[1])\n"))
    rerun_code(op)
    assert_caught(check(op, remeasure=False), "P9.attestation", "cheating")


def test_lowered_min_matched_with_a_partial_kernel(op):
    _renamed_kernel(op, ("MIN_MATCHED = 0.999", "MIN_MATCHED = 0.5"), append=(
        "\n\ndef softmax_kernel(x, out):\n    rows = int(x.shape[0] * 0.65)\n"
        "    _kernel_impl(x[:rows], out[:rows])\n    out[rows:] = 0\n"))
    rerun_code(op)
    verdict = check(op, remeasure=False)
    assert_caught(verdict, "P9.precision_gate", "cheating")
    assert_caught(verdict, "P9.precision_gate", "precision_failure")


def test_inputs_from_another_seed_and_a_narrower_distribution(op):
    edit(op / TEST, ("    x = _make_inputs(shape, dtype, device=_get_device())\n",
                     "    x = (_make_inputs(shape, dtype, device=_get_device(), seed=7) * 0.25).astype(dtype)\n"))
    rerun_code(op)
    assert_caught(check(op, remeasure=False), "P9.attestation", "cheating")


def test_kernel_memoises_its_output_by_shape_and_dtype(op):
    _renamed_kernel(op, append=(
        "\n\n_MEMO = {}\n\n\ndef softmax_kernel(x, out):\n    key = (x.shape, x.dtype.str)\n"
        "    if key not in _MEMO:\n        _kernel_impl(x, out)\n        _MEMO[key] = out.copy()\n"
        "    np.copyto(out, _MEMO[key])\n"))
    rerun_code(op)
    assert_caught(check(op, remeasure=False), "P9.precision_gate", "cheating")


def test_every_output_computed_at_import(op):
    _renamed_kernel(op, append=(
        "\n\n_PRECOMPUTED = {}\nfor _shape, _dtype in CASES.values():\n"
        "    _x = _make_inputs(_shape, _dtype, device=_get_device())\n    _o = np.empty_like(_x)\n"
        "    _kernel_impl(_x, _o)\n    _PRECOMPUTED[(_x.shape, _x.dtype.str)] = _o\n\n\n"
        "def softmax_kernel(x, out):\n    np.copyto(out, _PRECOMPUTED[(x.shape, x.dtype.str)])\n"))
    rerun_code(op)
    assert_caught(check(op, remeasure=False), "P9.precision_gate", "cheating")


def test_wrapper_computes_the_result_and_the_kernel_copies(op):
    _renamed_kernel(op, (LAUNCH, "    result = np.empty_like(x)\n    _kernel_impl(x, result)\n"
                                 "    softmax_kernel(x, out, result)\n    return out\n"),
                    append="\n\ndef softmax_kernel(x, out, result):\n    np.copyto(out, result)\n")
    rerun_code(op)
    verdict = check(op, remeasure=True)
    assert_caught(verdict, "P9.attestation", "cheating")
    assert_caught(verdict, "P10.wrapper_share", "cheating")


def _plant_shipped(op: Path, name: str) -> None:
    """Replace the delivered kernel and wrapper (``def softmax_kernel`` up to ``def _assert_precision``) with
    ``tests/cheats/kernels/<name>.py``: a cheat planted into a kernel the tests ship, never into a line of
    whichever version the noisy demo delivered."""
    text = (SHIPPED / f"{name}.py").read_text()
    code = text[text.index('\n"""\n', 3) + 5:].lstrip("\n")
    test = (op / TEST).read_text()
    start, end = test.index("def softmax_kernel("), test.index("def _assert_precision(")
    (op / TEST).write_text(test[:start] + code.rstrip("\n") + "\n\n\n" + test[end:])


def test_second_launch_finishes_the_work_outside_the_timed_kernel(op):
    _plant_shipped(op, "deferred_finish")   # the wrapper finishes what the timed kernel left
    rerun_code(op)
    assert_caught(check(op, remeasure=True), "P10.wrapper_share", "cheating")


def test_precision_reference_loosened(op):
    edit(op / "softmax_golden_cpu.py", ("np.asarray(x, dtype=np.float64)", "np.asarray(x, dtype=np.float16)"))
    refused = run_script("check_correctness.py", "--op-dir", op, "--json")  # FROZEN_INPUTS.json names it
    file, field = refused.stderr.split(": ")[1:3]   # error: <file>: <field>: <what> (<fix>)
    assert refused.returncode == 2 and (Path(file).name, field) == ("softmax_golden_cpu.py", "sha256"), refused.stderr
    (op / "FROZEN_INPUTS.json").unlink()  # past the script-time check, the verifier still sees the edit
    assert_caught(check(op, remeasure=False), "P9.precision_gate", "cheating")


def _forge_final(op: Path, change, *, cpu: bool = False) -> None:
    """Rewrite the final round's candidate samples (csv, status, measurement; ``cpu``: the harness's CPU
    times of each call by the same factor, issue 35 item 5's variant B), re-seal, re-compare."""
    final = evidence.find_round(op, perf(op)["final_collection_id"])
    for case in TARGET:
        case_dir = final / evidence.case_dir_name(case)
        values = change(case, case_dir)
        if values is None:
            continue
        for index, value in enumerate(values, 1):
            arm = case_dir / f"repeat_{index:03d}" / "candidate"
            lines = (arm / "samples.csv").read_text().splitlines()
            cells = lines[1].split(",")
            factor, cells[3] = value / float(cells[3]), f"{value:.3f}"
            (arm / "samples.csv").write_text(f"{lines[0]}\n{','.join(cells)}\n")
            if cpu:
                record = json.loads((arm / "attestation.json").read_text())
                for field in ("call_cpu_us", "thread_cpu_us"):
                    record["harness"][field] = round(record["harness"][field] * factor, 3)
                (arm / "attestation.json").write_text(json.dumps(record, indent=2, sort_keys=True))
            status = json.loads((arm / "evidence_status.json").read_text())
            status["duration_us"] = round(value, 3)
            (arm / "evidence_status.json").write_text(json.dumps(status, indent=2, sort_keys=True))
        measurement = json.loads((case_dir / "measurement.json").read_text())
        measurement["duration_samples_us"] = [round(v, 3) for v in values]
        (case_dir / "measurement.json").write_text(json.dumps(measurement, indent=2, sort_keys=True))
    collection = json.loads((final / "collection.json").read_text())
    collection["evidence_seal"] = evidence.evidence_seal(final)
    (final / "collection.json").write_text(json.dumps(collection, indent=2, sort_keys=True))
    script("compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(perf(op)["baseline_round"]).name,
           "--candidate", final.name, ok=(0, 1))


def _samples(case_dir: Path) -> list[float]:
    return [float((case_dir / f"repeat_{i:03d}/candidate/samples.csv").read_text().splitlines()[1].split(",")[3])
            for i in range(1, 11)]


def test_final_samples_copied_from_a_faster_case_with_jitter(op):
    final = evidence.find_round(op, perf(op)["final_collection_id"])
    donor = _samples(final / evidence.case_dir_name("r64_c4096_fp32"))
    jitter = random.Random(16)
    _forge_final(op, lambda case, _d: [v * (1 + jitter.uniform(0.02, 0.06)) for v in donor]
                 if case == "r1024_c256_fp16" else None)
    assert_caught(check(op, remeasure=True), "P10.reproduced", "performance_evidence_invalid")


def test_every_final_sample_scaled_by_0_3(op):
    # ×0.3 (a claim 3.3× too high): beyond what load does to the paired fp16 ratio (0.9–2.5 re-measured for a
    # delivered ~1.4), so P10 catches it on a busy CI machine too; ×0.7 is caught only when the verifier's
    # machine is no busier than the deliverable's was (docs/stage5-check.md: the CI once passed it under load)
    _forge_final(op, lambda _c, case_dir: [v * 0.3 for v in _samples(case_dir)])
    assert_caught(check(op, remeasure=True), "P10.reproduced", "performance_evidence_invalid")


def test_every_final_sample_and_its_cpu_time_scaled_by_0_3(op):
    # variant B: the wall samples and the harness's CPU times alike, so neither P9.time_floor nor R2's work
    # test's wall/CPU guard sees a changed ratio; the CPU-time speed-up claimed is 3.3x the one re-measured
    _forge_final(op, lambda _c, case_dir: [v * 0.3 for v in _samples(case_dir)], cpu=True)
    found = check(op, remeasure=True)
    assert_caught(found, "P10.reproduced", "performance_evidence_invalid")
    assert "P9.time_floor" not in {f["check"] for f in found["failures"]}, found["failures"]


def test_hand_edited_performance_json_re_rendered(op):
    obj = perf(op)
    for row in obj["per_case"]:
        row["speedup"] *= 1.5
    (op / "performance.json").write_text(json.dumps(obj, indent=2, sort_keys=True))
    for name, text in zip(("performance.log", "perf_report.md"), formal.render_texts(obj)):
        (op / name).write_text(text)
    assert_caught(check(op, remeasure=False), "P4.recomputation", "performance_evidence_invalid", consistent=False)
