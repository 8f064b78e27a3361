"""Reading PyPTO's cost-model simulator files: stat report, config.ini, bubble log, per-pipe busy model.

The recorded fixtures are unchanged outputs of pypto 0.2.0 (SIM mode, A2A3): a 64x1024 float32
softmax with 8-row vector tiles (8 AIV tasks) and a 128^3 float16 matmul with 64-wide cube tiles
(4 AIC tasks).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perftune.errors import ContractError
from perftune.profiler import pypto_sim_files as files
from perftune.measure import routing

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "pypto_sim" / "recorded"


def text(case: str, name: str) -> str:
    return (RECORDED / case / name).read_text(encoding="utf-8")


def model(case: str) -> dict:
    return files.busy_model(json.loads(text(case, files.SWIM_JSON)), json.loads(text(case, files.PIPE_SWIM_JSON)))


def test_stat_report_gives_total_cycles_tasks_and_per_pipe_usage():
    stat = files.parse_stat_report(text("vector_softmax", files.STAT_REPORT))
    assert stat["total_cycles"] == 10784 and stat["core_total_cycles"] == 10784
    assert stat["tasks"] == 8 and stat["average_task_cycles"] == 3448.0 and stat["max_task_cycles"] == 3448.0
    assert stat["pipes"]["Vector"] == {"used": 8, "average_cycles": 944.0, "percent": 8.75}
    assert stat["pipes"]["MTE_IN"] == {"used": 8, "average_cycles": 1748.0, "percent": 16.21}
    assert stat["pipes"]["Cube"]["used"] == 0


@pytest.mark.parametrize("edit,field", [
    (lambda t: re.sub(r"Total Cycles\.+:\s+10784\n", "", t, count=1), "Total Cycles"),
    (lambda t: re.sub(r"(Average Vector Usage\.+:\s+)944\.00", r"\1N/A", t), "Average Vector Usage"),
    (lambda t: t.replace("ASC++ MachineModel Report", "Other"), "-"),
])
def test_a_missing_or_unreadable_stat_field_is_an_error_never_zero(edit, field):
    with pytest.raises(ContractError) as err:
        files.parse_stat_report(edit(text("vector_softmax", files.STAT_REPORT)), "r.txt")
    assert err.value.field == field


def test_config_ini_names_the_simulated_chip_and_a_missing_chip_is_refused():
    assert files.parse_config_ini(text("vector_softmax", files.CONFIG_INI))["Model"]["deviceArch"] == "A2A3"
    with pytest.raises(ContractError, match="deviceArch"):
        files.parse_config_ini("[Model]\nfoo = 1\n")


def test_bubble_log_keeps_only_cores_that_ran_tasks():
    cores = files.parse_bubble_log(text("vector_softmax", files.BUBBLE_LOG))
    assert len(cores) == 8 and all(c["tasks"] == 1 for c in cores.values())
    assert cores["AIV_25"]["wait_us"] == 0.0 and cores["AIV_26"]["wait_schedule_us"] > 0
    with pytest.raises(ContractError, match="missing"):
        files.parse_bubble_log("[AIV_1] Execute task num:1\n    Core Total Work Time: 1.0\n")


def test_busy_model_of_the_vector_kernel_has_no_cube_and_no_in_core_overlap():
    aiv = model("vector_softmax")["AIV"]
    assert aiv["cores"] == 8 and aiv["task_cycles"] == 8 * 3448
    assert set(aiv["busy_cycles"]) == {"vec", "mte2", "mte3"}
    assert aiv["busy_cycles"]["mte2"] == 8 * 1748 and aiv["busy_cycles"]["mte3"] == 8 * 735
    assert aiv["overlap_cycles"] == 0   # load, compute, store of one tile run one after another


def test_the_bound_route_of_a_simulated_launch_comes_from_the_msprof_routing_code():
    vec_row = files.route_row(model("vector_softmax"), 1800.0)
    assert vec_row["aiv_time(us)"] == pytest.approx(8 * 3448 / 1800.0)
    assert "aiv_scalar_ratio" not in vec_row          # no scalar pipe in the model: missing, not 0
    assert routing.route(vec_row)["primary_core"] == "aiv"
    cube = routing.route(files.route_row(model("cube_matmul"), 1800.0))
    assert cube["primary_core"] == "aic" and cube["label"] == "data_movement_candidate"
    assert cube["ratios"]["aic_mte2_ratio"] == pytest.approx(0.884604)


def test_an_unknown_pipe_is_recorded_not_fatal_and_pipe_s_is_the_scalar_family():
    logs = {"VECTOR_ALU": [{"execStart": 0, "execEnd": 10}], "PIPE_S": [{"execStart": 10, "execEnd": 14}],
            "PIPE_NEW": [{"execStart": 2, "execEnd": 6}, {"execStart": 4, "execEnd": 8}]}
    block = files.busy_model([], [{"coreType": "AIV", "blockIdx": 1, "pipeLogs": logs}])["AIV"]
    assert block["unknown_pipes"] == {"PIPE_NEW": 6}
    assert block["busy_cycles"] == {"vec": 10, "scalar": 4} and block["task_cycles"] == 14
    route = routing.route(files.route_row({"AIV": block}, 1800.0))
    assert route["ratios"]["aiv_scalar_ratio"] == pytest.approx(4 / 14)


def test_every_pipe_of_the_installed_pypto_has_a_family():
    """PIPE_FAMILY follows pypto's own pipe_name_map (its lib/scripts/draw_pipe_swim_lane.py)."""
    import importlib.util
    from perftune.errors import EnvError
    from perftune.measure.backends import pypto_sim
    if importlib.util.find_spec("pypto") is None:  # without the extra: one line naming the install
        with pytest.raises(EnvError, match="pypto"):
            pypto_sim.pypto_pipe_names()
        return
    names = pypto_sim.pypto_pipe_names()
    assert "PIPE_S" in names and "VECTOR_ALU" in names
    assert set(names) <= set(files.PIPE_FAMILY)


