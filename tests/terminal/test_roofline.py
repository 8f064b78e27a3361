"""roofline: necessary work, floors, attained fraction and the status rules, on exact numbers."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from perftune.terminal import roofline
from perftune.contract import schemas
from perftune.errors import ContractError

# a per-element model written as an operator's SPEC declares it (4 arithmetic + 1 exp per element)
SOFTMAX = {"source": "SPEC.md#test", "dims": [{"dim": "rows", "value": "shape[0]"}, {"dim": "cols", "value": "shape[1]"}],
           "operations": [{"operation": "max, subtract, sum, scale", "class": "arithmetic", "count": "4", "per": "rows*cols"},
                          {"operation": "exp", "class": "transcendental", "count": "1", "per": "rows*cols"}],
           "tensors": [{"tensor": "x", "direction": "read", "elements": "rows*cols"},
                       {"tensor": "y", "direction": "write", "elements": "rows*cols"}]}


def _platform(arith=1e9, trans=1e8, memory=1e9) -> roofline.Platform:
    peaks = {"arithmetic_ops_per_s": {"value": arith, "unit": "op/s", "status": "measured", "source": "t"},
             "memory_bytes_per_s": {"value": memory, "unit": "B/s", "status": "measured", "source": "t"}}
    if trans is not None:
        peaks["transcendental_ops_per_s"] = {"value": trans, "unit": "op/s", "status": "measured", "source": "t"}
    return roofline.parse_platform({"platform_id": "p", "backend": "cpu", "peaks": peaks})


def test_softmax_necessary_work_and_bytes():
    work = roofline.case_work("c", "[64,4096]", "fp32", SOFTMAX)
    assert (work.arithmetic_ops, work.transcendental_ops, work.bytes) == (1048576, 262144, 2097152)
    assert roofline.case_work("h", "[1024,256]", "float16", SOFTMAX).bytes == 1048576


def test_floors_use_the_transcendental_peak_for_exp():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    floors = roofline.floors_us(work, _platform())
    assert floors["compute_floor_us"] == pytest.approx(1048.576 + 2621.44)
    assert floors["memory_floor_us"] == pytest.approx(2097.152)
    assert floors["transcendental_rate"] == "measured_peak"


def test_missing_transcendental_peak_falls_back_to_the_arithmetic_rate_and_says_so():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    floors = roofline.floors_us(work, _platform(trans=None))
    assert floors["compute_floor_us"] == pytest.approx(1310.72)
    assert floors["transcendental_rate"] == "arithmetic_peak_fallback"


def test_balanced_when_the_floors_are_within_a_factor_two():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    result = roofline.roofline(work, 7340.032, _platform(), fixed_share=0.01)
    assert result["status"] == "balanced_compute_movement"
    assert result["compute_to_memory_ratio"] == 1.75
    assert result["attained_fraction"] == 0.5
    assert result["roof_us"] == 3670.02 and result["binding_roof"] == "compute"
    assert result["arithmetic_intensity_ops_per_byte"] == 0.625
    assert result["attained_bytes_per_s"] == pytest.approx(2.85714e8)


def test_compute_bound_for_float16_bytes():
    work = roofline.case_work("h", "[64,4096]", "float16", SOFTMAX)
    result = roofline.roofline(work, 4000.0, _platform(), fixed_share=0.0)
    assert result["compute_to_memory_ratio"] == 3.5
    assert result["status"] == "compute_bound"


def test_data_movement_bound_when_compute_is_cheap():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    result = roofline.roofline(work, 4194.304, _platform(arith=1e12, trans=1e12), fixed_share=0.0)
    assert result["status"] == "data_movement_bound"
    assert result["attained_fraction"] == 0.5 and result["binding_roof"] == "memory"


def test_scalar_bound_wins_when_fixed_overhead_dominates():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    result = roofline.roofline(work, 7340.032, _platform(), fixed_share=0.51)
    assert result["status"] == "scalar_bound" and "51.0%" in result["reason"]
    assert roofline.roofline(work, 7340.032, _platform(), fixed_share=0.5)["status"] != "scalar_bound"


def test_wait_bound_below_the_meaningful_fraction():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    at_threshold = roofline.roofline(work, 3670.016 / 0.25, _platform(), fixed_share=0.0)
    assert at_threshold["status"] == "balanced_compute_movement"
    below = roofline.roofline(work, 3670.016 / 0.2, _platform(), fixed_share=0.0)
    assert below["status"] == "wait_bound" and below["attained_fraction"] == 0.2


def test_missing_time_or_share_is_never_zero():
    work = roofline.case_work("c", "[64,4096]", "float32", SOFTMAX)
    no_time = roofline.roofline(work, None, _platform(), fixed_share=0.0)
    assert no_time["status"] == "insufficient_evidence" and no_time["attained_fraction"] is None
    assert no_time["measured_us"] is None and no_time["attained_ops_per_s"] is None
    assert roofline.roofline(work, 5000.0, _platform(), fixed_share=None)["status"] == "insufficient_evidence"


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "1e9", True])
def test_platform_refuses_bad_peaks(value):
    peaks = {"arithmetic_ops_per_s": {"value": value, "unit": "op/s", "status": "measured", "source": "t"},
             "memory_bytes_per_s": {"value": 1e9, "unit": "B/s", "status": "measured", "source": "t"}}
    with pytest.raises(ContractError, match="arithmetic_ops_per_s"):
        roofline.parse_platform({"platform_id": "p", "backend": "cpu", "peaks": peaks}, "f.json")


def test_platform_needs_memory_and_arithmetic_peaks():
    peaks = {"arithmetic_ops_per_s": {"value": 1e9, "unit": "op/s", "status": "measured", "source": "t"}}
    with pytest.raises(ContractError, match="memory_bytes_per_s"):
        roofline.parse_platform({"platform_id": "p", "backend": "cpu", "peaks": peaks})


@pytest.mark.parametrize("shape, dtype", [("[64]", "float32"), ("[4,8]", "complex64")])
def test_case_work_refuses_bad_shapes_and_dtypes(shape, dtype):
    with pytest.raises(ContractError):
        roofline.case_work("c", shape, dtype, SOFTMAX)


@pytest.mark.parametrize("name", ["atlas-a2-910b", "atlas-a3-910c"])
def test_shipped_ascend_platforms_validate_and_are_marked_unverified(name):
    obj = json.loads((ROOT / "platforms" / f"{name}.json").read_text())
    schemas.validate(obj, "platform", name)
    platform = roofline.parse_platform(obj, name)
    assert platform.backend == "msprof"
    assert {p.status for p in platform.peaks.values()} == {"unverified_external"}
    assert all(p.source for p in platform.peaks.values())


# a matrix product as the pypto_matmul SPEC declares it: 2*k multiply-adds per output, float16 in, float32 out
MATMUL = {"source": "SPEC.md#test", "dims": [{"dim": "m", "value": "a[0]"}, {"dim": "k", "value": "a[1]"},
                                             {"dim": "n", "value": "b[1]"}],
          "operations": [{"operation": "multiply-add", "class": "matmul", "count": "2*k", "per": "m*n"}],
          "tensors": [{"tensor": "a", "direction": "read", "elements": "m*k", "dtype": "float16"},
                      {"tensor": "b", "direction": "read", "elements": "k*n", "dtype": "float16"},
                      {"tensor": "y", "direction": "write", "elements": "m*n", "dtype": "float32"}]}


def test_matmul_work_runs_at_the_cube_peak_and_falls_back_to_the_arithmetic_one():
    """2*M*N*K operations of the matmul class: 256x512x256 is 67,108,864 ops and 786,432 bytes; with a
    cube peak of 1e12 op/s the floor is 67.1 µs, without one the arithmetic peak (1e9) gives 67,108.9 µs."""
    work = roofline.case_work("c", "a:[256,512] b:[512,256]", "float16", MATMUL)
    assert (work.matmul_ops, work.arithmetic_ops, work.bytes) == (67108864, 0, 786432)
    cube = _platform(memory=1e12)
    cube.peaks["matmul_ops_per_s"] = roofline.Peak(1e12, "op/s", "measured", "t")
    floors = roofline.floors_us(work, cube)
    assert floors["compute_floor_us"] == pytest.approx(67.108864) and floors["matmul_rate"] == "matmul_peak"
    fallback = roofline.floors_us(work, _platform())
    assert fallback["compute_floor_us"] == pytest.approx(67108.864)
    assert fallback["matmul_rate"] == "arithmetic_peak_fallback"
    result = roofline.roofline(work, 134.217728, cube, fixed_share=0.0)
    assert result["matmul_ops"] == 67108864 and result["attained_fraction"] == 0.5
    assert result["status"] == "compute_bound"  # compute floor 67.1 µs against 0.79 µs of memory at 1e12 B/s


def test_the_pypto_sim_platform_carries_a_measured_cube_peak_above_the_vector_one():
    obj = json.loads((ROOT / "platforms" / "pypto-sim-a2a3.json").read_text())
    schemas.validate(obj, "platform", "pypto-sim-a2a3")
    peaks = roofline.parse_platform(obj).peaks
    assert peaks["matmul_ops_per_s"].status == "measured"
    # 7865.6 op/cycle per cube core x 24 cores x 1800 MHz (the probe in the peak's source)
    assert peaks["matmul_ops_per_s"].value == pytest.approx(2 * 1536 * 1024 * 1024 / 17064 * 1.8e9, rel=1e-4)
    assert peaks["matmul_ops_per_s"].value > 50 * peaks["arithmetic_ops_per_s"].value
