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
    """v3_row_blocks (general-13 on v2): process rows in blocks whose float32 work set fits in L2.

    Each block (about 256 KiB of float32) runs the four passes while it is still cache resident,
    instead of streaming the whole tensor four times.
    """
    block_bytes = 256 * 1024
    rows, cols = x.shape
    block = max(1, block_bytes // (cols * 4))
    spare = None if x.dtype == np.float32 else np.empty((min(block, rows), cols), np.float32)
    for start in range(0, rows, block):
        xb = x[start:start + block]
        ob = out[start:start + block]
        if spare is None:
            work = ob
            np.subtract(xb, xb.max(axis=-1, keepdims=True), out=work)
        else:
            work = spare[: xb.shape[0]]
            np.copyto(work, xb)
            work -= work.max(axis=-1, keepdims=True)
        np.exp(work, out=work)
        inv = np.float32(1.0) / work.sum(axis=-1, keepdims=True)
        np.multiply(work, inv, out=ob, casting="same_kind")


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
