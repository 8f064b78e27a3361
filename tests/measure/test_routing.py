"""Bound routing (DESIGN §6): primary core, family maxima, the two thresholds, every label."""

from __future__ import annotations

import pytest

from perftune.measure import routing
from perftune.errors import ContractError


def aiv(**ratios):
    return {"aicore_time(us)": 0.0, "aiv_time(us)": 10.0, **ratios}


def aic(**ratios):
    return {"aicore_time(us)": 10.0, "aiv_time(us)": 4.0, **ratios}


def test_primary_core_ties_go_to_aic_and_missing_is_not_zero():
    assert routing.primary_core({"aicore_time(us)": 5.0, "aiv_time(us)": 5.0}) == "aic"
    assert routing.primary_core({"aicore_time(us)": 4.9, "aiv_time(us)": 5.0}) == "aiv"
    assert routing.primary_core({"aiv_time(us)": 2.0}) == "aiv"
    assert routing.primary_core({"aicore_time(us)": "N/A", "aiv_time(us)": 0.0}) is None
    assert routing.primary_core({"aicore_time(us)": 0.0, "aiv_time(us)": 0.0}) is None
    assert routing.primary_core({}) is None


def test_no_primary_core_is_insufficient_evidence_even_with_ratios():
    out = routing.route({"aicore_time(us)": 0, "aiv_time(us)": None, "aiv_vec_ratio": 0.99})
    assert out["label"] == "insufficient_evidence" and out["primary_core"] is None
    assert out["triggered_families"] == []


def test_no_ratio_present_is_insufficient_evidence():
    out = routing.route(aiv(aiv_vec_ratio=None, aiv_mte2_ratio="N/A"))
    assert out["label"] == "insufficient_evidence"
    assert out["family_max"] == {"compute": None, "data_movement": None, "scalar": None}


def test_each_single_family_label():
    assert routing.route(aiv(aiv_vec_ratio=0.81, aiv_mte2_ratio=0.3))["label"] == "compute_candidate"
    assert routing.route(aiv(aiv_vec_ratio=0.2, aiv_mte3_ratio=0.9))["label"] == "data_movement_candidate"
    assert routing.route(aiv(aiv_scalar_ratio=0.95, aiv_vec_ratio=0.1))["label"] == "scalar_candidate"
    assert routing.route(aic(aic_cube_ratio=0.85, aic_fixpipe_ratio=0.2))["label"] == "compute_candidate"
    assert routing.route(aic(aic_fixpipe_ratio=0.75, aic_mac_ratio=0.5))["label"] == "data_movement_candidate"


def test_no_dominant_pipe_when_nothing_crosses_either_threshold():
    out = routing.route(aiv(aiv_vec_ratio=0.70, aiv_mte2_ratio=0.5, aiv_scalar_ratio=0.1))
    assert out["label"] == "no_dominant_pipe" and out["triggered_families"] == []
    assert out["family_max"] == {"compute": 0.70, "data_movement": 0.5, "scalar": 0.1}


def test_high_threshold_is_strict_0_80_versus_0_8000001():
    at = routing.route(aiv(aiv_vec_ratio=0.81, aiv_mte2_ratio=0.80))
    assert at["label"] == "compute_candidate" and at["triggered_families"] == ["compute"]
    above = routing.route(aiv(aiv_vec_ratio=0.81, aiv_mte2_ratio=0.8000001))
    assert above["label"] == "mixed" and above["triggered_families"] == ["compute", "data_movement"]


def test_max_rule_needs_the_overall_maximum_and_strictly_above_0_70():
    assert routing.route(aiv(aiv_mte2_ratio=0.71, aiv_vec_ratio=0.705))["label"] == "data_movement_candidate"
    assert routing.route(aiv(aiv_mte2_ratio=0.70, aiv_vec_ratio=0.2))["label"] == "no_dominant_pipe"
    assert routing.route(aiv(aiv_mte2_ratio=0.7000001))["label"] == "data_movement_candidate"


def test_tied_maxima_above_0_70_are_mixed():
    out = routing.route(aiv(aiv_vec_ratio=0.75, aiv_scalar_ratio=0.75))
    assert out["label"] == "mixed" and out["triggered_families"] == ["compute", "scalar"]
    assert out["scalar_route_triggered"] is True


def test_routing_uses_only_the_primary_core_columns():
    row = aic(aiv_vec_ratio=0.99, aic_mac_ratio=0.3, aic_mte2_ratio=0.2)
    out = routing.route(row)
    assert out["label"] == "no_dominant_pipe"
    assert out["ratios"] == {"aic_mac_ratio": 0.3, "aic_mte2_ratio": 0.2}


def test_route_is_never_a_verdict():
    out = routing.route(aiv(aiv_vec_ratio=0.99))
    assert out["completion_eligible"] is False
    assert out["roofline_terminal_status"] == "insufficient_evidence"
    assert out["pipeline_overlap_status"] == "unverified"
    assert out["kind"] == "op_summary_ratio_route"
    assert out["thresholds"] == {"high": 0.8, "max": 0.7}


@pytest.mark.parametrize("bad", [1.0000001, -0.01, float("inf"), "abc", True])
def test_ratio_outside_unit_interval_or_not_a_number_is_a_contract_error(bad):
    with pytest.raises(ContractError) as err:
        routing.route(aiv(aiv_vec_ratio=bad), source="op_summary_PipeUtilization.csv")
    assert "aiv_vec_ratio" in str(err.value) and "op_summary_PipeUtilization.csv" in str(err.value)


def test_negative_time_is_a_contract_error():
    with pytest.raises(ContractError, match="aiv_time"):
        routing.primary_core({"aicore_time(us)": 1.0, "aiv_time(us)": -2.0})


def test_boundary_values_0_and_1_are_valid_ratios():
    assert routing.route(aiv(aiv_vec_ratio=1.0, aiv_mte2_ratio=0.0))["label"] == "compute_candidate"
