"""Operator folders of classes the repository does not ship, written by the honest-kernel tests
(docs/operator-format.md): a numpy row-wise ``cumsum`` (scan, cpu) whose kernels call ``np.cumsum`` and
``np.add.accumulate`` in float64 and float32 accumulation (float16 I/O included), and a PyPTO ``matmul``
(cube, pypto-sim) whose op function is named ``matmul_kernel`` and calls ``pypto.matmul``.
The matmul operator (pypto-sim) is honest_matmul.py.
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


def kb_files(name: str, single: str) -> dict[str, str]:
    selection = {"schema_version": 1, "classes": [{"class_id": name, "reason": f"{name}: one knowledge class",
                                                   "optional_patterns": [], "required_constraints": [ACCUM, {
                                                       "kind": "precondition", "req_id": "single-launch",
                                                       "reference": "SPEC.md#1-semantics", "text": single}]}]}
    bindings = {"schema_version": 1, "vector_selection": [], "bindings": [
        {"class_id": name, "req_id": "accum-fp32", "design_ref": "DESIGN.md#1",
         "decision": "running sums in float64 (baseline) or float32, never narrower"},
        {"class_id": name, "req_id": "single-launch", "design_ref": "DESIGN.md#1", "decision": single}]}
    return {"KB_SELECTION.json": json.dumps(selection, indent=2), "DESIGN_BINDINGS.json": json.dumps(bindings, indent=2)}


def write_folder(op: Path, files: dict[str, str]) -> Path:
    files = {**{f"sources/{folder}/INDEX.md": INDEX for folder in ("general-methods", "knowledge-cards", "templates")},
             **files}
    for name, text in files.items():
        (op / name).parent.mkdir(parents=True, exist_ok=True)
        (op / name).write_text(text)
    return op


def plan_json(protocol: dict, variants: list[tuple[str, str, str]], name: str, scope: str) -> str:
    return json.dumps({
        "schema_version": 1, "protocol": protocol, "golden": {"function": f"{name}_golden", "factory": "golden_cases"},
        "variants": [{"version_id": v, "item_id": item, "source_kind": "general_method", "hypothesis": why,
                      "expected_metric": "kernel time down on every P0 case"} for v, item, why in variants],
        "closures": [{"item_id": f"kb-{name}-accum-fp32", "status": "already_implemented",
                      "note": "the baseline accumulates in float64 (>= float32); every variant keeps >= float32"}],
        "sweep": {"scope": f"{scope}; every recorded candidate", "findings": []}}, indent=2)


CHECK = '''def _assert_precision(actual, expected, dtype):
    atol, rtol = TOLERANCE[dtype]
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={matched:.6f}")
    print(f"max_abs_error={float(err.max()):.3e}")
    assert matched >= MIN_MATCHED
    print("PASS")
'''   # the test files' precision check against the float64 reference (both operators)


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
    # the same C loop under the ufunc's own name, row by row: honest, and clearly slower than v1's one call
    # (so which version is delivered never rests on noise between two equal kernels)
    "v2_add_accumulate": '''
def cumsum_kernel(x, out):
    """np.add.accumulate one row at a time, float32 accumulation."""
    for i in range(x.shape[0]):
        out[i] = np.add.accumulate(x[i], dtype=np.float32)
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


{check}

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
                ("v2_add_accumulate", "gm-ufunc", "the add ufunc's accumulate in float32, one row at a time (slower "
                                                  "than one call for the whole tensor)")]
    files = {"SPEC.md": CUMSUM_SPEC,
             "cumsum_golden_cpu.py": CUMSUM_GOLDEN_CPU, "cumsum_golden.py": CUMSUM_GOLDEN,
             "test_cumsum.py": CUMSUM_TEST.format(kernel=CUMSUM_KERNELS["baseline"], check=CHECK),
             **kb_files("cumsum", "cumsum_wrapper launches cumsum_kernel once"),
             "sources/general-methods/INDEX.md": INDEX + (
                 "| gm-whole | whole-tensor library call | active | yes | whole.md | #gm-whole | all | time |\n"
                 "| gm-ufunc | the ufunc's own accumulate | active | yes | ufunc.md | #gm-ufunc | all | time |\n"),
             "sources/general-methods/whole.md": "call the library routine once for the whole tensor\n",
             "sources/general-methods/ufunc.md": "call the ufunc's accumulate directly\n",
             "variants/variants.json": plan_json(protocol, variants, "cumsum", "both P0 cases")}
    for version, _, _ in variants:
        files[f"variants/{version}/test_cumsum.py"] = CUMSUM_TEST.format(kernel=CUMSUM_KERNELS[version], check=CHECK)
    return write_folder(root / "cumsum", files)
