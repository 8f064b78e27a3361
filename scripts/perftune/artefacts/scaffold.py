"""The new-operator scaffold: every Stage 1-4 artefact in its format, placeholders marked.

Each placeholder is ``<FILL: what to write>`` (one per line); the validators refuse a file while
one is left (:func:`.problems.placeholders`). ``OP`` in a template stands for the operator name.
Formats: docs/stage-artefacts.md.
"""

from __future__ import annotations

from pathlib import Path

from .. import fsio
from ..errors import ContractError

SPEC = """# SPEC: OP

## 1. Semantics
<FILL: the math of OP: inputs (name, rank, dtype, layout), outputs, formula, supported range>
<FILL: input distribution, drawn with seed 42, and what the kernel (not the host) must produce>

wrapper: OP_wrapper

## 2. Precision gate
<FILL: comparison with OP_golden_cpu: tolerance per dtype, minimum matched ratio, printed PASS/matched_ratio=/max_abs_error=>

## 3. Performance P0 cases

| id | shape | dtype | p0 | test_function |
|----|-------|-------|----|---------------|
| <FILL: case id> | <FILL: [rows,cols]> | <FILL: float16> | yes | <FILL: test_<case id>> |

## 4. Necessary work
What the semantics require per case, never what an implementation does (the Stage 5 work model).

| dim | value |
|-----|-------|
| <FILL: dim name> | <FILL: shape[0], or an expression of dims> |

| operation | class | count | per |
|-----------|-------|-------|-----|
| <FILL: operation> | <FILL: arithmetic or transcendental> | <FILL: count> | <FILL: unit, e.g. rows*cols> |

| tensor | direction | elements |
|--------|-----------|----------|
| <FILL: tensor> | <FILL: read or write> | <FILL: elements> |

## 5. Performance target
<FILL: 'user_target: speedup >= X' if the user gave a number, else 'none: the golden reference is the default target'>

## 6. Support range
Shapes and dtypes the kernel must handle beyond the P0 cases (stage5-check P9 checks correctness on
shapes drawn from it and on large-magnitude inputs; docs/operator-format.md).

| dim | positions | min | max | multiple |
|-----|-----------|-----|-----|----------|
| <FILL: support dimension> | <FILL: shape[0], or x[1] w[0] for one size two tensors share> | <FILL: min> | <FILL: max> | <FILL: multiple> |

dtypes: <FILL: float32, float16>
"""

EXPLORE_TITLES = ("Intent", "Official samples", "API mapping", "Supported range and constraints",
                  "Performance constraints", "Dynamic dimensions", "Precision risks", "Similar operators",
                  "Sources read", "Conclusion and blockers")


def _explore() -> str:
    parts = ["# EXPLORE_REPORT: OP", ""]
    for n, title in enumerate(EXPLORE_TITLES, 1):
        parts += [f"## {n}. {title}", f"<FILL: {title.lower()} findings, each with its source>", ""]
    parts.insert(-1, "unsupported_blockers: <FILL: none, or the list of unsupported requirements>")
    return "\n".join(parts)


MATERIAL = """# PRO_MATERIAL_INDEX: OP

## A. API documents read

| id | path | used_for |
|----|------|----------|
| <FILL: api id> | <FILL: docs path> | <FILL: which step of OP> |

## B. Official samples read

| id | path | used_for |
|----|------|----------|
| <FILL: sample id> | <FILL: sample path> | <FILL: what it shows> |

## C. Knowledge-base entries

| id | path | used_for |
|----|------|----------|
| <FILL: KB class id (every KB_SELECTION class)> | <FILL: KB file> | <FILL: why selected> |
"""

MEMORY = """# MEMORY: OP

## Decisions
- D1: <FILL: a decision, its reason and source (stage 1)>

## User statements
- U1: <FILL: the user's request, verbatim>

## Open questions
- none
"""

KB_SELECTION = """{
  "classes": [
    {
      "class_id": "OP",
      "optional_patterns": [],
      "reason": "<FILL: why this knowledge class matches OP>",
      "required_constraints": [
        {
          "expected_metric": "<FILL: what shows it is met>",
          "kind": "obligation",
          "reference": "SPEC.md#1-semantics",
          "req_id": "<FILL: short id>",
          "text": "<FILL: the requirement>"
        }
      ]
    }
  ],
  "schema_version": 1
}
"""

GOLDEN = '''"""Golden of OP: device, seeded inputs, the golden call and the golden_cases factory."""

SEED = 42


def _get_device():
    """The device every test uses."""
    raise NotImplementedError("<FILL: return the device, e.g. 'npu:0' or 'cpu'>")


def _make_inputs(shape, dtype, device=None, seed=SEED):
    """Seeded inputs of one case (distribution from SPEC.md section 1)."""
    raise NotImplementedError("<FILL: build the inputs with the seeded generator>")


def OP_golden(x):
    """The golden computation (timed once per case by collect_golden_reference.py)."""
    raise NotImplementedError("<FILL: the golden math>")


def golden_cases(manifest_cases):
    """[(case_id, args, kwargs)] for every manifest case (shape like "[4,8]", canonical dtype)."""
    out = []
    for case in manifest_cases:
        shape = tuple(int(d) for d in case["shape"].strip("[]").split(","))
        out.append((case["id"], (_make_inputs(shape, case["dtype"], device=_get_device()),), {}))
    return out


def _validate():
    """Self-check: the golden agrees with OP_golden_cpu on a small seeded input."""
    raise NotImplementedError("<FILL: compare OP_golden with OP_golden_cpu>")
'''

