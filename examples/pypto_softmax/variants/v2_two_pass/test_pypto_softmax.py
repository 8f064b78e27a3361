"""Stage 4 delivery of softmax as a real PyPTO tile kernel, run in PyPTO's SIM mode (pypto-sim).

`pypto_softmax_kernel` launches one `@pypto.frontend.jit` kernel per call (built once per shape and
dtype): rows are split into tiles of `TILE_BYTES` of input; each loop iteration (one task on a
vector core) loads a tile, takes the row max, subtracts, exponentiates, sums and divides, and
stores the tile. The pypto-sim backend times the launch with PyPTO's cost-model simulator; the
outputs are computed on the CPU by pass-verify (`enable_cpu_outputs` below) and checked against
the float64 golden. Run directly (`python test_pypto_softmax.py`) to check every
case; needs `pip install pypto==0.2.0 torch==2.13.0 sympy`.

CPU outputs (pypto 0.2.0): the cost-model simulator computes timing only (outputs stay zero);
pass-verify evaluates the program's tensor graph on the CPU with a torch-based calculator and
writes the results into the output tensors. Two pieces make that usable: the calculator library
is built once (cmake + g++, ~30 s) into a cache folder (`PYPTO_CALCULATOR_CACHE`, default
`<tmp>/pypto-calculator-<pypto>-<torch>`) instead of in every process, and the host tensors are
registered directly (in SIM mode pypto registers inputs through a device-to-host copy that is a
no-op without CANN, so the calculator would see zeros). Neither changes the simulated cycles.
Side files: when no runner placed them (a plain run or `check_correctness.py`), PyPTO's outputs,
`PYPTO_HOME` and plogs go to a temporary folder removed at exit, never `$HOME` or the cwd; this
runs before pypto is imported.
"""

import atexit
import ctypes
import os
import shutil
import tempfile
from pathlib import Path

_SIDE_FILES = {"TILE_FWK_OUTPUT_DIR": "output", "PYPTO_HOME": "pypto_home", "ASCEND_PROCESS_LOG_PATH": "ascend_log"}


def _keep_side_files_out():
    if all(name in os.environ for name in _SIDE_FILES):
        return
    scratch = tempfile.mkdtemp(prefix="pypto_softmax_")
    atexit.register(shutil.rmtree, scratch, True)
    for name, leaf in _SIDE_FILES.items():
        os.environ.setdefault(name, os.path.join(scratch, leaf))


_keep_side_files_out()


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
PYPTO_DTYPES = {"float32": pypto.DT_FP32, "float16": pypto.DT_FP16}
SIM = {"run_mode": pypto.RunMode.SIM}
VERIFY = {"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}
_KERNELS = {}
_CALCULATOR = "lib/libtile_fwk_calculator.so"


def _calculator_library():
    """Path of the cached calculator library, built once per (pypto, torch) pair."""
    import pypto
    import torch
    from importlib import metadata
    from pypto._utils import BuildOnlineManager

    key = f"pypto-calculator-{metadata.version('pypto')}-{torch.__version__}"
    root = Path(os.environ.get("PYPTO_CALCULATOR_CACHE") or Path(tempfile.gettempdir()) / key)
    library = root / "install" / _CALCULATOR
    if library.is_file():
        return library
    manager, torch_ctx = BuildOnlineManager(), BuildOnlineManager._TorchContext()
    building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root.parent if root.parent.is_dir() else None))
    context = BuildOnlineManager._CMakeContext.CompileContext(Path(manager.pkg_lib_dir, "calculator"), building)
    context.cfg_cmd_ext = (f"-DPY3_MOD_TORCH_VERSION={torch_ctx.torch_version} "
                           f"-DPY3_MOD_TORCH_ROOT_PATH={torch_ctx.torch_root_dir} "
                           f"-DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={torch_ctx.torch_c_use_cxx11_abi}")
    BuildOnlineManager._CMakeContext().compile(context)
    try:
        os.rename(building, root)          # atomic; a concurrent build that finished first wins
    except OSError:
        pass
    if not library.is_file():
        raise RuntimeError(f"calculator build did not produce {library}")
    del pypto
    return library


def enable_cpu_outputs():
    """Let the next SIM launches with pass-verify write the kernel's outputs on the CPU."""
    import pypto
    from pypto import pypto_impl
    from pypto._utils import BuildOnlineManager
    from pypto.frontend.parser import entry
    from pypto.runtime import _pto_to_tensor_data, _pto_verify_datas

    manager = BuildOnlineManager()
    if not manager.calculator_loaded:
        ctypes.CDLL(str(_calculator_library()), mode=ctypes.RTLD_GLOBAL)
        manager.calculator_loaded = True

    def register_host_tensors(pto_tensors):
        if pypto.get_verify_options().get("enable_pass_verify"):
            pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())

    entry.JitCallableWrapper._setup_verify_data = staticmethod(register_host_tensors)


def _build(rows, cols, dtype):
    """The jit kernel for one shape and dtype (the tile height follows TILE_BYTES)."""
    pdt = PYPTO_DTYPES[dtype]
    tile = max(1, TILE_BYTES // (cols * np.dtype(dtype).itemsize))

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(x: pypto.Tensor((rows, cols), pdt), out: pypto.Tensor((rows, cols), pdt)):
        pypto.set_vec_tile_shapes(tile, cols)
        for i in pypto.loop(rows // tile):
            block = x[i * tile:(i + 1) * tile, :]
            row_max = pypto.amax(block, dim=-1, keepdim=True)
            out[i * tile:, ...] = pypto.exp(block - row_max)
        for i in pypto.loop(rows // tile):
            e = out[i * tile:(i + 1) * tile, :]
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
    enable_cpu_outputs()
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
