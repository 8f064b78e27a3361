"""What a Stage 1-4 team writes into the scaffold of a cpu rmsnorm: every <FILL: ...> replaced.

Markdown files keep the scaffold's text and replace each placeholder line, in order; the JSON,
YAML and Python files are the filled versions of their templates. ``fill(op_dir)`` does it all.
"""

from __future__ import annotations

import json
from pathlib import Path

CASES = {"r64_c256_fp32": ((64, 256), "float32"), "r128_c128_fp32": ((128, 128), "float32"),
         "r64_c256_fp16": ((64, 256), "float16"), "r32_c512_fp16": ((32, 512), "float16")}
ROWS = "\n".join(f"| {cid} | [{s[0]},{s[1]}] | {dt} | yes | test_{cid} |" for cid, (s, dt) in CASES.items())
DESIGN_ROWS = "\n".join(f"| {cid} | [{s[0]},{s[1]}] | {dt} | row count and width |" for cid, (s, dt) in CASES.items())

MARKDOWN = {
    "SPEC.md": [
        "`y = x / sqrt(mean(x^2, axis=-1) + 1e-6)` for a 2-D `x [rows, cols]`, float32 or float16; `y` has x's shape and dtype.",
        "Input distribution: `x ~ Normal(0, 1)` drawn with seed 42; the kernel writes `y` (no host post-processing).",
        "Compared with `rmsnorm_golden_cpu`: float32 `|y-ref| <= 1e-5 + 1e-4*|ref|`, float16 `1e-3 + 1e-2*|ref|`, "
        "for at least 99.9 % of elements; the test prints PASS, matched_ratio= and max_abs_error=.",
        ROWS,
        "| rows | shape[0] |\n| cols | shape[1] |\n| elements | rows*cols |",
        "| square | arithmetic | 1 | elements |\n| row sum | arithmetic | 1 | elements |\n"
        "| rsqrt of the mean | transcendental | 1 | rows |\n| scale | arithmetic | 1 | elements |",
        "| x | read | elements |\n| y | write | elements |",
        "none: the golden reference is the default target",
        "| rows | shape[0] | 1 | 4096 | 1 |\n| cols | shape[1] | 1 | 8192 | 1 |",
        "dtypes: float32, float16",
    ],
    "EXPLORE_REPORT.md": [
        "Row-wise RMS normalisation for the cpu backend.", "No official cpu sample; the numpy reference stands in.",
        "mean of squares per row, sqrt, divide: numpy ufuncs.", "2-D float32/float16 input, any positive size.",
        "One kernel launched once; accumulate the mean of squares in float32.", "rows and cols are dynamic.",
        "float16 inputs are widened before the mean.", "softmax shares the row-reduction pattern.",
        "numpy reference documentation (mean, sqrt).", "Implementable as one row reduction and a scale.",
        "unsupported_blockers: none",
    ],
    "PRO_MATERIAL_INDEX.md": [
        "| numpy-mean | https://numpy.org/doc/stable/reference/generated/numpy.mean.html | mean of squares |",
        "| golden-cpu | rmsnorm_golden_cpu.py | reference math |",
        "| rmsnorm | KB_SELECTION.json | row-reduction obligations |",
    ],
    "MEMORY.md": ["- D1: (stage 1) cpu backend, four P0 cases, two per dtype.",
                  "- U1: \"Write rmsnorm and optimise it.\""],
    "DESIGN.md": ["x is [rows, cols], dynamic.", "numpy ufuncs for square, mean, sqrt, divide.", "No tiles on cpu.",
                  "The wrapper allocates out; the kernel writes it.", "One pass for the mean, one for the scale.",
                  "Single core.", "None.", "None.", "Every SPEC P0 case:", DESIGN_ROWS,
                  "The mean of squares accumulates in float32 for both dtypes.", "Read x once, write y once."],
}

SELECTION = {"schema_version": 1, "classes": [{
    "class_id": "rmsnorm", "reason": "rmsnorm is a row reduction followed by a scale",
    "optional_patterns": [],
    "required_constraints": [{"req_id": "accum-fp32", "kind": "obligation", "reference": "SPEC.md#1-semantics",
                              "text": "Accumulate the mean of squares in at least float32",
                              "expected_metric": "accumulation precision"}]}]}
BINDINGS = {"schema_version": 1, "vector_selection": [], "bindings": [
    {"class_id": "rmsnorm", "req_id": "accum-fp32", "design_ref": "DESIGN.md#§9", "decision": "float32 mean"}]}
