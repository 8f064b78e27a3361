"""Stage 4 delivery of linear for the cpu backend: one kernel, one wrapper, one test per case.

Run directly (`python test_linear.py`) to check every case; the Stage 5 cpu backend imports this
module and times the single call of `linear_kernel` made by each `test_*` function.
"""

import numpy as np

from linear_golden import _get_device, _make_inputs
from linear_golden_cpu import linear_golden_cpu

CASES = {
    "m64_k256_n256_relu_fp32": ((64, 256, 256), "float32", "relu"),
    "m128_k128_n512_fp16": ((128, 128, 512), "float16", "none"),
    "m3_k5_n7_relu_fp32": ((3, 5, 7), "float32", "relu"),
    "m1_k64_n3_fp16": ((1, 64, 3), "float16", "none"),
}
TOLERANCE = {"float32": (1e-5, 1e-4), "float16": (1e-3, 1e-2)}
MIN_MATCHED = 0.999


def linear_kernel(x, w, b, act, out):
    """v1_hoist: widen w and b to float64 once per call, not once per row; still one row at a time."""
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    for i in range(x.shape[0]):
        row = x[i].astype(np.float64) @ w64 + b64
        if act == "relu":
            row = np.maximum(row, 0.0)
        out[i] = row.astype(out.dtype)


def linear_wrapper(x, w, b, act):
    """Host boundary: check the arguments, allocate the output, launch the kernel once."""
    if x.ndim != 2 or w.ndim != 2 or b.ndim != 1 or x.shape[1] != w.shape[0] or w.shape[1] != b.shape[0]:
        raise ValueError(f"linear expects x[m,k], w[k,n], b[n]; got {x.shape}, {w.shape}, {b.shape}")
    out = np.empty((x.shape[0], w.shape[1]), dtype=x.dtype)
    linear_kernel(x, w, b, act, out)
    return out


def _assert_precision(actual, expected, dtype):
    atol, rtol = TOLERANCE[dtype]
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={matched:.6f}")
    print(f"max_abs_error={float(err.max()):.3e}")
    assert matched >= MIN_MATCHED, f"precision gate failed: matched_ratio={matched:.6f}"
    print("PASS")


def _run_case(case_id):
    (m, k, n), dtype, act = CASES[case_id]
    x, w, b = _make_inputs(m, k, n, dtype, device=_get_device())
    actual = linear_wrapper(x, w, b, act)
    _assert_precision(actual, linear_golden_cpu(x, w, b, act), dtype)


def test_m64_k256_n256_relu_fp32():
    _run_case("m64_k256_n256_relu_fp32")


def test_m128_k128_n512_fp16():
    _run_case("m128_k128_n512_fp16")


def test_m3_k5_n7_relu_fp32():
    _run_case("m3_k5_n7_relu_fp32")


def test_m1_k64_n3_fp16():
    _run_case("m1_k64_n3_fp16")

if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
