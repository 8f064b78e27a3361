"""The pypto-sim backend: reading a repeat from raw files, determinism, and the CLI end to end.

The end-to-end tests detect the optional extra (``pip install -e '.[pypto-sim]'``): without pypto
they check the environment error (exit 3 with the install line); with it they freeze and measure a
one-case copy of ``examples/pypto_softmax`` for real (A/A: identical cycles) and check that no side
file reaches ``$HOME`` or the operator directory.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, run_script
from perftune.demo import flow, opfolder
from perftune.contract import manifest as manifest_mod
from perftune.errors import CheckFailed, ContractError
from perftune.measure import evidence, sim_reuse
from perftune.profiler import pypto_sim_files as files
from perftune.measure.backends import RepeatResult, get_backend
from perftune.measure.backends import pypto_sim
from perftune.verify import resimulate

RECORDED = ROOT / "tests" / "fixtures" / "pypto_sim" / "recorded"
EXAMPLE = ROOT / "examples" / "pypto_softmax"
HAVE_PYPTO = all(importlib.util.find_spec(m) is not None for m in ("pypto", "torch", "sympy"))
CASE = "r1024_c512_fp16"


def repeat_dir(tmp_path: Path, **launch) -> Path:
    folder = tmp_path / "repeat_001"
    shutil.copytree(RECORDED / "vector_softmax", folder)
    record = {"case_id": "c", "op_name": "softmax_kernel", "calls": 1, "warmup": 0, "launches": 1,
              "simulator_output": "output_x", "simulator": {}} | launch
    (folder / pypto_sim.LAUNCH_JSON).write_text(json.dumps(record))
    return folder


def test_read_repeat_derives_microseconds_from_simulated_cycles_and_the_chip_frequency(tmp_path):
    backend = get_backend("pypto-sim")
    result = backend.read_repeat(repeat_dir(tmp_path), "softmax_kernel")
    assert result.duration_us == round(10784 / 1800.0, 6) and result.calls == 1
    assert result.bound_route["primary_core"] == "aiv"
    assert result.bound_route["source_files"] == [files.PIPE_SWIM_JSON, files.SWIM_JSON]
    details = pypto_sim.read_details(tmp_path / "repeat_001")
    assert details["cycles"] == 10784 and details["device_arch"] == "A2A3" and details["bubbles"]["cores"] == 8


@pytest.mark.parametrize("launch,field", [({"op_name": "other"}, "op_name"), ({"calls": 2}, "calls")])
def test_read_repeat_refuses_another_op_or_a_second_launch(tmp_path, launch, field):
    with pytest.raises(ContractError) as err:
        get_backend("pypto-sim").read_repeat(repeat_dir(tmp_path, **launch), "softmax_kernel")
    assert err.value.field == field


def test_read_repeat_refuses_an_unknown_chip_and_a_missing_stat_report(tmp_path):
    folder = repeat_dir(tmp_path)
    ini = folder / files.CONFIG_INI
    ini.write_text(ini.read_text().replace("deviceArch = A2A3", "deviceArch = X9"))
    with pytest.raises(ContractError, match="unknown chip"):
        pypto_sim.read_details(folder)
    (folder / files.STAT_REPORT).unlink()
    with pytest.raises(ContractError, match="missing"):
        pypto_sim.read_details(folder)


def test_repeats_of_one_case_must_give_identical_cycles(tmp_path):
    same = [RepeatResult(5.991111, 1, None, ()), RepeatResult(5.991111, 1, None, ())]
    sim_reuse.check_deterministic(same, tmp_path, "c")
    with pytest.raises(CheckFailed, match="differ"):
        sim_reuse.check_deterministic(same + [RepeatResult(6.0, 1, None, ())], tmp_path, "c")


def one_case_op(tmp_path: Path) -> Path:
    """examples/pypto_softmax with one P0 case (the others marked p0=no), variants left out."""
    op = tmp_path / "pypto_softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "variants", "docs"))
    spec = op / "SPEC.md"
    text = spec.read_text()
    for row in text.splitlines():
        if row.startswith("| r") and f"| {CASE} |" not in row:
            text = text.replace(row, row.replace("| yes |", "| no |"))
    spec.write_text(text)
    return op


def freeze(op: Path, env: dict | None = None):
    return run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE,
                      "--selection-mode", "single_p0", "--backend", "pypto-sim", "--op-name", "pypto_softmax_kernel",
                      "--warmup", "0", "--repeats", "2", env=env)


def test_cli_end_to_end_follows_the_installed_extra(tmp_path):
    op = one_case_op(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    if not HAVE_PYPTO:
        assert_one_line_error(freeze(op, env), 3, "pypto is not installed", "pip install -e '.[pypto-sim]'")
        manifest = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE,
                              "--selection-mode", "single_p0", "--backend", "cpu", "--op-name", "pypto_softmax_kernel")
        assert manifest.returncode == 0, manifest.stderr
        path = op / "PERFORMANCE_CASES.json"
        obj = json.loads(path.read_text())
        obj["protocol"]["backend"] = "pypto-sim"
        path.write_text(json.dumps(obj))
        (op / "FROZEN_INPUTS.json").unlink()  # the hand-edited manifest stands for one frozen on pypto-sim
        proc = run_script("collect_perf.py", "formal", "--op-dir", op, env=env)
        assert_one_line_error(proc, 3, "pypto is not installed", "pip install -e '.[pypto-sim]'")
        assert not (op / "docs").exists()
        final = evidence.RoundEvidence(op, {"backend": "pypto-sim"}, {})
        man = manifest_mod.load_manifest(path)
        [(category, message)], note = resimulate.run(op, man, final, final)   # P10 cannot re-simulate here
        assert category == "env_error" and "pip install -e '.[pypto-sim]'" in message
        assert note["status"] == "not_run" and not (op / "docs").exists()
        return
    proc = freeze(op, env)
    assert proc.returncode == 0, proc.stderr
    simulator = json.loads((op / "PERFORMANCE_CASES.json").read_text())["protocol"]["simulator"]
    assert simulator["device_arch"] == "A2A3" and simulator["frequency_mhz"] == 1800.0
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--json", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    loaded = evidence.load_round(op, "round_001").cases[CASE]
    assert len(loaded.samples_us) == 2 and loaded.samples_us[0] == loaded.samples_us[1]   # A/A: identical
    repeat = loaded.path / "repeat_001"
    names = {p.name for p in repeat.iterdir()}
    assert {files.STAT_REPORT, files.CONFIG_INI, files.BUBBLE_LOG, files.SWIM_JSON, files.PIPE_SWIM_JSON,
            pypto_sim.LAUNCH_JSON, "collection.log", "evidence_status.json"} <= names
    status = json.loads((repeat / "evidence_status.json").read_text())
    assert status["duration_us"] == round(status["simulated_cycles"] / 1800.0, 6)
    assert status["simulator_files"][files.STAT_REPORT] == evidence.fsio.sha256_file(repeat / files.STAT_REPORT)
    assert not list(home.iterdir()), "side files reached HOME"
    assert not (op / "output").exists() and not list(loaded.path.rglob(".pypto_sim_*"))
    # pypto's swim-lane scripts ran with this interpreter (bubble_analysis.log above), the drawing-only
    # ones not at all: no plotly/matplotlib traceback in the launch log
    log = (repeat / "collection.log").read_text()
    assert "Traceback" not in log and "draw_pipe_swim_lane.py not run" in log and "print_swim_lane.py not run" in log
    final = evidence.load_round(op, "round_001")
    man = manifest_mod.load_manifest(op / "PERFORMANCE_CASES.json")
    edited = dataclasses.replace(final, cases={CASE: dataclasses.replace(loaded, samples_us=[s * 1.01 for s in
                                                                                           loaded.samples_us])})
    problems, note = resimulate.run(op, man, final, edited)   # P10: one re-simulation, identical cycles required
    [(category, message)] = problems   # the edited final round fails; the untouched baseline round agrees
    assert category == "performance_evidence_invalid" and "not identical" in message
    assert note["status"] == "run" and note["path"] == "docs/perf/stage5_remeasure/rm_001"
    [row] = note["cases"]
    assert row["final"]["resimulated_us"] == loaded.samples_us[0] and row["final"]["identical"] is False
    assert row["baseline"]["identical"] is True and row["speedup"] == 1 and len(row["inputs"]) == 1
    assert (op / note["path"] / "remeasure.json").is_file() and not list(home.iterdir())
    forced_fresh_data_reaches_both_codes(op, env)


def forced_fresh_data_reaches_both_codes(op: Path, env: dict) -> None:
    """P10.plausibility's forced fresh data on pypto-sim (issue 35 item 13): the faster variant paired with the
    saved baseline, then re-simulated with the case forced: one launch per code on the same new data (not the
    seed-42 inputs), with the cycles of the seed-42 launches (the tile program does not read the values)."""
    saved = op / "docs/perf/versions/v000"
    saved.mkdir(parents=True)
    shutil.copy(op / "test_pypto_softmax.py", saved)
    # the faster variant: v1_tile_search's best point, 32 KiB tiles (examples/pypto_softmax/README.md, v1_tile32k)
    code = (op / "test_pypto_softmax.py").read_text()
    assert code.count("\nTILE_BYTES = 16384\n") == 1
    (op / "test_pypto_softmax.py").write_text(code.replace("\nTILE_BYTES = 16384\n", "\nTILE_BYTES = 32768\n"))
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--paired-with", "docs/perf/versions/v000",
                      "--json", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    man = manifest_mod.load_manifest(op / "PERFORMANCE_CASES.json")
    base, final = evidence.load_round(op, "round_001"), evidence.load_round(op, "round_002")
    problems, note = resimulate.run(op, man, base, final, force_fresh={CASE})
    assert problems == [] and note["rule"]["forced_fresh"] == [CASE]
    [row] = note["cases"]
    fresh = row["fresh"]
    assert (fresh["baseline_us"], fresh["final_us"]) == (row["baseline"]["resimulated_us"], row["final"]["resimulated_us"])
    assert fresh["speedup"] == row["speedup"] > 1 and fresh["problem"] is None
    records = {arm: json.loads(next((op / note["path"] / "fresh" / arm).rglob("attestation.json")).read_text())
               for arm in ("baseline", "final")}
    digests = {arm: [i["sha256"] for i in r["inputs"]] for arm, r in records.items()}
    assert digests["baseline"] == digests["final"] and digests["final"] != [row["inputs"][0][0][2]]
    assert all(r["sim"]["launches"] == 1 for r in records.values())


def test_the_frequency_constant_is_the_simulators_own_cycle_to_microsecond_conversion():
    trace = json.loads((RECORDED / "vector_softmax" / files.MERGED_SWIMLANE).read_text())["traceEvents"]
    tasks = {t["taskId"]: t for core in json.loads((RECORDED / "vector_softmax" / files.SWIM_JSON).read_text())
             for t in core.get("tasks", [])}
    events = [e for e in trace if e.get("ph") == "X"]
    assert len(events) == len(tasks) == 8
    for event in events:
        task = tasks[event["args"]["taskId"]]
        assert (task["execEnd"] - task["execStart"]) / event["dur"] == pytest.approx(pypto_sim.FREQUENCY_MHZ["A2A3"])


def test_the_golden_of_a_simulated_operator_is_timed_on_the_host_like_cpu(tmp_path):
    op = one_case_op(tmp_path)
    manifest = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE,
                          "--selection-mode", "single_p0", "--backend", "cpu", "--op-name", "pypto_softmax_kernel")
    assert manifest.returncode == 0, manifest.stderr
    proc = run_script("collect_golden_reference.py", op / "pypto_softmax_golden.py", "--function", "pypto_softmax_golden",
                      "--factory", "golden_cases", "--case-manifest", op / "PERFORMANCE_CASES.json", "--output-dir", op,
                      "--device", "0", "--warmup", "0", "--repeats", "2", "--seed", "42", "--backend", "pypto-sim")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((op / "GOLDEN_PERF_REPORT.json").read_text())
    assert report["backend"] == "pypto-sim" and report["timing_scope"] == "golden_cpu_call"
    assert len(report["cases"][0]["raw_repeat_e2e_us"]) == 2


def test_the_demo_checks_the_plans_backend_before_step_one(tmp_path):
    """demo.py asks the backend registry before copying anything: without the extra the pypto example
    stops with exit 3 and the install command; a plan on a backend absent here (msprof) stops the same way."""
    work = tmp_path / "work"
    if HAVE_PYPTO:
        assert flow.check_backend(opfolder.load(EXAMPLE)) is None
    else:
        proc = run_script("demo.py", "--example", "pypto_softmax", "--workdir", work)
        assert_one_line_error(proc, 3, "variants.json: protocol.backend: pypto is not installed",
                              "python3 -m pip install -e '.[pypto-sim]'")
        assert not work.exists() and proc.stdout == ""
    op = tmp_path / "softmax"
    shutil.copytree(ROOT / "examples" / "softmax", op, ignore=shutil.ignore_patterns("__pycache__"))
    plan = op / "variants" / "variants.json"
    plan.write_text(plan.read_text().replace('"backend": "cpu"', '"backend": "msprof"'))
    proc = run_script("demo.py", "--op-dir", op, "--workdir", work,
                      env={"PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"})
    assert_one_line_error(proc, 3, "protocol.backend: msprof is not on PATH")
    assert not work.exists()
