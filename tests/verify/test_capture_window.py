"""msprof: the whole capture's device time against the target's rows (issue 28 item 7), on real
profiler tables (tests/fixtures/real_profiler, provenance in each folder) and a planted variant."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT
from perftune.measure import evidence
from perftune.measure.backends import msprof
from perftune.profiler import launches, msprof_csv
from perftune.verify import capture_window

REAL = ROOT / "tests" / "fixtures" / "real_profiler"
KERNEL_PARSE = REAL / "msinsight_kernel_parse" / "op_summary_1.csv"
ADD = REAL / "cannbot_add_cann9"
ASCENDC = next((ADD / "ascendc_b1").glob("PROF_*/mindstudio_profiler_output/op_summary_*.csv"))
TORCH = next((ADD / "torch_b1").glob("PROF_*/mindstudio_profiler_output/op_summary_*.csv"))


def _frame(path: Path):
    return msprof_csv.read_op_summary(path.read_text(encoding="utf-8-sig"), str(path))


def _by_hand(path: Path, target: str) -> tuple[float, float]:
    """(target µs, other µs) with the csv module: per op its compute rows (Task Type), else every row."""
    per_op: dict[str, list[tuple[str, float]]] = {}
    for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))):
        per_op.setdefault(row["Op Name"].strip(), []).append((row["Task Type"].strip(), float(row["Task Duration(us)"])))
    def device(rows):
        compute = [d for kind, d in rows if kind in launches.COMPUTE_TASK_TYPES]
        return sum(compute) if compute else sum(d for _k, d in rows)
    return device(per_op.pop(target)), sum(device(rows) for rows in per_op.values())


def test_the_capture_of_a_real_table_counts_every_other_op_and_names_the_non_compute_ones():
    """msinsight (Mulan PSL v2): ZerosLike 496.8508 us beside FlashAttentionScore's 4 MIX_AIC launches
    (21114.6921 us), Cast/NonZero kernels and HCCL collectives (non-compute)."""
    got = launches.capture(_frame(KERNEL_PARSE), "ZerosLike", str(KERNEL_PARSE))
    target, other = _by_hand(KERNEL_PARSE, "ZerosLike")
    assert got["target_us"] == pytest.approx(target) == 496.8508
    assert got["other_us"] == pytest.approx(other, abs=1e-6) and got["capture_us"] == pytest.approx(target + other)
    assert got["others"][0] == {"op_name": "FlashAttentionScore", "launches": 4, "device_us": 21114.6921,
                                "aclnn": False, "compute": True, "task_types": ["MIX_AIC"]}
    assert {"hcom_broadcast__483_0", "hcom_allReduce__483_2"} <= set(got["non_compute_ops"])
    assert got["aclnn_ops"] == []


def _round(tmp_path: Path, name: str, text: str) -> evidence.RoundEvidence:
    folder = tmp_path / name / "c1" / "repeat_001"
    folder.mkdir(parents=True)
    (folder / msprof.TIMING_FILE).write_text(text)
    case = evidence.CaseEvidence("c1", folder.parent, {}, [1.0])
    return evidence.RoundEvidence(tmp_path / name, {"collection_id": name, "repeats": 1, "backend": "msprof"},
                                  {"c1": case})


def test_work_moved_into_an_aclnn_kernel_is_cheating_and_a_faster_target_alone_is_not(tmp_path):
    """Planted from two real CANN 9 tables (BobbyWeng/cannbot-ascendc-vs-pypto @2da58fc): the baseline is
    the Ascend C add (add_kernel, 107.582 us); the cheat halves add_kernel's rows and adds the torch
    table's aclnnAdd rows (the same add done by torch on the device); the twin only halves add_kernel."""
    base_text = ASCENDC.read_text(encoding="utf-8-sig")
    header, *rows = base_text.splitlines()
    durations = header.split(",").index("Task Duration(us)")

    def halved(line: str) -> str:
        cells = line.split(",")
        cells[durations] = f"{float(cells[durations]) / 2:.3f}"
        return ",".join(cells)

    faster = "\n".join([header, *map(halved, rows)]) + "\n"
    moved = faster + "\n".join(TORCH.read_text(encoding="utf-8-sig").splitlines()[1:]) + "\n"
    man = SimpleNamespace(target_case_ids=("c1",))
    base = _round(tmp_path, "round_001", base_text)
    for name, text, caught in (("round_002", moved, True), ("round_003", faster, False)):
        found = capture_window.problems(man, base, _round(tmp_path, name, text), "add_kernel")
        assert [(p[0], p[1]) for p in found] == ([("P9.capture_window", "cheating")] if caught else [])
    [(_c, _k, message, _want, got)] = capture_window.problems(man, base, _round(tmp_path, "r4", moved), "add_kernel")
    torch_us = _by_hand(TORCH, "aclnnAdd_AddAiCore_Add")[0]   # 34.92 us of the torch table
    assert got == f"{torch_us:.3f} us more" and "aclnnAdd_AddAiCore_Add" in message
