"""Operator folders of classes the repository does not ship, written by the honest-kernel tests
(docs/operator-format.md): a numpy row-wise ``cumsum`` (scan, cpu) whose kernels call ``np.cumsum`` and
``np.add.accumulate`` in float64 and float32 accumulation (float16 I/O included), and a PyPTO ``matmul``
(cube, pypto-sim) whose op function is named ``matmul_kernel`` and calls ``pypto.matmul``.

Provenance of the matmul kernel: its shape follows PyPTO's own example ``matmul_op`` / ``matmul_kernel``
(hicann/pypto, ``examples/01_beginner/compute/matmul_ops.py``, commit 2a86003ec3f4af99dc4bad2cbb84c3a4ff5b8a56:
a jit kernel named ``matmul_kernel`` whose body is ``pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])``
and ``pypto.matmul(a, b, a.dtype)``); here the op function of the operator format carries that name and
builds the same body once per shape (the upstream file itself is not copied).
"""

from __future__ import annotations

import json
from pathlib import Path

INDEX = """\
| id | title | lifecycle | optimization_eligible | file | anchor | case_scope | expected_metric |
|----|-------|-----------|-----------------------|------|--------|------------|-----------------|
"""
ACCUM = {"kind": "obligation", "req_id": "accum-fp32", "reference": "SPEC.md#2-precision-gate",
         "text": "Accumulate the running sums in at least float32 (float16 inputs included)",
         "expected_metric": "accumulation precision of the running sum"}


def _kb(name: str, single: str) -> dict[str, str]:
    selection = {"schema_version": 1, "classes": [{"class_id": name, "reason": f"{name}: one knowledge class",
                                                   "optional_patterns": [], "required_constraints": [ACCUM, {
                                                       "kind": "precondition", "req_id": "single-launch",
                                                       "reference": "SPEC.md#1-semantics", "text": single}]}]}
    bindings = {"schema_version": 1, "vector_selection": [], "bindings": [
        {"class_id": name, "req_id": "accum-fp32", "design_ref": "DESIGN.md#1",
         "decision": "running sums in float64 (baseline) or float32, never narrower"},
        {"class_id": name, "req_id": "single-launch", "design_ref": "DESIGN.md#1", "decision": single}]}
    return {"KB_SELECTION.json": json.dumps(selection, indent=2), "DESIGN_BINDINGS.json": json.dumps(bindings, indent=2)}


def _write(op: Path, files: dict[str, str]) -> Path:
    for folder in ("general-methods", "knowledge-cards", "templates"):
        files = {f"sources/{folder}/INDEX.md": INDEX, **files}
    for name, text in files.items():
        (op / name).parent.mkdir(parents=True, exist_ok=True)
        (op / name).write_text(text)
    return op


def _plan(protocol: dict, variants: list[tuple[str, str, str]], name: str, scope: str) -> str:
    return json.dumps({
        "schema_version": 1, "protocol": protocol, "golden": {"function": f"{name}_golden", "factory": "golden_cases"},
        "variants": [{"version_id": v, "item_id": item, "source_kind": "general_method", "hypothesis": why,
                      "expected_metric": "kernel time down on every P0 case"} for v, item, why in variants],
        "closures": [{"item_id": f"kb-{name}-accum-fp32", "status": "already_implemented",
                      "note": "the baseline accumulates in float64 (>= float32); every variant keeps >= float32"}],
        "sweep": {"scope": f"{scope}; every recorded candidate", "findings": []}}, indent=2)