USAGE = {"schema_version": 1, "usages": [
    {"class_id": "rmsnorm", "req_id": "accum-fp32", "status": "implemented",
     "code_ref": "test_rmsnorm.py::rmsnorm_kernel", "grounds": "x.astype(np.float32) before the mean"}]}
INTERFACES = """schema_version: 1
module_count: 0
is_fusion: false
has_cross_core: false
wrapper: {name: rmsnorm_wrapper, params: [{name: x}], outputs: [y]}
modules: []
final_outputs: [y]
composition_verification: "single kernel: test_rmsnorm.py compares y with rmsnorm_golden_cpu per P0 case"
"""
GOLDEN = '''"""Golden of rmsnorm (cpu): device, seeded inputs, the golden call and the golden_cases factory."""
import numpy as np

from rmsnorm_golden_cpu import rmsnorm_golden_cpu

SEED = 42


def _get_device():
    return "cpu"


def _make_inputs(shape, dtype, device=None, seed=SEED):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def rmsnorm_golden(x):
    xf = x.astype(np.float32)
    return (xf / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + 1e-6)).astype(x.dtype)


def golden_cases(manifest_cases):
    out = []
    for case in manifest_cases:
        shape = tuple(int(d) for d in case["shape"].strip("[]").split(","))
        out.append((case["id"], (_make_inputs(shape, case["dtype"], device=_get_device()),), {}))
    return out


def _validate():
    x = _make_inputs((4, 8), "float32")
    assert np.allclose(rmsnorm_golden(x), rmsnorm_golden_cpu(x), atol=1e-5)
    return True
'''
GOLDEN_CPU = '''"""CPU float64 reference of rmsnorm."""
import numpy as np


def rmsnorm_golden_cpu(x):
    xf = np.asarray(x, dtype=np.float64)
    return xf / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + 1e-6)
'''
TESTS = "".join(f"\n\ndef test_{cid}():\n    _run_case({cid!r})\n" for cid in CASES)
TEST = f'''"""Stage 4 delivery of rmsnorm (cpu): one kernel, one wrapper, one test per P0 case."""
import numpy as np

from rmsnorm_golden import _get_device, _make_inputs
from rmsnorm_golden_cpu import rmsnorm_golden_cpu

CASES = {CASES!r}
TOLERANCE = {{"float32": (1e-5, 1e-4), "float16": (1e-3, 1e-2)}}


def rmsnorm_kernel(x, out):
    xf = x.astype(np.float32)
    out[...] = (xf / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + 1e-6)).astype(out.dtype)


def rmsnorm_wrapper(x):
    if x.ndim != 2:
        raise ValueError("rmsnorm expects a 2-D input")
    out = np.empty_like(x)
    rmsnorm_kernel(x, out)
    return out


def _assert_precision(actual, expected, dtype):
    atol, rtol = TOLERANCE[dtype]
    err = np.abs(actual.astype(np.float64) - expected)
    matched = float(np.mean(err <= atol + rtol * np.abs(expected)))
    print(f"matched_ratio={{matched:.6f}}")
    print(f"max_abs_error={{float(err.max()):.3e}}")
    assert matched >= 0.999
    print("PASS")


def _run_case(case_id):
    shape, dtype = CASES[case_id]
    x = _make_inputs(shape, dtype, device=_get_device())
    _assert_precision(rmsnorm_wrapper(x), rmsnorm_golden_cpu(x), dtype)
{TESTS}

if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{{name}}"]()
    print("Test completed!")
'''


def fill_markdown(text: str, replacements: list[str]) -> str:
    lines, queue = text.splitlines(), list(replacements)
    out = [queue.pop(0) if "<FILL" in line else line for line in lines]
    assert not queue, f"{len(queue)} replacement(s) unused"
    return "\n".join(out) + "\n"


def fill(op: Path) -> None:
    for name, replacements in MARKDOWN.items():
        (op / name).write_text(fill_markdown((op / name).read_text(), replacements))
    for name, obj in (("KB_SELECTION.json", SELECTION), ("DESIGN_BINDINGS.json", BINDINGS), ("KB_USAGE.json", USAGE)):
        (op / name).write_text(json.dumps(obj, indent=2))
    for name, text in (("module_interfaces.yaml", INTERFACES), ("rmsnorm_golden.py", GOLDEN),
                       ("rmsnorm_golden_cpu.py", GOLDEN_CPU), ("test_rmsnorm.py", TEST)):
        (op / name).write_text(text)
