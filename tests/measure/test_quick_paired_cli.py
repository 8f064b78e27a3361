"""Quick screens paired with the current best (#27 item 8), end to end through the CLIs, real cpu backend.

The candidate is the best's code plus a comment: byte-different, equivalent. Asserted only what holds
under any load: the pairing (both arms in every repeat, from the raw files, alternating order), the
partner check, a neutral change never screening `faster` under a generous frozen band (a paired A/A
CI would have to clear +50 %), and the unpaired screen's rule-decided `inconclusive` (no calibration).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error, freeze_example, run_script

CASES = ("r64_c4096_fp32", "r64_c4096_fp16")


@pytest.fixture(scope="module")
def screened(tmp_path_factory) -> Path:
    op = tmp_path_factory.mktemp("quick_paired") / "softmax"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "softmax", op,
                    ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    freeze_example(op, "--noise-band", "0.5", "--noise-band-reason", "test: only what holds under load",
                   "--quick-min-speedup", "1.5", repeats=6, warmup=1)
    assert run_script("collect_perf.py", "formal", "--op-dir", op).returncode == 0
    best = op / "docs/perf/versions/v000"
    best.mkdir(parents=True)
    shutil.copy2(op / "test_softmax.py", best / "test_softmax.py")
    with (op / "test_softmax.py").open("a", encoding="utf-8") as handle:
        handle.write("\n# a neutral edit: same code, other bytes\n")
    proc = run_script("collect_perf.py", "quick", "--op-dir", op, "--paired-with", best, "--json")
    assert proc.returncode == 0, proc.stderr
    assert run_script("collect_perf.py", "quick", "--op-dir", op).returncode == 0   # unpaired: quick_002
    return op


def test_paired_screen_records_both_arms_from_raw_files(screened):
    quick = json.loads((screened / "docs/perf/quick/quick_001/quick_performance.json").read_text())
    assert quick["paired"]["baseline_version"] == "docs/perf/versions/v000"
    for row in quick["cases"]:
        assert len(row["duration_samples_us"]) == len(row["baseline_samples_us"]) == 6
        raw = screened / row["raw_dir"]
        orders = [json.loads((raw / f"repeat_{i:03d}/evidence_status.json").read_text())["paired_order"]
                  for i in range(1, 7)]
        assert orders[0] != orders[1] and sorted(orders[0]) == ["baseline", "candidate"]
        assert all((raw / f"repeat_{i:03d}" / arm / "samples.csv").is_file()
                   for i in range(1, 7) for arm in ("baseline", "candidate"))


def test_neutral_change_never_screens_faster_and_is_not_promoted(screened):
    proc = run_script("compare_perf.py", "quick", "--op-dir", screened, "--baseline", "round_001",
                      "--quick", "quick_001", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    quick = json.loads((screened / "docs/perf/quick/quick_001/quick_performance.json").read_text())
    arms = {row["case"]: row["baseline_samples_us"] for row in quick["cases"]}
    assert result["paired"] is True and result["paired_baseline_version"] == "docs/perf/versions/v000"
    for row in result["per_case"]:
        assert row["samples"]["baseline"] == arms[row["case"]]   # the pairs, not the round's samples
        assert row["verdict"] not in ("faster", "insufficient") and row["reason_code"] != "independent_not_calibrated"
    assert result["promotion"]["promote"] is False


def test_unpaired_screen_without_calibration_claims_no_size(screened):
    proc = run_script("compare_perf.py", "quick", "--op-dir", screened, "--baseline", "round_001",
                      "--quick", "quick_002", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["paired"] is False
    assert {r["verdict"] for r in result["per_case"]} == {"inconclusive"}   # relabelled or straddling the band
    assert {r["reason_code"] for r in result["per_case"]} <= {"independent_not_calibrated", "ci_straddles_band"}
    assert result["promotion"]["promote"] is False
    assert result["promotion"]["rule_text"].startswith("independent_not_calibrated")


def test_paired_screen_against_a_round_of_other_code_is_refused(screened, tmp_path):
    op = tmp_path / "softmax"
    shutil.copytree(screened, op)
    version = op / "docs/perf/versions/v000/test_softmax.py"
    version.write_text(version.read_text() + "\n# other code than round_001 measured\n")
    proc = run_script("collect_perf.py", "quick", "--op-dir", op, "--paired-with", version.parent)
    assert proc.returncode == 0, proc.stderr
    assert_one_line_error(run_script("compare_perf.py", "quick", "--op-dir", op, "--baseline", "round_001",
                                     "--quick", "quick_003"), 2, "--baseline", "paired with")
