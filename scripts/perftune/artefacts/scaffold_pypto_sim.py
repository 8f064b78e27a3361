"""The pypto-sim mode of the new-operator scaffold: a real, running ``pypto.frontend.jit`` operator.

The Stage 1-4 documents are :mod:`.scaffold`'s (placeholders marked); the code is real, for any
signature :mod:`.signature` parses (n named inputs of their own shapes and dtypes, integer index
inputs included): the golden (numpy only; bfloat16 expressed as float32 arrays of bfloat16 numbers),
the float64 reference, and ``test_<op>.py`` whose kernel is a whole-tensor ``y = 2 * first input``
skeleton (``set_vec_tile_shapes`` + one assignment) that compiles, simulates and passes its precision
gate as written. The wrapper allocates the outputs the golden gives (``_OUTPUTS``, filled from the
reference's outputs before each launch), so replacing the golden and the kernel body (``x @ w``) needs
no edit of the wrapper. The pypto 0.2.0 workarounds are imported from the shipped helper
``perftune.measure.backends.pypto_sim_support``, never copied. SPEC.md gets the P0 case, three small
non-P0 cases valid for every input, the precision gate scaled by the reduction length, the work model
and the support range (so freezing works at once); ``variants/variants.json`` is the plan stub.
Formats: docs/stage-artefacts.md, docs/pypto-sim-backend.md, docs/spec-format.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..contract import manifest
from ..errors import ContractError
from . import scaffold, signature

GOLDEN = '''"""Golden of OP (pypto-sim): device, seeded inputs, the golden call and the golden_cases factory.

