"""What every pypto-sim operator imports instead of copying pypto 0.2.0 workarounds (version-guarded).

Import it in ``test_<op>.py`` before pypto (importing it keeps PyPTO's side files out of ``$HOME``
and the cwd), then call :func:`enable_cpu_outputs` in each test before the launch::

    from perftune.measure.backends import pypto_sim_support as sim   # before `import pypto`
    import pypto

    def _run_case(case_id):
        sim.enable_cpu_outputs()
        x = sim.to_torch(_make_inputs(...)["x"], dtype)      # numpy golden inputs -> torch
        actual = OP_wrapper(x)
        _assert_precision(sim.to_numpy(actual), OP_golden_cpu(...), dtype)

The pieces (docs/pypto-sim-backend.md, "Correctness on this backend"):

- **Helper scripts** (at import, :func:`route_helper_scripts`): pypto runs its swim-lane scripts with
  this process's interpreter, the two that only draw pictures not at all (no traceback in the logs).
- **Side files** (at import): when no runner placed them (``pypto_sim_runner`` sets
  ``TILE_FWK_OUTPUT_DIR``, ``PYPTO_HOME``, ``ASCEND_PROCESS_LOG_PATH``), they go to a temporary
  folder removed at exit.
- **The calculator** (:func:`calculator_library`): pass-verify's torch-based calculator
  (``lib/calculator``, cmake + g++, ~30 s) is built once into ``PYPTO_CALCULATOR_CACHE`` (default
  ``<tmp>/pypto-calculator-<pypto>-<torch>``) through pypto's private
  ``BuildOnlineManager._CMakeContext`` instead of in every process, then loaded.
- **Host inputs** (:func:`enable_cpu_outputs`): in SIM mode pypto registers the inputs through a
  device-to-host copy that is a no-op without CANN, so the calculator saw zeros; the host tensors
  are registered directly (``JitCallableWrapper._setup_verify_data`` replaced).

The private API exists in the pypto versions of :data:`SUPPORTED` only; another version stops
with one line naming the installed and the supported versions (never a silent wrong output).
bfloat16, which numpy lacks: the numpy golden builds float32 arrays whose values are bfloat16
numbers (rounded in numpy, see the scaffold's golden); :func:`to_torch` converts them exactly and
:func:`to_numpy` widens a bfloat16 output exactly to float32.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.metadata
import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

SUPPORTED = ("0.2.0",)
SIDE_FILES = {"TILE_FWK_OUTPUT_DIR": "output", "PYPTO_HOME": "pypto_home", "ASCEND_PROCESS_LOG_PATH": "ascend_log"}
CALCULATOR = "lib/libtile_fwk_calculator.so"


def keep_side_files_out() -> None:
    """Point PyPTO's side files at a temporary folder (removed at exit) unless a runner placed them."""
    if all(name in os.environ for name in SIDE_FILES):
        return
    scratch = tempfile.mkdtemp(prefix="pypto_sim_op_")
    atexit.register(shutil.rmtree, scratch, True)
    for name, leaf in SIDE_FILES.items():
        os.environ.setdefault(name, os.path.join(scratch, leaf))


# pypto 0.2.0's simulator runs `python3 <pypto>/lib/scripts/<name>.py ...` through system(3) after every
# launch, with whichever python3 comes first on PATH; these two only draw pictures (PNG, HTML) that no
# evidence reads, and need matplotlib, pandas and plotly there (~2.5 s a launch when they can).
DRAWING_ONLY = ("draw_pipe_swim_lane.py", "print_swim_lane.py")
SHIM = """#!/bin/sh
# perftune pypto_sim_support: pypto's helper scripts run with the interpreter of this process
case "$1" in
{skipped}) echo "perftune: pypto's $(basename "$1") not run (it only draws a picture; docs/pypto-sim-backend.md)"; exit 0;;
esac
exec {python} "$@"
"""


