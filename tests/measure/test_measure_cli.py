"""collect_perf.py and collect_golden_reference.py end to end, on real copies of the example."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SCRIPTS, assert_one_line_error, freeze_example, run_script, tree_digest
from perftune.measure import evidence
from perftune.contract import schemas
from perftune.errors import ContractError

TWO_CASES = ("r64_c4096_fp32", "r64_c4096_fp16")


def small(op_dir: Path, **kw) -> Path:
    """The example with two P0 cases (the other two marked p0=no) frozen with few repeats."""
    spec = op_dir / "SPEC.md"
    text = spec.read_text()
    for row in ("| r512_c1024_fp32 | [512,1024] | float32 | yes |", "| r1024_c256_fp16 | [1024,256] | fp16 | yes |"):
        text = text.replace(row, row.replace("| yes |", "| no |"))
    spec.write_text(text)
    freeze_example(op_dir, repeats=kw.get("repeats", 3), warmup=kw.get("warmup", 0))
    return op_dir


def formal(op_dir: Path, *extra: str):
    return run_script("collect_perf.py", "formal", "--op-dir", op_dir, "--json", *extra)


def test_formal_round_complete_valid_and_recomputable(op_dir):
    small(op_dir)
    proc = formal(op_dir)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "complete" and result["completed_cases"] == 2
    assert "r64_c4096_fp32:" in proc.stderr  # one progress line per case
    round_dir = op_dir / "docs/perf/round_001"
    collection = json.loads((round_dir / "collection.json").read_text())
    schemas.validate(collection, "collection")
    assert collection["expected_cases"] == list(TWO_CASES) and collection["selector"]["kind"] == "function_adapter"
    loaded = evidence.load_round(op_dir, "round_001")
    for case_id in TWO_CASES:
        case_dir = round_dir / evidence.case_dir_name(case_id)
        measurement = json.loads((case_dir / "measurement.json").read_text())
        schemas.validate(measurement, "measurement")
        for index in (1, 2, 3):
            repeat = case_dir / f"repeat_{index:03d}"
            schemas.validate(json.loads((repeat / "evidence_status.json").read_text()), "evidence_status")
            assert "returncode: 0" in (repeat / "collection.log").read_text()
            header, row = (repeat / "samples.csv").read_text().splitlines()
            assert header == "repeat,case_id,op_name,duration_us,calls,process,format_version" and row.endswith(
                ",softmax_kernel," + row.split(",")[3] + ",1,0,1")
        assert loaded.cases[case_id].samples_us == measurement["duration_samples_us"]
        assert measurement["aggregate_us"] == sorted(measurement["duration_samples_us"])[1]  # median of 3
    assert evidence.find_round(op_dir, collection["collection_id"]) == round_dir.resolve()
    # a second run never overwrites: it gets round_002 and round_001 is byte-identical
    before = tree_digest(round_dir)
    assert formal(op_dir).returncode == 0
    assert (op_dir / "docs/perf/round_002/collection.json").is_file() and tree_digest(round_dir) == before


def test_tampered_raw_sample_is_what_load_round_reports(op_dir):
    small(op_dir)
    assert formal(op_dir).returncode == 0
    case_dir = op_dir / "docs/perf/round_001" / evidence.case_dir_name(TWO_CASES[0])
    samples = case_dir / "repeat_002/samples.csv"
    samples.write_text(samples.read_text().replace(",1,0,1\n", ",2,0,1\n"))  # calls 1 → 2
    with pytest.raises(ContractError, match="raw evidence changed after the round completed"):
        evidence.load_round(op_dir, "round_001")
    round_dir = op_dir / "docs/perf/round_001"  # a forger who also re-seals still meets the raw check
    collection = json.loads((round_dir / "collection.json").read_text())
    collection["evidence_seal"] = evidence.evidence_seal(round_dir)
    (round_dir / "collection.json").write_text(json.dumps(collection))
    with pytest.raises(ContractError, match="called 2 times"):
        evidence.load_round(op_dir, "round_001")
    samples.unlink()
    samples.symlink_to(case_dir / "repeat_001/samples.csv")
    with pytest.raises(ContractError, match="symlink"):
        evidence.load_round(op_dir, "round_001")


def test_quick_never_touches_rounds(op_dir):
    small(op_dir)
    proc = run_script("collect_perf.py", "quick", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    path = op_dir / "docs/perf/quick/quick_001/quick_performance.json"
    obj = json.loads(path.read_text())
    schemas.validate(obj, "quick_performance")
    assert obj["never_ranks"] is True and obj["mode"] == "quick" and len(obj["cases"]) == 2
    assert not list((op_dir / "docs/perf").glob("round_*"))


def test_preflight_and_list_op_names(op_dir):
    small(op_dir)
    proc = run_script("collect_perf.py", "preflight", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    probes = json.loads(proc.stdout)["probes"]
    assert probes[0]["expect"] == "nonzero" and probes[0]["returncode"] == 2
    assert [p["markers"] for p in probes[1:]] == [[c] for c in TWO_CASES]
    proc = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", TWO_CASES[0], "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    names = [r["exact_op_name"] for r in rows]
    assert {"softmax_kernel", "softmax_wrapper", "test_r64_c4096_fp32"} <= set(names)
    kernel = rows[names.index("softmax_kernel")]
    assert kernel["count"] == 1 and kernel["task_type"] == "python_function"
    assert [r["total_duration_us"] for r in rows] == sorted((r["total_duration_us"] for r in rows), reverse=True)
    bad = run_script("collect_perf.py", "list-op-names", "--op-dir", op_dir, "--case-id", "nope")
    assert_one_line_error(bad, 2, "unknown case id")


def test_adapter_selects_exactly_one_case(op_dir):
    small(op_dir)
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    run = [sys.executable, "-m", "perftune.measure.backends.case_adapter", "--op-dir", str(op_dir), "--case-id"]
    ok = subprocess.run(run + [TWO_CASES[1]], env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.count("PYPTO_PERF_SELECTED_CASE=") == 1
    assert f"PYPTO_PERF_SELECTED_CASE={TWO_CASES[1]}\n" in ok.stdout and "PASS" in ok.stdout
    bad = subprocess.run(run + ["no_such_case"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "PYPTO_PERF_SELECTED_CASE" not in bad.stdout


@pytest.mark.parametrize("flag, value", [("--repeats", "4"), ("--op-name", "softmax_wrapper"),
                                         ("--device", "1"), ("--backend", "msprof")])
def test_flag_contradicting_manifest_exits_2(op_dir, flag, value):
    small(op_dir)
    assert_one_line_error(formal(op_dir, flag, value), 2, flag, "contradicts")
    assert not (op_dir / "docs/perf").exists()


def test_multi_case_manifest_without_selection_refused(op_dir):
    small(op_dir)
    (op_dir / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    path = op_dir / "PERFORMANCE_CASES.json"
    obj = json.loads(path.read_text())
    for case in obj["cases"]:
        del case["test_function"]
    path.write_text(json.dumps(obj))
    assert_one_line_error(formal(op_dir), 2, "without per-case selection")


def test_msprof_backend_without_msprof_exits_3(op_dir):
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", TWO_CASES[0],
                      "--selection-mode", "user_selected", "--backend", "msprof", "--op-name", "Softmax")
    assert proc.returncode == 0, proc.stderr
    bare = Path(sys.executable).parent  # python only: no msprof on PATH
    proc = run_script("collect_perf.py", "formal", "--op-dir", op_dir, env={"PATH": str(bare)})
    assert_one_line_error(proc, 3, "msprof")
    assert not [r for r in evidence.list_rounds(op_dir) if r["status"] == "complete"]


def test_runner_launching_the_op_twice_fails_the_round_and_keeps_attempts(op_dir):
    small(op_dir, repeats=2)
    test_file = op_dir / "test_softmax.py"
    test_file.write_text(test_file.read_text().replace("    softmax_kernel(x, out)\n",
                                                       "    softmax_kernel(x, out)\n    softmax_kernel(x, out)\n"))
    proc = formal(op_dir, "--retry", "1")
    assert proc.returncode == 1
    collection = json.loads((op_dir / "docs/perf/round_001/collection.json").read_text())
    assert collection["status"] == "failed" and "called the op 2 times" in collection["failure"]
    case_dir = op_dir / "docs/perf/round_001" / evidence.case_dir_name(TWO_CASES[0])
    assert sorted(p.name for p in case_dir.iterdir()) == ["attempt_01", "attempt_02"]


def test_source_changed_during_round_fails_it(op_dir):
    small(op_dir, repeats=1)
    test_file = op_dir / "test_softmax.py"
    test_file.write_text(test_file.read_text().replace(
        "def _run_case(case_id):\n",
        "def _run_case(case_id):\n    open(__file__.replace('test_softmax', 'drift'), 'a').write('#\\n')\n"))
    proc = formal(op_dir)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and "executable_sha256 changed" in result["failure"]


def test_killed_collector_leaves_parseable_incomplete_round(op_dir):
    small(op_dir, repeats=3)
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "collect_perf.py"), "formal", "--op-dir", str(op_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    round_dir = op_dir / "docs/perf/round_001"
    deadline = time.monotonic() + 120
    while not list(round_dir.glob("case_*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    collection = json.loads((round_dir / "collection.json").read_text())
    assert collection["status"] == "in_progress"
    with pytest.raises(ContractError, match="not complete"):
        evidence.load_round(op_dir, "round_001")
    proc = formal(op_dir)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((op_dir / "docs/perf/round_002/collection.json").read_text())["status"] == "complete"
    killed = json.loads((round_dir / "collection.json").read_text())
    assert killed["status"] == "failed" and killed["failure"] == evidence.ABANDONED  # found by the next run
    assert "round_001: its collector is gone" in proc.stdout + proc.stderr
    assert not list((op_dir / "docs/perf").glob(".*"))  # no lock or staging leftovers


def test_paired_round_interleaves_and_records_both_hashes(op_dir):
    small(op_dir, repeats=3)
    version = op_dir / "docs/perf/versions/v000"
    version.mkdir(parents=True)
    shutil.copy2(op_dir / "test_softmax.py", version / "test_softmax.py")
    proc = formal(op_dir, "--paired-with", str(version))
    assert proc.returncode == 0, proc.stderr
    collection = json.loads((op_dir / "docs/perf/round_001/collection.json").read_text())
    paired = collection["paired"]
    assert paired["baseline_version"] == "docs/perf/versions/v000"
    assert paired["baseline_executable_sha256"] == collection["executable_sha256"]  # identical code
    loaded = evidence.load_round(op_dir, "round_001").cases[TWO_CASES[0]]
    assert loaded.measurement["sample_order"] == [["baseline", "candidate"], ["candidate", "baseline"],
                                                  ["baseline", "candidate"]]
    assert loaded.baseline_samples_us == loaded.measurement["baseline_samples_us"] and len(loaded.samples_us) == 3
    log = (loaded.path / "collection.log").read_text()  # cpu: both arms interleaved in ONE process per case
    assert "--paired-runner" in log and str(version / "test_softmax.py") in log
    assert (loaded.path / "repeat_002" / "baseline" / "samples.csv").is_file()


def golden_args(op_dir: Path, *extra: str) -> list[str]:
    return [op_dir / "softmax_golden.py", "--function", "softmax_golden", "--factory", "golden_cases",
            "--case-manifest", op_dir / "PERFORMANCE_CASES.json", "--output-dir", op_dir, "--device", "0",
            "--warmup", "1", "--repeats", "3", *extra]


def test_golden_reference_cpu_once_and_refusals(op_dir):
    small(op_dir)
    assert_one_line_error(run_script("collect_golden_reference.py", *golden_args(op_dir, "--seed", "7")), 2, "--seed")
    proc = run_script("collect_golden_reference.py", *golden_args(op_dir, "--seed", "42", "--json"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((op_dir / "GOLDEN_PERF_REPORT.json").read_text())
    schemas.validate(report, "golden_perf_report")
    assert [c["id"] for c in report["cases"]] == list(TWO_CASES) and report["golden_source"]["path"] == "softmax_golden.py"
    assert "| r64_c4096_fp16 |" in (op_dir / "GOLDEN_PERF_REPORT.md").read_text()
    before = tree_digest(op_dir)
    again = run_script("collect_golden_reference.py", *golden_args(op_dir, "--seed", "42"))
    assert_one_line_error(again, 2, "never overwritten")
    assert tree_digest(op_dir) == before


def test_golden_factory_id_mismatch_and_torch_npu_env(op_dir):
    small(op_dir)
    (op_dir / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    golden_file = op_dir / "softmax_golden.py"
    golden_file.write_text(golden_file.read_text() + "\n\ndef short_cases(cases):\n    return golden_cases(cases)[:1]\n")
    args = golden_args(op_dir, "--seed", "42")
    args[4] = "short_cases"
    assert_one_line_error(run_script("collect_golden_reference.py", *args), 2, "missing ['r64_c4096_fp16']")
    proc = run_script("collect_golden_reference.py", *golden_args(op_dir, "--seed", "42", "--backend", "torch_npu"))
    assert_one_line_error(proc, 3, "torch")
    assert not (op_dir / "GOLDEN_PERF_REPORT.json").exists()


def test_help_explains_every_subcommand():
    proc = run_script("collect_perf.py", "--help")
    assert proc.returncode == 0 and all(c in proc.stdout for c in ("formal", "quick", "list-op-names", "preflight"))
    proc = run_script("collect_perf.py", "formal", "--help")
    assert "--paired-with" in proc.stdout and "--retry" in proc.stdout
    assert "--factory" in run_script("collect_golden_reference.py", "--help").stdout
