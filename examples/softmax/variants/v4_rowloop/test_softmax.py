"""Stage 4 delivery of softmax for the cpu backend: one kernel, one wrapper, one test per P0 case.

Run directly (`python test_softmax.py`) to check every case; the Stage 5 cpu backend imports this
module and times the single call of `softmax_kernel` made by each `test_*` function.
"""

import numpy as np

from softmax_golden import _get_device, _make_inputs
from softmax_golden_cpu import softmax_golden_cpu

CASES = {
    "r64_c4096_fp32": ((64, 4096), "float32"),
    "r512_c1024_fp32": ((512, 1024), "float32"),
    "r64_c4096_fp16": ((64, 4096), "float16"),
    "r1024_c256_fp16": ((1024, 256), "float16"),
}
TOLERANCE = {"float32": (1e-6, 1e-5), "float16": (1e-4, 1e-3)}
MIN_MATCHED = 0.999


def softmax_kernel(x, out):
    """v4_rowloop (bd-row-locality on v2): one row per step so each row stays in L1 for all passes.

    Hypothesis from the roofline residual (four streaming passes per element). The row loop runs
    in the Python interpreter: five numpy calls per row.
    """
    work = np.empty(x.shape[1], np.float32)
    for r in range(x.shape[0]):
        row = x[r]
        np.copyto(work, row)
        work -= work.max()
        np.exp(work, out=work)
        np.multiply(work, np.float32(1.0) / work.sum(), out=out[r], casting="same_kind")


def softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.ndim}-D")
    out = np.empty_like(x)
    softmax_kernel(x, out)
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
    shape, dtype = CASES[case_id]
    x = _make_inputs(shape, dtype, device=_get_device())
    actual = softmax_wrapper(x)
    _assert_precision(actual, softmax_golden_cpu(x), dtype)


def test_r64_c4096_fp32():
    _run_case("r64_c4096_fp32")


def test_r512_c1024_fp32():
    _run_case("r512_c1024_fp32")


def test_r64_c4096_fp16():
    _run_case("r64_c4096_fp16")


def test_r1024_c256_fp16():
    _run_case("r1024_c256_fp16")


if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