numpy only (Stage 4 golden purity). numpy has no bfloat16: a bfloat16 input is a float32 array
whose values are bfloat16 numbers (`_as_bfloat16`, round to nearest even); the test converts it
exactly with `sim.to_torch(array, "bfloat16")`. An integer input is an index: uniform in
[0, first input's axis 0).
"""

import re

import numpy as np

SEED = 42
_GROUP = re.compile(r"(?:(\\w+):)?\\[([0-9,\\s]*)\\]")


def _get_device():
    """The device every test uses: the simulator runs on the host CPU."""
    return "cpu"


def _groups(shape, dtype):
    """[(name, dims, dtype)] of a case: "x:[64,256],idx:[8]" with "x:bfloat16,idx:int32"
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
    groups = _groups(shape, dtype)
    out = []
    for _name, dims, kind in groups:
        if kind.startswith("int"):
            out.append(rng.integers(0, groups[0][1][0], dims).astype(kind))
            continue
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
    inputs = _make_inputs(SMALL_SHAPE, SMALL_DTYPE)
    assert np.allclose(OP_golden(*inputs), OP_golden_cpu(*inputs))
    return True
'''

GOLDEN_CPU = '''"""CPU float64 reference of OP (the precision oracle; never timed)."""

import numpy as np


def OP_golden_cpu(PARAMS):
    """The skeleton's math, y = 2 * FIRST, in float64 (replace with the operator's; return a tuple for
    several outputs: the test's wrapper allocates what this returns)."""
    return np.asarray(FIRST, dtype=np.float64) * 2.0
'''

TEST = '''"""Stage 4 delivery of OP on pypto-sim: one jit kernel, one wrapper, one test per P0 case.

The kernel is the scaffold's whole-tensor skeleton (y = 2 * FIRST); replace its body and the
references with the operator's. The wrapper allocates the outputs the reference gives for the
inputs (shapes from OP_golden_cpu; a floating output takes the first floating input's dtype), so
only the kernel's `out` parameters follow the golden. The pypto 0.2.0 workarounds come from the
shipped helper (imported before pypto), never copied here (docs/pypto-sim-backend.md).
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
_OUTPUTS = {}   # the inputs' [(shape, dtype)] -> the outputs' [(shape, dtype)], from the reference (_run_case)


def _key(tensors):
    return tuple((tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in tensors)


def _build(inputs, outputs):
    """The jit kernel for one case's input and output (shape, dtype) pairs."""
    (rows, cols), pdt = inputs[0][0], [sim.pypto_dtype(d) for _shape, d in inputs]
    odt = [sim.pypto_dtype(d) for _shape, d in outputs]

    @pypto.frontend.jit(runtime_options=SIM, verify_options=VERIFY)
    def kernel(SIGNATURE, out: pypto.Tensor(outputs[0][0], odt[0])):
        pypto.set_vec_tile_shapes(min(rows, 16), cols)   # whole-tensor body; pypto.loop tiles work too
        out[:] = FIRST * 2.0
    return kernel


def OP_kernel(PARAMS, out):
    """One simulated launch (the output is written on the CPU by pass-verify)."""
    key = (_key((PARAMS,)), _key((out,)))
    if key not in _KERNELS:
        _KERNELS[key] = _build(*key)
    _KERNELS[key](PARAMS, out)


def OP_wrapper(PARAMS):
    """Host boundary: allocate the outputs the reference gives for these inputs, launch the kernel once."""
    outs = [torch.zeros(shape, dtype=getattr(torch, kind)) for shape, kind in _OUTPUTS[_key((PARAMS,))]]
    OP_kernel(PARAMS, *outs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _output_specs(expected, kinds):
    """[(shape, dtype)] of the reference's outputs; a floating one takes the first floating input's dtype."""
    first = next(k for k in kinds if not k.startswith("int"))
    return [(tuple(e.shape), first if np.issubdtype(e.dtype, np.floating) else e.dtype.name) for e in expected]


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
    tensors = [sim.to_torch(a, k) for a, k in zip(inputs, kinds)]
    reference = OP_golden_cpu(*inputs)
    expected = reference if isinstance(reference, tuple) else (reference,)
    specs = _output_specs(expected, kinds)
    _OUTPUTS[_key(tensors)] = specs
    actual = OP_wrapper(*tensors)
    for out, ref, (_shape, kind) in zip(actual if isinstance(actual, tuple) else (actual,), expected, specs):
        _assert_precision(sim.to_numpy(out), ref, kind)


TESTS_BLOCK

if __name__ == "__main__":
    for name in sorted(CASES):
        globals()[f"test_{name}"]()
    print("Test completed!")
'''


def _plan(op: str) -> str:
    """The plan stub: warm-up and repeats left to the backend's own defaults (docs/operator-format.md)."""
    plan = {"applies_to": f"test_{op}.py", "closures": [], "compliance": "single kernel launch, wrapper unchanged",
            "golden": {"factory": "golden_cases", "function": f"{op}_golden"},
            "protocol": {"backend": "pypto-sim", "noise_band": 0.01, "op_name": f"{op}_kernel",
                         "selection_mode": "all_p0_no_questions", "target_case_ids": "all_p0"},
            "schema_version": 1, "sweep": {"scope": "-", "findings": []}, "variants": []}
    return json.dumps(plan, indent=2, sort_keys=True) + "\n"


def _work_model(sig: signature.Signature) -> tuple[str, str, str]:
    """SPEC.md section 4 rows (dims, operations, tensors) of the skeleton y = 2 * first input."""
    tokens = list(dict.fromkeys(a for i in sig.inputs for a in i.axes))
    dims = "".join(f"| {sig.dim_name(t)} | {sig.positions(t)[0]} |\n" for t in tokens)
    elements = {i.name: "*".join(sig.dim_name(a) for a in i.axes) for i in sig.inputs}
    first = sig.inputs[0]
    ops = f"| scale by 2 (the skeleton's; replace) | arithmetic | 1 | {elements[first.name]} |\n"
    tensors = "".join(f"| {i.name} | read | {elements[i.name]} | |\n" for i in sig.inputs)
    return dims, ops, tensors + f"| y | write | {elements[first.name]} | {first.dtype} |\n"


def _support(sig: signature.Signature) -> str:
    """SPEC.md section 6 rows: the varied dimension from 16 (the small cases 16, 24, 40 inside; multiples
    of 8 when the P0 size is one), every other dimension as in the P0 case."""
    rows = []
    for token in dict.fromkeys(a for i in sig.inputs for a in i.axes):
        size = sig.sizes[token]
        low, high, step = (min(16, size), max(size, 40), 8 if size % 8 == 0 and size >= 16 else 1) \
            if token == sig.varied else (size, size, 1)
        rows.append(f"| {sig.dim_name(token)} | {' '.join(sig.positions(token))} | {low} | {high} | {step} |\n")
    return "".join(rows)


def _spec(op: str, case_id: str, sig: signature.Signature) -> str:
    text = scaffold.SPEC.replace("OP", op)
    k = sig.reduction_length()
    scaled = f"; reduction length K = {k}: the element-wise atol times sqrt(K), docs/spec-format.md" if k > 1 else ""
    gate = "\n".join(signature.gate_lines(sig))
    text = re.sub(r"<FILL: comparison with .*>", lambda _m: f"Compared with `{op}_golden_cpu` (float64 reference), on "
                  f"the outputs PyPTO's pass-verify computes on the CPU{scaled}:\n{gate}\n\nThe test prints `PASS`, "
                  "`matched_ratio=` and `max_abs_error=` for every case.", text)
    rows = "".join(f"| {cid} | {cshape} | {sig.dtype()} | {'yes' if cid == case_id else 'no'} | test_{cid} |\n"
                   for cid, cshape in sig.cases(case_id).items())
    dims, ops, tensors = _work_model(sig)
    text = re.sub(r"\| <FILL: case id> \|.*\n", lambda _m: rows, text)
    text = re.sub(r"\| <FILL: dim name> \|.*\n", lambda _m: dims, text)
    text = re.sub(r"\| <FILL: operation> \|.*\n", lambda _m: ops, text)
    text = text.replace("| tensor | direction | elements |\n|--------|-----------|----------|\n",
                        "| tensor | direction | elements | dtype |\n|--------|-----------|----------|-------|\n")
    text = re.sub(r"\| <FILL: tensor> \|.*\n", lambda _m: tensors, text)
    text = re.sub(r"\| <FILL: support dimension> \|.*\n", lambda _m: _support(sig), text)
    kinds = sorted({i.dtype for i in sig.inputs})
    text = re.sub(r"dtypes: <FILL: .*>", f"dtypes: {', '.join(kinds)}", text)
    return re.sub(r"<FILL: 'user_target: .*>", "none: the golden reference is the default target", text)


def templates(op: str, case_id: str, sig: signature.Signature) -> dict[str, str]:
    """File name -> content of every pypto-sim scaffold file (documents from :mod:`.scaffold`)."""
    names = [i.name for i in sig.inputs]
    params, first = ", ".join(names), names[0]
    kernel_params = ", ".join(f"{n}: pypto.Tensor(inputs[{i}][0], pdt[{i}])" for i, n in enumerate(names))
    cases = sig.cases(case_id)
    small = cases[f"{case_id}_{sig.varied_label}{signature.SMALL_SIZES[0]}"]
    small_dtype = ",".join(f"{i.name}:{i.dtype if i.dtype in signature.INDEX_DTYPES else 'float32'}" for i in sig.inputs)

    def fill(text: str) -> str:
        return (text.replace("SIGNATURE", kernel_params).replace("PARAMS", params).replace("FIRST", first)
                .replace("SMALL_SHAPE", repr(small)).replace("SMALL_DTYPE", repr(small_dtype)).replace("OP", op))

    files = scaffold.templates(op)
    tests = "\n\n".join(f"def test_{cid}():\n    _run_case({cid!r})\n" for cid in cases)
    tolerance = {kind: signature.gate(kind, sig.reduction_length()) for kind in sig.float_kinds()}
    test = (TEST.replace("CASES_LITERAL", repr({cid: (cshape, sig.dtype()) for cid, cshape in cases.items()}))
            .replace("TOLERANCE_LITERAL", repr(tolerance)).replace("TESTS_BLOCK", tests))
    files.update({"SPEC.md": _spec(op, case_id, sig), f"{op}_golden.py": fill(GOLDEN),
                  f"{op}_golden_cpu.py": fill(GOLDEN_CPU), f"test_{op}.py": fill(test),
                  "variants/variants.json": _plan(op)})
    return files


def check_case(case_id: str, shape: str, dims: str, dtype: str, reduction: str) -> signature.Signature:
    """The signature of the scaffold's cases; ContractError naming the flag."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", case_id):
        raise ContractError("new_operator.py", "--case-id", f"{case_id!r} is not an identifier", "use e.g. r64_c256_fp32")
    sig = signature.parse(shape, dims, dtype, reduction)
    try:
        manifest.canonical_shape(sig.shape(sig.sizes))
    except ValueError as exc:
        raise ContractError("new_operator.py", "--shape", str(exc), "e.g. --shape 'x:[64,256],gamma:[256]'") from None
    return sig


def create(parent: str | Path, op: str, case_id: str, shape: str, dtype: str, dims: str = "",
           reduction: str = "1") -> tuple[Path, list[str]]:
    """Write ``<parent>/<op>/`` in pypto-sim mode; refuses an existing folder (never overwrites)."""
    sig = check_case(case_id, shape, dims, dtype, reduction)
    files = templates(op, case_id, sig)
    root, _ = scaffold.create(parent, op, files=files)
    return root, sorted(files)
