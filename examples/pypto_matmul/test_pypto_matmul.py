"""Stage 4 delivery of a matmul as a real PyPTO cube kernel, run in PyPTO's SIM mode (pypto-sim).

`pypto_matmul_kernel` launches one `@pypto.frontend.jit` kernel per call (built once per shape):
`out[:] = pypto.matmul(a, b, pypto.DT_FP32)` with float16 operands and float32 accumulation, tiled by
`pypto.set_cube_tile_shapes(M_TILES, K_TILES, N_TILES)` (each `[L0, L1]`). The kernel is PyPTO's own
`matmul_kernel` of hicann/pypto r0.2.0 `examples/01_beginner/compute/matmul_ops.py` (its tiles
`[32, 32], [64, 64], [64, 64]`), with static shapes and float16 inputs. The pypto-sim backend times the
launch with PyPTO's cost-model simulator; the outputs are computed on the CPU by pass-verify
(`sim.enable_cpu_outputs`) and checked against the float64 golden. Run directly
(`python test_pypto_matmul.py`) to check every case; needs `pip install -e '.[pypto-sim]'`.

CPU outputs, side files and the calculator cache (pypto 0.2.0): the shipped helper
`perftune.measure.backends.pypto_sim_support` (imported before pypto), never copied here.
"""

from perftune.measure.backends import pypto_sim_support as sim  # before pypto: side files

import numpy as np
import pypto
import torch

from pypto_matmul_golden import _get_device, make_inputs
from pypto_matmul_golden_cpu import pypto_matmul_golden_cpu

CASES = {
    "m256_k512_n256_fp16": (256, 512, 256),
    "m128_k1024_n384_fp16": (128, 1024, 384),
    "m64_k256_n128_fp16": (64, 256, 128),
    "m128_k256_n64_fp16": (128, 256, 64),
}
DTYPE = "float16"
TOLERANCE = (1e-3, 1e-4)  # (atol, rtol) against the float64 golden, float32 accumulation
MIN_MATCHED = 0.999
M_TILE = 32  # the M tile [L0, L1] = [M_TILE, M_TILE]; the plan's search over it is item general-13
M_TILES, K_TILES, N_TILES = [M_TILE, M_TILE], [64, 64], [64, 64]
SIM = {"run_mode": pypto.RunMode.SIM}
VERIFY = {"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}
_KERNELS = {}


def _build(m, k, n):
    """The jit kernel for one shape (float16 operands, float32 result)."""

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(a: pypto.Tensor((m, k), pypto.DT_FP16), b: pypto.Tensor((k, n), pypto.DT_FP16),
               out: pypto.Tensor((m, n), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(M_TILES, K_TILES, N_TILES)
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)
    return kernel


def pypto_matmul_kernel(a, b, out):
    """One simulated launch of the cube kernel; writes `out` (via pass-verify on the CPU)."""
    key = (a.shape[0], a.shape[1], b.shape[1])
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](a, b, out)


def pypto_matmul_wrapper(a, b):
    """Host boundary: check the arguments, allocate the float32 output, launch the kernel once."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul expects [m,k] x [k,n], got {tuple(a.shape)} x {tuple(b.shape)}")
    out = torch.zeros((a.shape[0], b.shape[1]), dtype=torch.float32)
    pypto_matmul_kernel(a, b, out)
    return out


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
    a, b = make_inputs(*CASES[case_id], DTYPE)
    actual = pypto_matmul_wrapper(torch.from_numpy(a), torch.from_numpy(b))
    _assert_precision(actual.numpy(), pypto_matmul_golden_cpu(a, b))


def test_m256_k512_n256_fp16():
    _run_case("m256_k512_n256_fp16")


def test_m128_k1024_n384_fp16():
    _run_case("m128_k1024_n384_fp16")


def test_m64_k256_n128_fp16():
    _run_case("m64_k256_n128_fp16")


def test_m128_k256_n64_fp16():
    _run_case("m128_k256_n64_fp16")


if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