def test_pipe_names_come_from_the_script_literal():
    script = "x = 1\npipe_name_map = {5: 'PIPE_S', 4: 'MTE_IN'}\n"
    assert files.pipe_names_of_script(script) == ["MTE_IN", "PIPE_S"]
    with pytest.raises(ContractError, match="pipe_name_map"):
        files.pipe_names_of_script("x = 1\n")


def test_busy_model_refuses_a_reversed_span():
    with pytest.raises(ContractError, match="bad span"):
        files.busy_model([], [{"coreType": "AIV", "blockIdx": 1,
                               "pipeLogs": {"MTE_IN": [{"execStart": 9, "execEnd": 3}]}}])


spans = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 100)).map(lambda t: (t[0], t[0] + t[1])),
                 max_size=12)


@settings(max_examples=60, deadline=None)
@given(vec=spans, mte=spans)
def test_busy_cycles_are_unions_and_overlap_never_exceeds_either_pipe(vec, mte):
    logs = {"VECTOR_ALU": [{"execStart": a, "execEnd": b} for a, b in vec],
            "MTE_IN": [{"execStart": a, "execEnd": b} for a, b in mte]}
    result = files.busy_model([], [{"coreType": "AIV", "blockIdx": 0, "pipeLogs": logs}])
    if not vec and not mte:
        assert result == {}
        return
    block = result["AIV"]
    covered = lambda pairs: len({t for a, b in pairs for t in range(a, b)})
    assert block["busy_cycles"].get("vec", 0) == covered(vec)
    assert block["busy_cycles"].get("mte2", 0) == covered(mte)
    assert block["overlap_cycles"] == len({t for a, b in vec for t in range(a, b)} &
                                          {t for a, b in mte for t in range(a, b)})


def test_tile_results_give_the_result_width_of_every_tile_op_of_the_recorded_launches():
    """The result tile's bytes over its elements (P9.kb_obligation on pypto-sim), from real files:
    the vector softmax sums its rows into float32 tiles, the cube matmul accumulates in a float32 L0C
    from float16 L0A/L0B tiles."""
    vector = set(files.tile_results(json.loads((RECORDED / "vector_softmax" / files.PIPE_SWIM_JSON).read_text())))
    cube = set(files.tile_results(json.loads((RECORDED / "cube_matmul" / files.PIPE_SWIM_JSON).read_text())))
    assert ("ROWSUM_SINGLE", 4) in vector and ("ROWMAX_SINGLE", 4) in vector
    assert {("A_MUL_B", 4), ("A_MULACC_B", 4), ("L1_TO_L0A", 2), ("L1_TO_L0B", 2)} <= cube
    assert files.tile_results([{"pipeLogs": {"VECTOR_ALU": [{"tileOp": "1 ROWSUM_SINGLE 2 UB_[0,0][8,64]-2-3 "
                                                             "1024B TO 4 UB_[0,0][8,8]-4-5 128B, SUBGRAPH[0]"}]}},
                               {"blockIdx": 1}, "junk"]) == [("ROWSUM_SINGLE", 2)]