# ---------------------------------------------------------------------------------------------- cumsum (cpu)
CUMSUM_SPEC = """\
# SPEC: cumsum (row-wise inclusive prefix sum, cpu backend)

## 1. Semantics
`y[i, j] = x[i, 0] + ... + x[i, j]` for every row i; `x` 2-D, float32 or float16, `y` of x's shape and
dtype. Inputs N(0, 1) drawn with seed 42. The kernel is `cumsum_kernel`, launched once by `cumsum_wrapper`.

wrapper: cumsum_wrapper

## 2. Precision gate
Compared with `cumsum_golden_cpu` (float64 reference):
- float32: `|y - ref| <= 1e-4 + 1e-4 * |ref|` for at least 99.9 % of elements.
- float16: `|y - ref| <= 2e-2 + 2e-3 * |ref|` for at least 99.9 % of elements.

## 3. Performance P0 cases

| id | shape | dtype | p0 |
|----|-------|-------|----|
| r64_c1024_fp32 | [64,1024] | float32 | yes |
| r64_c1024_fp16 | [64,1024] | float16 | yes |
| r3_c5 | [3,5] | float32 | no |
| r1_c7 | [1,7] | float16 | no |

## 4. Necessary work

| dim | value |
|-----|-------|
| rows | shape[0] |
| cols | shape[1] |

| operation | class | count | per |
|-----------|-------|-------|-----|
| running add | arithmetic | 1 | rows*cols |

| tensor | direction | elements |
|--------|-----------|----------|
| x | read | rows*cols |
| y | write | rows*cols |

## 6. Support range

| dim | positions | min | max | multiple |
|-----|-----------|-----|-----|----------|
| rows | shape[0] | 1 | 64 | 1 |
| cols | shape[1] | 1 | 1024 | 1 |

dtypes: float32, float16
"""

CUMSUM_GOLDEN_CPU = """\
import numpy as np


def cumsum_golden_cpu(x):
    return np.cumsum(np.asarray(x, np.float64), axis=1)
"""

CUMSUM_GOLDEN = """\
import numpy as np

from cumsum_golden_cpu import cumsum_golden_cpu


def _get_device():
    return "cpu"


def _make_inputs(shape, dtype, device=None, seed=42):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def cumsum_golden(x):
    return cumsum_golden_cpu(x).astype(x.dtype)


def golden_cases(manifest_cases):
    return [(c["id"], (_make_inputs(tuple(int(d) for d in c["shape"].strip("[]").split(",")), c["dtype"]),), {})
            for c in manifest_cases]
"""

CUMSUM_KERNELS = {
    # float64 accumulation (a precision choice the obligation allows)
    "baseline": '''
def cumsum_kernel(x, out):
    """Baseline: one row at a time, np.cumsum in float64."""
    for i in range(x.shape[0]):
        out[i] = np.cumsum(x[i], dtype=np.float64).astype(out.dtype)
''',
    # issue 35 item 2: the kernel calls np.cumsum, a library function named like the operation
    "v1_cumsum_fp32": '''
def cumsum_kernel(x, out):
    """np.cumsum over all rows at once, accumulating in float32 (float16 I/O included)."""
    out[...] = np.cumsum(x, axis=1, dtype=np.float32)
''',
    # the same C loop under the ufunc's own name
    "v2_add_accumulate": '''
def cumsum_kernel(x, out):
    """np.add.accumulate over all rows at once, float32 accumulation."""
    out[...] = np.add.accumulate(x, axis=1, dtype=np.float32)
''',
}

CUMSUM_TEST = '''\
import numpy as np

from cumsum_golden import _get_device, _make_inputs
from cumsum_golden_cpu import cumsum_golden_cpu

CASES = {{"r64_c1024_fp32": ((64, 1024), "float32"), "r64_c1024_fp16": ((64, 1024), "float16"),
          "r3_c5": ((3, 5), "float32"), "r1_c7": ((1, 7), "float16")}}
TOLERANCE = {{"float32": (1e-4, 1e-4), "float16": (2e-2, 2e-3)}}
MIN_MATCHED = 0.999
{kernel}

def cumsum_wrapper(x):
    out = np.empty_like(x)
    cumsum_kernel(x, out)
    return out


def _assert_precision(actual, expected, dtype):
    atol, rtol = TOLERANCE[dtype]
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={{matched:.6f}}")
    print(f"max_abs_error={{float(err.max()):.3e}}")
    assert matched >= MIN_MATCHED
    print("PASS")


def _run(case_id):
    shape, dtype = CASES[case_id]
    x = _make_inputs(shape, dtype, device=_get_device())
    _assert_precision(cumsum_wrapper(x), cumsum_golden_cpu(x), dtype)


def test_r64_c1024_fp32():
    _run("r64_c1024_fp32")


def test_r64_c1024_fp16():
    _run("r64_c1024_fp16")


def test_r3_c5():
    _run("r3_c5")


def test_r1_c7():
    _run("r1_c7")
'''