GOLDEN_CPU = '''"""CPU FP32/FP64 reference of OP (the precision oracle; never timed)."""


def OP_golden_cpu(x):
    raise NotImplementedError("<FILL: the reference math on the CPU>")
'''


def _design() -> str:
    titles = ("Dimension contract", "API mapping", "Tiles", "Addresses", "Loops", "Core split",
              "Inter-core sync", "Tails", "Target test cases", "Overall assessment", "Tile dataflow")
    parts = ["# DESIGN: OP", ""]
    for n, title in enumerate(titles):
        parts += [f"## §{n} {title}", f"<FILL: {title.lower()}>", ""]
        if n == 8:
            parts += ["| id | shape | dtype | purpose |", "|----|-------|-------|---------|",
                      "| <FILL: every SPEC P0 id> | <FILL: shape> | <FILL: dtype> | <FILL: what it exercises> |", ""]
    return "\n".join(parts)


BINDINGS = """{
  "bindings": [
    {
      "class_id": "OP",
      "decision": "<FILL: how the design meets the requirement>",
      "design_ref": "DESIGN.md#§1",
      "req_id": "<FILL: the req_id of KB_SELECTION.json>"
    }
  ],
  "schema_version": 1,
  "vector_selection": []
}
"""

INTERFACES = """schema_version: 1
module_count: 0
is_fusion: false
has_cross_core: false
wrapper:
  name: OP_wrapper
  params:
    - name: x
  outputs: [y]
modules: []
final_outputs: [y]
composition_verification: "<FILL: how the composed modules are checked against the golden>"
"""

TEST = '''"""Stage 4 delivery of OP: one kernel, one wrapper, one test per SPEC P0 case."""

from OP_golden import _get_device, _make_inputs
from OP_golden_cpu import OP_golden_cpu


def OP_kernel(x, out):
    raise NotImplementedError("<FILL: the kernel>")


def OP_wrapper(x):
    """Host boundary: check arguments, allocate the output, launch the kernel once."""
    raise NotImplementedError("<FILL: allocate out, call OP_kernel once, return out>")


def _assert_precision(actual, expected, dtype):
    raise NotImplementedError("<FILL: SPEC section 2; print matched_ratio=, max_abs_error=, PASS>")


def test_FILL_case_id():
    raise NotImplementedError("<FILL: one test per P0 case, named as in the SPEC table>")


if __name__ == "__main__":
    test_FILL_case_id()
    print("Test completed!")
'''

USAGE = """{
  "schema_version": 1,
  "usages": [
    {
      "class_id": "OP",
      "code_ref": "test_OP.py::OP_kernel",
      "grounds": "<FILL: where and how the code meets the obligation>",
      "req_id": "<FILL: the req_id of KB_SELECTION.json>",
      "status": "implemented"
    }
  ]
}
"""


SOURCES_README = """# sources/ (optional): this operator's own Stage 5 preset sources

Stage 5 (`ledger.py init --sources-dir`) enumerates the plugin's references unless this folder holds
`general-methods/INDEX.md`, `knowledge-cards/INDEX.md` and `templates/INDEX.md` (format:
docs/operator-format.md, "sources/"). Use it when you bring methods specific to this operator, or
when the plugin's items cannot apply to it (a cpu-only operator: most items are Ascend-only).
Otherwise leave it as it is: `ledger.py close-gated` closes every plugin item whose recorded gate
(platform, dtype) fails for the frozen operator in one command, and `perf_next.py` lists them.
"""


def templates(op: str) -> dict[str, str]:
    """File name -> content of every scaffold file for operator ``op``."""
    files = {"SPEC.md": SPEC, "EXPLORE_REPORT.md": _explore(), "PRO_MATERIAL_INDEX.md": MATERIAL,
             "MEMORY.md": MEMORY, "KB_SELECTION.json": KB_SELECTION, "OP_golden.py": GOLDEN,
             "OP_golden_cpu.py": GOLDEN_CPU, "DESIGN.md": _design(), "DESIGN_BINDINGS.json": BINDINGS,
             "module_interfaces.yaml": INTERFACES, "test_OP.py": TEST, "KB_USAGE.json": USAGE}
    return {**{name.replace("OP", op): text.replace("OP", op) for name, text in files.items()},
            "sources/README.md": SOURCES_README}


def create(parent: str | Path, op: str, files: dict[str, str] | None = None) -> tuple[Path, list[str]]:
    """Write ``<parent>/<op>/`` with every template (or ``files``: name -> text, e.g. the pypto-sim
    mode's, :mod:`.scaffold_pypto_sim`); refuses an existing folder (never overwrites)."""
    if not op.isidentifier() or op.startswith("_"):
        raise ContractError("new_operator.py", "--op", f"{op!r} is not a Python identifier",
                            "use a name like rmsnorm or fused_add_norm")
    root = Path(parent) / op
    try:
        root.mkdir(parents=True)
    except FileExistsError:
        raise ContractError(root, "--dir", "the operator folder already exists", "pick a new name or folder") from None
    written = []
    for name, text in (files or templates(op)).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        fsio.write_text(root / name, text, overwrite=False)
        written.append(name)
    return root, written
