"""Code-level hotspots (issue 37 Deliver 4): msOpProf's instruction and source-line tables and pypto-sim's
cycles per tile op, on real files; every expected figure was summed with awk / jq over the file, never with
the reader under test (tests/fixtures/real_profiler/tilelang_opprof_foreach_norm/PROVENANCE.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import call_script
from perftune.errors import ContractError
from perftune.profiler import hotspots, occupancy, pypto_sim_files
from perftune.terminal import sim_evidence

ROOT = Path(__file__).resolve().parents[2]
NORM = ROOT / "tests/fixtures/real_profiler/tilelang_opprof_foreach_norm"
RECORDED = ROOT / "tests/fixtures/pypto_sim/recorded"


def test_msopprof_instruction_hotspots_of_a_real_vector_core():
    path = NORM / "core0.veccore1" / "core0.veccore1_instr_exe.csv"
    found = hotspots.instr_exe(path.read_text(encoding="utf-8"), str(path), n=3)
    assert (found["rows"], found["total_cycles"]) == (16, 35421)
    assert {p: v["cycles"] for p, v in found["by_pipe"].items()} == {"VECTOR": 30499, "MTE2": 2907, "MTE3": 1357,
                                                                     "SCALAR": 658}
    assert [(t["name"], t["addr"], t["cycles"], t["calls"]) for t in found["top"]] == [
        ("BAR", "282123832", 13301, 10), ("BAR", "282123768", 2453, 2), ("BAR", "282123124", 2405, 2)]
    assert found["top"][0]["share"] == pytest.approx(13301 / 35421, abs=1e-6)


def test_an_empty_source_line_table_says_no_line_was_recorded_and_the_cli_reads_both():
    path = NORM / "core0.veccore1" / "core0.veccore1_code_exe.csv"
    found = hotspots.code_exe(path.read_text(encoding="utf-8"), str(path))
    assert found["rows"] == 0 and found["top"] == [] and "debug line" in found["note"]
    proc = call_script("profiler_inspect.py", NORM, "--json")
    assert proc.returncode == 0, proc.stderr
    kinds = {m["kind"]: m for m in json.loads(proc.stdout)["msopprof"]}
    assert kinds["instr_exe"]["content"]["top"][0]["cycles"] == 13301 and kinds["code_exe"]["content"]["rows"] == 0


def test_a_bad_cycles_cell_is_a_contract_error():
    with pytest.raises(ContractError, match="cycles"):
        hotspots.instr_exe("instr,addr,pipe,call_count,cycles,running_time(us)\nBAR,1,VECTOR,1,x,0.1\n", "t.csv")


@pytest.mark.parametrize("recorded, total, first, second", [
    ("vector_softmax", 27416, ("COPY_IN", 13984, 8), ("COPY_OUT", 5880, 8)),
    ("cube_matmul", 28404, ("COPY_IN", 23856, 16), ("COPY_OUT", 2080, 4)),
])
def test_cycles_per_tile_op_of_recorded_simulations(tmp_path, recorded, total, first, second):
    case = tmp_path / "case_x"
    shutil.copytree(RECORDED / recorded, case / "repeat_001")
    profile = sim_evidence.case_profile(case)
    ops = profile["tile_ops"]
    assert ops["total_cycles"] == total and ops["file"] == "case_x/repeat_001/_simulate.pipe.swim.json"
    assert [(t["name"], t["cycles"], t["count"]) for t in ops["top"][:2]] == [first, second]
    assert len(ops["top"]) == min(hotspots.TOP_N, ops["ops"]) and ops["top"][0]["source_line"] is None


def test_per_core_spread_of_simulated_work():
    log = (RECORDED / "vector_softmax" / "bubble_analysis.log").read_text(encoding="utf-8")
    found = occupancy.sim_spread(pypto_sim_files.parse_bubble_log(log), "bubble_analysis.log")
    # AIV_25..AIV_32 work 1.9155..2.6933 us (grep 'Core Total Work Time'): (max - min) / max
    assert (found["side"], found["blocks"]) == ("aiv", 8)
    assert found["spread"] == pytest.approx((2.6933333333333334 - 1.9155555555555552) / 2.6933333333333334, abs=1e-6)
    cube = pypto_sim_files.parse_bubble_log((RECORDED / "cube_matmul" / "bubble_analysis.log").read_text(encoding="utf-8"))
    assert occupancy.sim_spread(cube, "b")["blocks"] == 4          # AIC_1, 2, 5, 6; the HUB_80 scheduler is not a core
