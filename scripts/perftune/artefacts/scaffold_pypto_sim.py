"""The pypto-sim mode of the new-operator scaffold: a real, running ``pypto.frontend.jit`` operator.

The Stage 1-4 documents are :mod:`.scaffold`'s (placeholders marked); the code is real: the golden
(numpy only; several named inputs ``x:[512,1024],gamma:[1024]``; bfloat16 expressed as float32
arrays of bfloat16 numbers), the float64 reference, and ``test_<op>.py`` whose kernel is a
whole-tensor ``y = 2 * x`` skeleton (``set_vec_tile_shapes`` + one assignment) that compiles,
simulates and passes its precision gate as written. The pypto 0.2.0 workarounds are imported from
the shipped helper ``perftune.measure.backends.pypto_sim_support``, never copied. SPEC.md gets the
one P0 case and the precision gate of the skeleton filled in (so freezing works at once);
``variants/variants.json`` is the plan stub (protocol, golden; no variants yet).
Formats: docs/stage-artefacts.md, docs/pypto-sim-backend.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .. import fsio
from ..contract import manifest
from ..errors import ContractError
from . import scaffold

TOLERANCE = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}

GOLDEN = '''"""Golden of OP (pypto-sim): device, seeded inputs, the golden call and the golden_cases factory.

