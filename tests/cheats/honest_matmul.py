"""The PyPTO ``matmul`` operator folder (cube, pypto-sim) of the honest-kernel tests: its op function is
named ``matmul_kernel`` and calls ``pypto.matmul`` (issue 35 item 1); the shared folder pieces are
honest_ops.py.

Provenance of the matmul kernel: hicann/pypto ``examples/01_beginner/compute/matmul_ops.py`` (commit
2a86003ec3f4af99dc4bad2cbb84c3a4ff5b8a56): its jit kernel ``matmul_kernel`` is
``pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])`` and ``pypto.matmul(a, b, a.dtype)``; the op
function here carries that name and builds that body once per shape (the upstream file is not copied).
"""

from __future__ import annotations

from pathlib import Path

from honest_ops import CHECK, INDEX, kb_files, plan_json, write_folder

MATMUL_SPEC = """\
# SPEC: matmul (PyPTO cube kernel, pypto-sim backend)

## 1. Semantics
`out = a @ b` with `a` [m, k], `b` [k, n], `out` [m, n], float32. Inputs N(0, 1) drawn with seed 42. The op
function `matmul_kernel` (PyPTO's example's name) launches one jit kernel calling `pypto.matmul`;
`matmul_wrapper` allocates `out` and calls it once.

wrapper: matmul_wrapper

## 2. Precision gate
Compared with `matmul_golden_cpu` (float64 reference), on the outputs PyPTO's pass-verify computes on the CPU:
- float32: `|y - ref| <= 1e-4 + 1e-4 * |ref|` for at least 99.9 % of elements.

## 3. Performance P0 cases

| id | shape | dtype | p0 |
|----|-------|-------|----|
| m64_k64_n64_fp32 | a:[64,64],b:[64,64] | float32 | yes |
| m16_k64_n64_fp32 | a:[16,64],b:[64,64] | float32 | no |
| m32_k64_n64_fp32 | a:[32,64],b:[64,64] | float32 | no |
| m48_k64_n64_fp32 | a:[48,64],b:[64,64] | float32 | no |

## 4. Necessary work

| dim | value |
|-----|-------|
| m | a[0] |
| k | a[1] |
| n | b[1] |

| operation | class | count | per |
|-----------|-------|-------|-----|
| multiply-add | arithmetic | 2*k | m*n |

| tensor | direction | elements |
|--------|-----------|----------|
| a | read | m*k |
| b | read | k*n |
| out | write | m*n |
"""

MATMUL_GOLDEN_CPU = """\
import numpy as np


def matmul_golden_cpu(a, b):
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)
"""

MATMUL_GOLDEN = """\
import re

import numpy as np

from matmul_golden_cpu import matmul_golden_cpu


def _get_device():
    return "cpu"


def _make_inputs(shape, dtype, device=None, seed=42):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(tuple(int(d) for d in dims.split(","))).astype(dtype)
                 for dims in re.findall(r"\\[([0-9,]+)\\]", shape))


def matmul_golden(a, b):
    return matmul_golden_cpu(a, b).astype(a.dtype)


def golden_cases(manifest_cases):
    return [(c["id"], _make_inputs(c["shape"], c["dtype"]), {}) for c in manifest_cases]
"""

MATMUL_TEST = '''\
from perftune.measure.backends import pypto_sim_support as sim  # before pypto: side files

import numpy as np
import pypto
import torch

from matmul_golden import _get_device, _make_inputs
from matmul_golden_cpu import matmul_golden_cpu

CASES = {{"m64_k64_n64_fp32": "a:[64,64],b:[64,64]", "m16_k64_n64_fp32": "a:[16,64],b:[64,64]",
          "m32_k64_n64_fp32": "a:[32,64],b:[64,64]", "m48_k64_n64_fp32": "a:[48,64],b:[64,64]"}}
TOLERANCE = {{"float32": (1e-4, 1e-4)}}
MIN_MATCHED = 0.999
SIM = {{"run_mode": pypto.RunMode.SIM}}
VERIFY = {{"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}}
CUBE_TILES = {tiles}
_KERNELS = {{}}


def _build(a_shape, b_shape):
    """The jit kernel of PyPTO's matmul example for one pair of shapes."""
    out_shape = (a_shape[0], b_shape[1])

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(a: pypto.Tensor(a_shape, pypto.DT_FP32), b: pypto.Tensor(b_shape, pypto.DT_FP32),
               out: pypto.Tensor(out_shape, pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(*CUBE_TILES)
        out[:] = pypto.matmul(a, b, a.dtype)
    return kernel


def matmul_kernel(a, b, out):
    """One simulated launch of the matmul (named as in PyPTO's example)."""
    key = (tuple(a.shape), tuple(b.shape))
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](a, b, out)


def matmul_wrapper(a, b):
    out = torch.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
    matmul_kernel(a, b, out)
    return out


{check}

def _run(case_id):
    assert _get_device() == "cpu"
    sim.enable_cpu_outputs()
    a, b = _make_inputs(CASES[case_id], "float32")
    actual = matmul_wrapper(sim.to_torch(a, "float32"), sim.to_torch(b, "float32"))
    _assert_precision(sim.to_numpy(actual), matmul_golden_cpu(a, b), "float32")


def test_m64_k64_n64_fp32():
    _run("m64_k64_n64_fp32")


def test_m16_k64_n64_fp32():
    _run("m16_k64_n64_fp32")


def test_m32_k64_n64_fp32():
    _run("m32_k64_n64_fp32")


def test_m48_k64_n64_fp32():
    _run("m48_k64_n64_fp32")
'''
MATMUL_TILES = {"baseline": "([32, 32], [64, 64], [64, 64])",    # the example's own tile shapes
                "v1_tile64": "([64, 64], [64, 64], [64, 64])"}   # one cube task for the whole output


def write_matmul(root: Path) -> Path:
    """The matmul operator folder (pypto-sim) with its plan: v1 one 64x64 cube tile instead of four 32x32."""
    protocol = {"backend": "pypto-sim", "op_name": "matmul_kernel", "target_case_ids": "all_p0",
                "selection_mode": "all_p0_no_questions", "warmup": 0, "repeats": 2, "noise_band": 0.01}
    variants = [("v1_tile64", "gm-tiles", "a 64x64 output tile makes one cube task of the 64x64 product "
                                          "instead of four, each paying the per-task fixed cost")]
    files = {"SPEC.md": MATMUL_SPEC, "matmul_golden_cpu.py": MATMUL_GOLDEN_CPU, "matmul_golden.py": MATMUL_GOLDEN,
             "test_matmul.py": MATMUL_TEST.format(tiles=MATMUL_TILES["baseline"], check=CHECK),
             **kb_files("matmul", "matmul_wrapper calls matmul_kernel once"),
             "sources/general-methods/INDEX.md": INDEX + (
                 "| gm-tiles | cube tile shapes | active | yes | tiles.md | #gm-tiles | all | cycles |\n"),
             "sources/general-methods/tiles.md": "fewer, larger cube tiles when the per-task cost dominates\n",
             "variants/variants.json": plan_json(protocol, variants, "matmul", "the P0 case")}
    files["variants/v1_tile64/test_matmul.py"] = MATMUL_TEST.format(tiles=MATMUL_TILES["v1_tile64"], check=CHECK)
    return write_folder(root / "matmul", files)
