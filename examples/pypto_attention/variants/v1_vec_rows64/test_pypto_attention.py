"""Stage 4 delivery of scaled dot-product attention as a real PyPTO MIX (cube + vector) kernel, pypto-sim.

`pypto_attention_kernel` launches one `@pypto.frontend.jit` kernel per call (built once per shape):
`scores = q @ k^T` on the cube, `* 1/sqrt(d)` and `softmax` on the vector cores, `@ v` on the cube.
The kernel is PyPTO's own `scaled_dot_product_attention_kernel` of hicann/pypto r0.2.0
`examples/03_advanced/advanced_nn/attention/attention.py` (its cube tiles `[64, 64]` x 3 and vector
tile `(1, 8, 16, head_dim)`), with float16 instead of bfloat16 and the shape per case. The pypto-sim
backend times the launch with PyPTO's cost-model simulator; the outputs are computed on the CPU by
pass-verify (`sim.enable_cpu_outputs`) and checked against the float64 golden. Run directly
(`python test_pypto_attention.py`) to check every case; needs `pip install -e '.[pypto-sim]'`.

CPU outputs, side files and the calculator cache (pypto 0.2.0): the shipped helper
`perftune.measure.backends.pypto_sim_support` (imported before pypto), never copied here.
"""

from perftune.measure.backends import pypto_sim_support as sim  # before pypto: side files

import numpy as np
import pypto
import torch

from pypto_attention_golden import _get_device, make_inputs
from pypto_attention_golden_cpu import pypto_attention_golden_cpu

CASES = {
    "b2_h8_s64_d64_fp16": (2, 8, 64, 64),
    "b4_h4_s64_d64_fp16": (4, 4, 64, 64),
    "b1_h8_s64_d64_fp16": (1, 8, 64, 64),
    "b1_h4_s64_d64_fp16": (1, 4, 64, 64),
}
DTYPE = "float16"
TOLERANCE = (5e-3, 1e-2)  # (atol, rtol) against the float64 golden
MIN_MATCHED = 0.999
CUBE_TILES = ([64, 64], [64, 64], [64, 64])
VEC_TILE_HEADS, VEC_TILE_ROWS = 4, 64
SIM = {"run_mode": pypto.RunMode.SIM}
VERIFY = {"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}
_KERNELS = {}


def _build(b, h, s, d):
    """The jit kernel for one shape (float16 q, k, v and output)."""
    dt = pypto.DT_FP16

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(q: pypto.Tensor((b, h, s, d), dt), k: pypto.Tensor((b, h, s, d), dt),
               v: pypto.Tensor((b, h, s, d), dt), output: pypto.Tensor((b, h, s, d), dt)):
        scale = 1.0 / (d ** 0.5)
        pypto.set_cube_tile_shapes(*CUBE_TILES)
        pypto.set_vec_tile_shapes(1, VEC_TILE_HEADS, VEC_TILE_ROWS, d)
        scores = pypto.matmul(q, pypto.transpose(k, 2, 3), out_dtype=dt)
        scores_scaled = pypto.mul(scores, scale)
        attn_weights = pypto.softmax(scores_scaled, dim=-1)
        output.move(pypto.matmul(attn_weights, v, out_dtype=dt))
    return kernel


def pypto_attention_kernel(q, k, v, output):
    """One simulated launch of the MIX kernel; writes `output` (via pass-verify on the CPU)."""
    key = tuple(q.shape)
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](q, k, v, output)


def pypto_attention_wrapper(q, k, v):
    """Host boundary: check the arguments, allocate the output, launch the kernel once."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"attention expects q, k, v of one [b,h,s,d] shape, got {q.shape}, {k.shape}, {v.shape}")
    output = torch.zeros_like(q)
    pypto_attention_kernel(q, k, v, output)
    return output


def _assert_precision(actual, expected):
    atol, rtol = TOLERANCE
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={matched:.6f}")
    print(f"max_abs_error={float(err.max()):.3e}")
    assert matched >= MIN_MATCHED, f"precision gate failed: matched_ratio={matched:.6f}"
    print("PASS")


def _run_case(case_id):
    assert _get_device() == "cpu"
    sim.enable_cpu_outputs()
    q, k, v = make_inputs(CASES[case_id], DTYPE)
    actual = pypto_attention_wrapper(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))
    _assert_precision(actual.numpy(), pypto_attention_golden_cpu(q, k, v))


def test_b2_h8_s64_d64_fp16():
    _run_case("b2_h8_s64_d64_fp16")


def test_b4_h4_s64_d64_fp16():
    _run_case("b4_h4_s64_d64_fp16")


def test_b1_h8_s64_d64_fp16():
    _run_case("b1_h8_s64_d64_fp16")


def test_b1_h4_s64_d64_fp16():
    _run_case("b1_h4_s64_d64_fp16")


if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
