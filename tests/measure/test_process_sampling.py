"""Process-level sampling on the cpu backend, end to end (issue 23): ``freeze_cases.py freeze
--processes 2`` spreads every case's repeats over two fresh processes, each sample's raw
``samples.csv`` names its process, ``load_round`` reads the groups back from the raw files, and
``compare_perf.py formal`` decides with the two-level bootstrap and says so in its JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, assert_one_line_error, freeze_example, run_script

from perftune.measure import evidence

CASE = "r64_c4096_fp32"


def collect(op: Path, *extra: str) -> dict:
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def raw_processes(case_dir: Path, arm: str = "") -> list[int]:
    rows = [(case_dir / f"repeat_{i:03d}" / arm / "samples.csv").read_text().splitlines() for i in range(1, 7)]
    assert all(r[0].endswith(",process,format_version") for r in rows)
    return [int(r[1].split(",")[5]) for r in rows]


@pytest.fixture(scope="module")
def two_rounds(tmp_path_factory) -> Path:
    """The example frozen with 6 repeats over 2 processes, and two independent rounds of it."""
    op = tmp_path_factory.mktemp("processes") / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    freeze_example(op, "--processes", "2", repeats=6, warmup=0)
    collect(op)
    collect(op)
    return op


@pytest.fixture
def op_dir_rounds(two_rounds, tmp_path) -> Path:
    shutil.copytree(two_rounds, tmp_path / "softmax")
    return tmp_path / "softmax"


def test_two_processes_are_two_groups_in_the_evidence_and_compare_uses_two_levels(op_dir_rounds):
    op_dir = op_dir_rounds
    case_dir = op_dir / "docs/perf/round_001" / evidence.case_dir_name(CASE)
    assert raw_processes(case_dir) == [0, 0, 0, 1, 1, 1]
    logs = sorted(p.name for p in case_dir.glob("collection*.log"))
    assert logs == ["collection_p00.log", "collection_p01.log"]  # two fresh processes, one log each
    assert "'--repeats', '3'" in (case_dir / "collection_p01.log").read_text()
    status = json.loads((case_dir / "repeat_004" / "evidence_status.json").read_text())
    assert status["process"] == 1
    assert evidence.load_round(op_dir, "round_001").cases[CASE].processes == [0, 0, 0, 1, 1, 1]

    proc = run_script("compare_perf.py", "formal", "--op-dir", op_dir, "--baseline", "round_001",
                      "--candidate", "round_002", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    perf = json.loads(proc.stdout)
    assert perf["protocol"]["processes"] == 2
    assert {(r["ci_method"], r["n_processes"]) for r in perf["per_case"]} == {("two_level_bootstrap", 2)}
    assert perf["suite"]["reason_code"] == "two_level_bootstrap"
    log = (op_dir / "performance.log").read_text()          # the reports say which CI decided
    assert "processes=2" in log and "ci=two_level_bootstrap" in log
    assert "CI `two_level_bootstrap`" in (op_dir / "perf_report.md").read_text()


def test_paired_round_interleaves_per_process_with_the_round_wide_arm_order(op_dir):
    freeze_example(op_dir, "--processes", "2", repeats=6, warmup=0)
    version = op_dir / "docs/perf/versions/v000"
    version.mkdir(parents=True)
    shutil.copy2(op_dir / "test_softmax.py", version / "test_softmax.py")
    collect(op_dir, "--paired-with", version)
    loaded = evidence.load_round(op_dir, "round_001").cases[CASE]
    assert raw_processes(loaded.path, "candidate") == raw_processes(loaded.path, "baseline") == [0, 0, 0, 1, 1, 1]
    assert loaded.processes == [0, 0, 0, 1, 1, 1] and loaded.arms[2:] == ([0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1])
    # the first arm alternates with the round-wide repeat number, across the process boundary too
    assert loaded.measurement["sample_order"] == [["baseline", "candidate"], ["candidate", "baseline"]] * 3
    assert "'--first-repeat', '3'" in (loaded.path / "collection_p01.log").read_text()


def test_a_raw_process_index_that_breaks_equal_processes_is_refused(op_dir_rounds):
    op_dir = op_dir_rounds
    round_dir = op_dir / "docs/perf/round_002"
    path = round_dir / evidence.case_dir_name(CASE) / "repeat_002" / "samples.csv"
    header, row = path.read_text().splitlines()
    cells = row.split(",")
    path.write_text(f"{header}\n{','.join(cells[:5] + ['1'] + cells[6:])}\n")  # process 0 → 1: four in 1, two in 0
    collection = json.loads((round_dir / "collection.json").read_text())
    collection["evidence_seal"] = evidence.evidence_seal(round_dir)  # even a re-sealed forgery
    (round_dir / "collection.json").write_text(json.dumps(collection))
    proc = run_script("compare_perf.py", "formal", "--op-dir", op_dir, "--baseline", "round_001",
                      "--candidate", "round_002")
    assert_one_line_error(proc, 2, "process")


def test_processes_must_divide_repeats_at_freeze(op_dir):
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", CASE,
                      "--selection-mode", "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel",
                      "--repeats", "5", "--processes", "2")
    assert_one_line_error(proc, 2, "--processes")