numpy only (Stage 4 golden purity). numpy has no bfloat16: a bfloat16 input is a float32 array
whose values are bfloat16 numbers (`_as_bfloat16`, round to nearest even); the test converts it
exactly with `sim.to_torch(array, "bfloat16")`.
"""

import re

import numpy as np

SEED = 42
_GROUP = re.compile(r"(?:(\\w+):)?\\[([0-9,\\s]*)\\]")


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def _groups(shape, dtype):
    """[(name, dims, dtype)] of a case: "x:[64,256],gamma:[256]" with "x:bfloat16,gamma:float32"
    (one dtype for all, or one per name); an unnamed "[64,256]" is the input x."""
    dtypes = dict(p.split(":") for p in dtype.split(",")) if ":" in dtype else {}
    out = []
    for name, dims in _GROUP.findall(shape):
        name = name or "x"
        out.append((name, tuple(int(d) for d in dims.split(",") if d.strip()), dtypes.get(name, dtype)))
    return out


def _as_bfloat16(array):
    """float32 values rounded to the nearest bfloat16 number (numpy has no bfloat16 dtype)."""
    bits = np.asarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _make_inputs(shape, dtype, device=None, seed=SEED):
    """Seeded inputs of one case, in the order of the named groups (SPEC.md section 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for _name, dims, kind in _groups(shape, dtype):
        values = rng.standard_normal(dims).astype(np.float32)
        out.append(_as_bfloat16(values) if kind == "bfloat16" else values.astype(kind))
    return tuple(out)


def OP_golden(PARAMS):
    """The golden computation (timed on the host by collect_golden_reference.py)."""
    return (FIRST.astype(np.float32) * 2.0).astype(FIRST.dtype)


def golden_cases(manifest_cases):
    """[(case_id, args, kwargs)] for every manifest case (canonical shape and dtype strings)."""
    return [(case["id"], _make_inputs(case["shape"], case["dtype"], device=_get_device()), {})
            for case in manifest_cases]


def _validate():
    """Self-check: the golden agrees with OP_golden_cpu on a small seeded input."""
    from OP_golden_cpu import OP_golden_cpu
    inputs = _make_inputs(SMALL_SHAPE, "float32")
    assert np.allclose(OP_golden(*inputs), OP_golden_cpu(*inputs))
    return True
'''

GOLDEN_CPU = '''"""CPU float64 reference of OP (the precision oracle; never timed)."""

import numpy as np


def OP_golden_cpu(PARAMS):
    """The skeleton's math, y = 2 * FIRST, in float64 (replace with the operator's)."""
    return np.asarray(FIRST, dtype=np.float64) * 2.0
'''

TEST = '''"""Stage 4 delivery of OP on pypto-sim: one jit kernel, one wrapper, one test per P0 case.

The kernel is the scaffold's whole-tensor skeleton (y = 2 * x); replace its body and the
references with the operator's. The pypto 0.2.0 workarounds come from the shipped helper
(imported before pypto), never copied here (docs/pypto-sim-backend.md).
"""

from perftune.measure.backends import pypto_sim_support as sim  # before pypto: side files

import numpy as np
import pypto
import torch

from OP_golden import _get_device, _groups, _make_inputs
from OP_golden_cpu import OP_golden_cpu

CASES = CASES_LITERAL
TOLERANCE = TOLERANCE_LITERAL
MIN_MATCHED = 0.999
SIM = {"run_mode": pypto.RunMode.SIM}
VERIFY = {"enable_pass_verify": True, "pass_verify_save_tensor": False, "pass_verify_pass_filter": []}
_KERNELS = {}


def _build(shapes, dtypes):
    """The jit kernel for one case's input shapes and dtypes (the output is shaped like FIRST)."""
    (rows, cols), pdt = shapes[0], [sim.pypto_dtype(d) for d in dtypes]

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(SIGNATURE, out: pypto.Tensor(shapes[0], pdt[0])):
        pypto.set_vec_tile_shapes(min(rows, 16), cols)   # whole-tensor body; pypto.loop tiles work too
        out[:] = FIRST * 2.0
    return kernel


def OP_kernel(PARAMS, out):
    """One simulated launch (the output is written on the CPU by pass-verify)."""
    key = tuple((tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in (PARAMS,))
    if key not in _KERNELS:
        _KERNELS[key] = _build([k[0] for k in key], [k[1] for k in key])
    _KERNELS[key](PARAMS, out)


def OP_wrapper(PARAMS):
    """Host boundary: allocate the output, launch the kernel once."""
    out = torch.zeros_like(FIRST)
    OP_kernel(PARAMS, out)
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
    inputs = _make_inputs(shape, dtype)
    kinds = [kind for _name, _dims, kind in _groups(shape, dtype)]
    actual = OP_wrapper(*[sim.to_torch(a, k) for a, k in zip(inputs, kinds)])
    _assert_precision(sim.to_numpy(actual), OP_golden_cpu(*inputs), kinds[0])


TESTS_BLOCK

if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
'''


def _plan(op: str) -> str:
    plan = {"applies_to": f"test_{op}.py", "closures": [], "compliance": "single kernel launch, wrapper unchanged",
            "golden": {"factory": "golden_cases", "function": f"{op}_golden"},
            "protocol": {"backend": "pypto-sim", "noise_band": 0.01, "op_name": f"{op}_kernel",
                         "repeats": 2, "warmup": 0},
            "schema_version": 1, "sweep": [], "variants": []}
    return json.dumps(plan, indent=2, sort_keys=True) + "\n"


def _spec(op: str, case_id: str, shape: str, dtype: str) -> str:
    text = scaffold.SPEC.replace("OP", op)
    named = re.match(r"(\w+):\[", shape)
    axis = named.group(1) if named else "shape"   # the work model names an axis of the first input
    kinds = sorted({d.split(":")[-1] for d in dtype.split(",")})
    gate = "\n".join(f"- {k}: `|y - ref| <= {TOLERANCE[k][0]:g} + {TOLERANCE[k][1]:g} * |ref|` for at least 99.9 % of "
                     "elements." for k in kinds)
    text = re.sub(r"<FILL: comparison with .*>", f"Compared with `{op}_golden_cpu` (float64 reference), on the "
                  f"outputs PyPTO's pass-verify computes on the CPU:\n{gate}\n\nThe test prints `PASS`, "
                  "`matched_ratio=` and `max_abs_error=` for every case.", text)
    rows = "".join(f"| {cid} | {cshape} | {dtype} | {'yes' if cid == case_id else 'no'} | test_{cid} |\n"
                   for cid, cshape in _cases(case_id, shape).items())
    text = re.sub(r"\| <FILL: case id> \|.*\n", rows, text)
    text = re.sub(r"\| <FILL: dim name> \|.*\n", f"| rows | {axis}[0] |\n| cols | {axis}[1] |\n"
                  "| elements | rows*cols |\n", text)
    text = re.sub(r"\| <FILL: operation> \|.*\n", "| scale by 2 (the skeleton's; replace) | arithmetic | 1 | elements |\n", text)
    text = re.sub(r"\| <FILL: tensor> \|.*\n", "| x | read | elements |\n| y | write | elements |\n", text)
    text = re.sub(r"\| <FILL: support dimension> \|.*\n", _support(shape), text)
    text = re.sub(r"dtypes: <FILL: .*>", f"dtypes: {', '.join(kinds)}", text)
    return re.sub(r"<FILL: 'user_target: .*>", "none: the golden reference is the default target", text)


def _support(shape: str) -> str:
    """The skeleton's support range: the first input's rows from 16 (the non-P0 cases' 16, 24 and 40
    inside; multiples of 8 when the P0 rows are one), every other size as in the P0 case."""
    rows = []
    for number, match in enumerate(re.finditer(r"(?:(\w+):)?\[([0-9,]+)\]", shape)):
        name = match.group(1) or "shape"
        for axis, size in enumerate(int(d) for d in match.group(2).split(",")):
            low, high, step = (min(16, size), max(size, 40), 8 if size % 8 == 0 and size >= 16 else 1) \
                if number == axis == 0 else (size, size, 1)
            rows.append(f"| {name}_{axis} | {name}[{axis}] | {low} | {high} | {step} |\n")
    return "".join(rows)


def _cases(case_id: str, shape: str) -> dict[str, str]:
    """The P0 case and the three small non-P0 cases the Stage 4 gate ``test_count`` needs (at least
    4 tests): the first input's rows 16, 24 (a tail of the 16-row tile) and 40, the rest unchanged."""
    head = re.match(r"((?:\w+:)?\[)(\d+)(,\d+\].*)", shape)
    return {case_id: shape, **{f"{case_id}_rows{r}": f"{head.group(1)}{r}{head.group(3)}" for r in (16, 24, 40)}}


def templates(op: str, case_id: str, shape: str, dtype: str) -> dict[str, str]:
    """File name -> content of every pypto-sim scaffold file (documents from :mod:`.scaffold`)."""
    names = [m.group(1) or "x" for m in re.finditer(r"(?:(\w+):)?\[", shape)]
    params, first = ", ".join(names), names[0]
    signature = ", ".join(f"{n}: pypto.Tensor(shapes[{i}], pdt[{i}])" for i, n in enumerate(names))
    small = ",".join(f"{n}:[4,8]" if i == 0 else f"{n}:[8]" for i, n in enumerate(names))

    def fill(text: str) -> str:
        return (text.replace("SIGNATURE", signature).replace("PARAMS", params).replace("FIRST", first)
                .replace("SMALL_SHAPE", repr(small)).replace("OP", op))

    files = scaffold.templates(op)
    cases = _cases(case_id, shape)
    tests = "\n\n".join(f"def test_{cid}():\n    _run_case({cid!r})\n" for cid in cases)
    test = (TEST.replace("CASES_LITERAL", repr({cid: (cshape, dtype) for cid, cshape in cases.items()}))
            .replace("TOLERANCE_LITERAL", repr(TOLERANCE)).replace("TESTS_BLOCK", tests))
    files.update({"SPEC.md": _spec(op, case_id, shape, dtype), f"{op}_golden.py": fill(GOLDEN),
                  f"{op}_golden_cpu.py": fill(GOLDEN_CPU), f"test_{op}.py": fill(test),
                  "variants/variants.json": _plan(op)})
    return files


def check_case(case_id: str, shape: str, dtype: str) -> tuple[str, str]:
    """The canonical (shape, dtype) of the scaffold's P0 case; ContractError naming the flag."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", case_id):
        raise ContractError("new_operator.py", "--case-id", f"{case_id!r} is not an identifier", "use e.g. r64_c256_fp32")
    try:
        shape, dtype = manifest.canonical_shape(shape), manifest.canonical_dtype(dtype)
    except ValueError as exc:
        raise ContractError("new_operator.py", "--shape/--dtype", str(exc), "e.g. --shape 'x:[64,256],gamma:[256]' "
                            "--dtype bfloat16") from None
    first = re.match(r"(?:\w+:)?\[([0-9,]*)\]", shape)
    if first is None or len(first.group(1).split(",")) != 2:
        raise ContractError("new_operator.py", "--shape", f"{shape!r}: the first input must be 2-D (the "
                            "skeleton's output is shaped like it)", "e.g. --shape 'x:[64,256]'")
    unknown = sorted({d.split(":")[-1] for d in dtype.split(",")} - set(TOLERANCE))
    if unknown:
        raise ContractError("new_operator.py", "--dtype", f"{unknown} not supported by the skeleton",
                            f"use {sorted(TOLERANCE)}")
    return shape, dtype


def create(parent: str | Path, op: str, case_id: str, shape: str, dtype: str) -> tuple[Path, list[str]]:
    """Write ``<parent>/<op>/`` in pypto-sim mode; refuses an existing folder (never overwrites)."""
    shape, dtype = check_case(case_id, shape, dtype)
    root, _ = scaffold.create(parent, op, files=templates(op, case_id, shape, dtype))
    return root, sorted(templates(op, case_id, shape, dtype))