def route_helper_scripts() -> None:
    """Put a ``python3`` first on PATH that runs pypto's helper scripts with this process's interpreter
    (``draw_swim_lane.py`` writes ``bubble_analysis.log`` and ``merged_swimlane.json``, which the evidence
    reads) and skips the :data:`DRAWING_ONLY` ones, which otherwise leave an ImportError traceback in
    every launch log. Removed at exit."""
    spec = importlib.util.find_spec("pypto")
    if spec is None or not spec.origin:
        return
    scripts = Path(spec.origin).parent / "lib" / "scripts"
    folder = tempfile.mkdtemp(prefix="pypto_sim_bin_")
    atexit.register(shutil.rmtree, folder, True)
    shim = Path(folder) / "python3"
    shim.write_text(SHIM.format(skipped="|".join(shlex.quote(str(scripts / name)) for name in DRAWING_ONLY),
                                python=shlex.quote(sys.executable)), encoding="utf-8")
    shim.chmod(0o755)
    os.environ["PATH"] = os.pathsep.join([folder, os.environ.get("PATH", "")])


keep_side_files_out()
route_helper_scripts()


def require_supported() -> str:
    """The installed pypto version; RuntimeError when the workarounds do not apply to it."""
    try:
        version = importlib.metadata.version("pypto")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("pypto is not installed (python3 -m pip install -e '.[pypto-sim]')") from None
    if version not in SUPPORTED:
        raise RuntimeError(f"pypto {version}: perftune's pypto-sim support covers {list(SUPPORTED)} only "
                           "(install pypto==0.2.0, or update pypto_sim_support for this version)")
    return version


def calculator_library() -> Path:
    """Path of the cached calculator library, built once per (pypto, torch) pair."""
    version = require_supported()
    import torch
    from pypto._utils import BuildOnlineManager

    key = f"pypto-calculator-{version}-{torch.__version__}"
    root = Path(os.environ.get("PYPTO_CALCULATOR_CACHE") or Path(tempfile.gettempdir()) / key)
    library = root / "install" / CALCULATOR
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
        shutil.rmtree(building, ignore_errors=True)
    if not library.is_file():
        raise RuntimeError(f"calculator build did not produce {library}")
    return library


def enable_cpu_outputs() -> None:
    """Let the next SIM launches with pass-verify write the kernel's outputs on the CPU."""
    require_supported()
    import pypto
    from pypto import pypto_impl
    from pypto._utils import BuildOnlineManager
    from pypto.frontend.parser import entry
    from pypto.runtime import _pto_to_tensor_data, _pto_verify_datas

    manager = BuildOnlineManager()
    if not manager.calculator_loaded:
        ctypes.CDLL(str(calculator_library()), mode=ctypes.RTLD_GLOBAL)
        manager.calculator_loaded = True

    def register_host_tensors(pto_tensors):
        if pypto.get_verify_options().get("enable_pass_verify"):
            pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())

    entry.JitCallableWrapper._setup_verify_data = staticmethod(register_host_tensors)


def to_torch(array, dtype: str):
    """A numpy golden input as a torch tensor of the manifest dtype (``bfloat16`` from float32 exactly)."""
    import torch
    tensor = torch.from_numpy(array)
    return tensor.to(torch.bfloat16) if dtype == "bfloat16" else tensor


def to_numpy(tensor):
    """A torch output as numpy (bfloat16 widened exactly to float32)."""
    host = tensor.detach().cpu()
    return (host.float() if str(host.dtype) == "torch.bfloat16" else host).numpy()


def pypto_dtype(dtype: str):
    """The pypto dtype of a canonical dtype name (float32, float16, bfloat16; int32, int64 for indices)."""
    import pypto
    return {"float32": pypto.DT_FP32, "float16": pypto.DT_FP16, "bfloat16": pypto.DT_BF16,
            "int32": pypto.DT_INT32, "int64": pypto.DT_INT64}[dtype]
