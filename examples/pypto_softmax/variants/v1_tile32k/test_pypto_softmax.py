"""Stage 4 delivery of softmax as a real PyPTO tile kernel, run in PyPTO's SIM mode (pypto-sim).

`pypto_softmax_kernel` launches one `@pypto.frontend.jit` kernel per call (built once per shape and
dtype): rows are split into tiles of `TILE_BYTES` of input; each loop iteration (one task on a
vector core) loads a tile, takes the row max, subtracts, exponentiates, sums and divides, and
stores the tile. The pypto-sim backend times the launch with PyPTO's cost-model simulator; the
outputs are computed on the CPU by pass-verify (`sim.enable_cpu_outputs`) and checked against
the float64 golden. Run directly (`python test_pypto_softmax.py`) to check every
case; needs `pip install pypto==0.2.0 torch==2.13.0 sympy`.

CPU outputs, side files and the calculator cache (pypto 0.2.0): the shipped helper
`perftune.measure.backends.pypto_sim_support` (imported before pypto; `sim.enable_cpu_outputs()`
in each test), never copied here; docs/pypto-sim-backend.md says what each piece does.
"""

from perftune.measure.backends import pypto_sim_support as sim  # before pypto: side files

import numpy as np
import pypto
import torch

from pypto_softmax_golden import _get_device, make_inputs
from pypto_softmax_golden_cpu import pypto_softmax_golden_cpu

CASES = {
    "r512_c1024_fp32": ((512, 1024), "float32"),
    "r256_c2048_fp32": ((256, 2048), "float32"),
    "r512_c1024_fp16": ((512, 1024), "float16"),
    "r1024_c512_fp16": ((1024, 512), "float16"),
}
TOLERANCE = {"float32": (1e-6, 1e-5), "float16": (1e-4, 1e-3)}
MIN_MATCHED = 0.999
TILE_BYTES = 32768
SIM = {"run_mode": pypto.RunMode.SIM}
VERIFY = {"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}
_KERNELS = {}


def _build(rows, cols, dtype):
    """The jit kernel for one shape and dtype (the tile height follows TILE_BYTES)."""
    pdt = sim.pypto_dtype(dtype)
    tile = max(1, TILE_BYTES // (cols * np.dtype(dtype).itemsize))

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(x: pypto.Tensor((rows, cols), pdt), out: pypto.Tensor((rows, cols), pdt)):
        pypto.set_vec_tile_shapes(tile, cols)
        for i in pypto.loop(rows // tile):
            block = x[i * tile:(i + 1) * tile, :]
            row_max = pypto.amax(block, dim=-1, keepdim=True)
            e = pypto.exp(block - row_max)
            row_sum = pypto.sum(e, dim=-1, keepdim=True)
            out[i * tile:, ...] = e / row_sum
    return kernel


def pypto_softmax_kernel(x, out):
    """One simulated launch of the tile kernel; writes `out` (via pass-verify on the CPU)."""
    key = (tuple(x.shape), str(x.dtype).removeprefix("torch."))
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key[0], key[1])
    _KERNELS[key](x, out)


def pypto_softmax_wrapper(x):
    """Host boundary: check the argument, allocate the output, launch the kernel once."""
    if x.dim() != 2:
        raise ValueError(f"softmax expects a 2-D input, got {x.dim()}-D")
    out = torch.zeros_like(x)
    pypto_softmax_kernel(x, out)
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
    assert _get_device() == "cpu"
    sim.enable_cpu_outputs()
    x = make_inputs(shape, dtype)
    actual = pypto_softmax_wrapper(torch.from_numpy(x))
    _assert_precision(actual.numpy(), pypto_softmax_golden_cpu(x), dtype)


def test_r512_c1024_fp32():
    _run_case("r512_c1024_fp32")


def test_r256_c2048_fp32():
    _run_case("r256_c2048_fp32")


def test_r512_c1024_fp16():
    _run_case("r512_c1024_fp16")


def test_r1024_c512_fp16():
    _run_case("r1024_c512_fp16")


if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