def write_cumsum(root: Path) -> Path:
    """The cumsum operator folder with its plan: v1 ``np.cumsum`` in float32, v2 ``np.add.accumulate``."""
    protocol = {"backend": "cpu", "op_name": "cumsum_kernel", "target_case_ids": "all_p0",
                "selection_mode": "all_p0_no_questions", "warmup": 1, "repeats": 5, "noise_band": 0.05}
    variants = [("v1_cumsum_fp32", "gm-whole", "one np.cumsum over the whole tensor in float32 replaces a Python "
                                               "row loop and its float64 copies"),
                ("v2_add_accumulate", "gm-ufunc", "the same accumulation as the add ufunc's accumulate (no gain "
                                                  "expected: the same C loop)")]
    files = {"SPEC.md": CUMSUM_SPEC,
             "cumsum_golden_cpu.py": CUMSUM_GOLDEN_CPU, "cumsum_golden.py": CUMSUM_GOLDEN,
             "test_cumsum.py": CUMSUM_TEST.format(kernel=CUMSUM_KERNELS["baseline"]),
             **_kb("cumsum", "cumsum_wrapper launches cumsum_kernel once"),
             "sources/general-methods/INDEX.md": INDEX + (
                 "| gm-whole | whole-tensor library call | active | yes | whole.md | #gm-whole | all | time |\n"
                 "| gm-ufunc | the ufunc's own accumulate | active | yes | ufunc.md | #gm-ufunc | all | time |\n"),
             "sources/general-methods/whole.md": "call the library routine once for the whole tensor\n",
             "sources/general-methods/ufunc.md": "call the ufunc's accumulate directly\n",
             "variants/variants.json": _plan(protocol, variants, "cumsum", "both P0 cases")}
    for version, _, _ in variants:
        files[f"variants/{version}/test_cumsum.py"] = CUMSUM_TEST.format(kernel=CUMSUM_KERNELS[version])
    return _write(root / "cumsum", files)


# ------------------------------------------------------------------------------------------ matmul (pypto-sim)
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
atol, rtol = 1e-4, 1e-4
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


def _assert_precision(actual, expected):
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={{matched:.6f}}")
    print(f"max_abs_error={{float(err.max()):.3e}}")
    assert matched >= MIN_MATCHED
    print("PASS")


def _run(case_id):
    assert _get_device() == "cpu"
    sim.enable_cpu_outputs()
    a, b = _make_inputs(CASES[case_id], "float32")
    actual = matmul_wrapper(sim.to_torch(a, "float32"), sim.to_torch(b, "float32"))
    _assert_precision(sim.to_numpy(actual), matmul_golden_cpu(a, b))


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
             "test_matmul.py": MATMUL_TEST.format(tiles=MATMUL_TILES["baseline"]),
             **_kb("matmul", "matmul_wrapper calls matmul_kernel once"),
             "sources/general-methods/INDEX.md": INDEX + (
                 "| gm-tiles | cube tile shapes | active | yes | tiles.md | #gm-tiles | all | cycles |\n"),
             "sources/general-methods/tiles.md": "fewer, larger cube tiles when the per-task cost dominates\n",
             "variants/variants.json": _plan(protocol, variants, "matmul", "the P0 case")}
    files["variants/v1_tile64/test_matmul.py"] = MATMUL_TEST.format(tiles=MATMUL_TILES["v1_tile64"])
    return _write(root / "matmul", files)
