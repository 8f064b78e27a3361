"""Golden entry for pypto_softmax: seeded inputs, the golden call, and the CPU correctness harness.

Frozen in Stage 5 with the rest of the golden files. Besides the inputs (`make_inputs`, seed 42)
and the golden computation, it holds `enable_cpu_outputs()`: how a kernel run in PyPTO's SIM mode
gets real outputs without an NPU. The cost-model simulator computes timing only (output tensors
stay zero); PyPTO's pass-verify mode evaluates the program's tensor graph on the CPU with a
torch-based calculator and writes the results into the output tensors. Two pieces make that
usable here (pypto 0.2.0):

1. The calculator library is built once with cmake + g++ (about 30 s) into a cache folder
   (`PYPTO_CALCULATOR_CACHE`, default `<tmp>/pypto-calculator-<pypto>-<torch>`), then loaded in
   every process; pypto itself rebuilds it in a fresh temporary folder in every process.
2. In SIM mode pypto registers the inputs for pass-verify through a device-to-host copy that is a
   no-op without CANN, so the calculator would see zero inputs; the CPU tensors are registered
   directly instead (they already are host memory).

Neither changes what the simulator times (identical stat reports with and without pass-verify).

Importing this module (the test imports it before pypto) also keeps PyPTO's side files out of
`$HOME` and the cwd when no caller placed them (a plain `python test_pypto_softmax.py` or a
correctness run): the simulator outputs, `PYPTO_HOME` and the plogs go to a temporary folder that
is removed at exit. Under the pypto-sim backend the runner has already set them (and archives them).
"""

import atexit
import ctypes
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from pypto_softmax_golden_cpu import softmax_golden_cpu

SEED = 42
_CALCULATOR = "lib/libtile_fwk_calculator.so"
_SIDE_FILES = {"TILE_FWK_OUTPUT_DIR": "output", "PYPTO_HOME": "pypto_home", "ASCEND_PROCESS_LOG_PATH": "ascend_log"}


def _keep_side_files_out():
    if all(name in os.environ for name in _SIDE_FILES):
        return
    scratch = tempfile.mkdtemp(prefix="pypto_softmax_")
    atexit.register(shutil.rmtree, scratch, True)
    for name, leaf in _SIDE_FILES.items():
        os.environ.setdefault(name, os.path.join(scratch, leaf))


_keep_side_files_out()


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def make_inputs(shape, dtype, seed=SEED):
    """Seeded input `x ~ Normal(0, 3)` of the given shape and dtype (numpy)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3.0).astype(dtype)


def pypto_softmax_golden(x):
    """The golden computation timed by the golden reference collector (float32 compute)."""
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def golden_cases(manifest_cases):
    """Factory for the golden collector: [(case_id, args, kwargs)] for every manifest case."""
    out = []
    for case in manifest_cases:
        shape = tuple(int(d) for d in case["shape"].strip("[]").split(","))
        out.append((case["id"], (make_inputs(shape, case["dtype"]),), {}))
    return out


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


def _validate():
    x = make_inputs((4, 8), "float32")
    assert np.allclose(pypto_softmax_golden(x), softmax_golden_cpu(x), atol=1e-6)
    return True
