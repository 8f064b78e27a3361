"""The operator's necessary-work model: declared in SPEC.md, frozen into the manifest (pure).

SPEC.md section (docs/operator-format.md): a heading containing "necessary work" with three
markdown tables, identified by their header columns:

- ``| dim | value |`` — named dims of a case: ``x[0]`` (axis 0 of the named shape group ``x``),
  ``shape[1]`` (axis 1 of an unnamed single shape), or an expression of dims named above
  (``rows*cols``);
- ``| operation | class | count | per |`` — the work the semantics require, never what an
  implementation does: ``class`` is ``arithmetic``, ``transcendental`` or ``matmul`` (the multiply-adds of
  a matrix product, which a cube unit runs at its own peak: ``2*k`` per ``m*n`` output); ``count`` operations are
  needed ``per`` unit, both expressions of the dims (per element: ``rows*cols``; per row: ``rows``;
  per output: ``m*n``);
- ``| tensor | direction | elements | dtype |`` — necessary data movement: each tensor read once
  and/or written once (``read``, ``write``, ``read_write``), ``elements`` an expression of the
  dims; ``dtype`` optional (default: the case's dtype of that named group, or its only dtype).

Expressions: integers, dim names, ``+ - * / // **`` and parentheses (``ast``, nothing evaluated
by Python). :func:`parse_section` returns the JSON model frozen as ``work_model``;
:func:`case_work` evaluates it for one case (totals rounded to integers).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import operator
import re
from typing import Any

from ..errors import ContractError
from .manifest import canonical_dtype

CLASSES = ("arithmetic", "transcendental", "matmul")
DIRECTIONS = {"read": 1, "write": 1, "read_write": 2}
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2,
            "int32": 4, "int64": 8, "bool": 1}
_TABLES = {"dims": ("dim", "value"), "operations": ("operation", "class", "count", "per"),
           "tensors": ("tensor", "direction", "elements")}
_AXIS = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]$")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def _tables(lines: list[str]) -> list[tuple[list[str], list[list[str]]]]:
    found, at = [], 0
    while at < len(lines) - 1:
        if lines[at].strip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[at + 1]):
            header, rows, at = [c.lower() for c in _cells(lines[at])], [], at + 2
            while at < len(lines) and lines[at].strip().startswith("|"):
                rows.append(_cells(lines[at]))
                at += 1
            found.append((header, rows))
        else:
            at += 1
    return found


def section_lines(text: str) -> tuple[str, list[str]] | None:
    """(heading, body lines) of the first heading containing 'necessary work'; None when absent."""
    lines, start, title = text.splitlines(), None, ""
    for index, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            if start is not None:
                return title, lines[start:index]
            if "necessary work" in line.lower():
                start, title = index + 1, line.strip("# ").strip()
    return (title, lines[start:]) if start is not None else None


def parse_section(text: str, source: str = "SPEC.md") -> dict[str, Any] | None:
    """The frozen ``work_model`` dict of SPEC.md (None when the section is absent)."""
    found = section_lines(text)
    if found is None:
        return None
    title, lines = found
    model: dict[str, Any] = {"source": f"{source.rsplit('/', 1)[-1]}#{title}"}
    for header, rows in _tables(lines):
        for key, columns in _TABLES.items():
            if set(columns) <= set(header) and key not in model:
                model[key] = [_row(header, row, columns, source, f"{key} row {n}") for n, row in enumerate(rows, 1)]
    for key in _TABLES:
        if not model.get(key):
            raise ContractError(source, f"{title}: {key}", f"no table with columns {list(_TABLES[key])}",
                                "see docs/operator-format.md (Necessary work)")
    for op in model["operations"]:
        if op["class"] not in CLASSES:
            raise ContractError(source, f"{title}: operation {op['operation']}", f"class {op['class']!r} is unknown",
                                f"use one of {list(CLASSES)}")
    for tensor in model["tensors"]:
        if tensor["direction"] not in DIRECTIONS:
            raise ContractError(source, f"{title}: tensor {tensor['tensor']}", f"direction {tensor['direction']!r}"
                                " is unknown", f"use one of {list(DIRECTIONS)}")
    return model


def _row(header: list[str], row: list[str], columns: tuple[str, ...], source: str, where: str) -> dict[str, Any]:
    if len(row) != len(header):
        raise ContractError(source, where, f"has {len(row)} cells, header has {len(header)}", "fix the table")
    cell = dict(zip(header, row))
    for column in columns:
        if not cell.get(column):
            raise ContractError(source, f"{where}.{column}", "is empty", "fill it in")
    if "dtype" in header and columns[0] == "tensor":
        cell["dtype"] = cell.get("dtype") or None
        return {k: cell[k] for k in (*columns, "dtype")}
    return {k: cell[k] for k in columns}


def model_sha256(model: dict[str, Any]) -> str:
    """Identity of a model: sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(model, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def shape_groups(shape: str) -> dict[str, list[int]]:
    """``x:[4,8],w:[8]`` → {x: [4, 8], w: [8]}; an unnamed ``[4,8]`` → {shape: [4, 8]}."""
    groups = {}
    for match in re.finditer(r"(?:([A-Za-z_][A-Za-z0-9_]*):)?\[([0-9,]*)\]", shape):
        groups[match.group(1) or "shape"] = [int(d) for d in match.group(2).split(",") if d]
    return groups


def dtype_of(dtype: str, tensor: str) -> str | None:
    """The dtype of a named group in ``x:float16,w:float32``, the only dtype of an unnamed one, or the
    dtype all named groups share (None otherwise: the tensor row must give one)."""
    parts = dict(p.split(":", 1) if ":" in p else ("", p) for p in dtype.split(","))
    common = set(parts.values())
    return parts.get(tensor) or parts.get("") or (common.pop() if len(common) == 1 else None)


def evaluate(expression: str, dims: dict[str, float], where: str, source: str) -> float:
    """Value of an arithmetic expression over ``dims`` (ast; names must be dims)."""
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in dims:
            return dims[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        name = node.id if isinstance(node, ast.Name) else type(node).__name__
        raise ContractError(source, where, f"{expression!r}: {name!r} is not a dim or an arithmetic operation",
                            f"use numbers, + - * / // ** and the dims {sorted(dims)}")
    try:
        result = value(ast.parse(expression, mode="eval"))
    except (SyntaxError, ZeroDivisionError, OverflowError) as exc:
        raise ContractError(source, where, f"{expression!r} cannot be evaluated ({exc})", "fix the expression") from None
    if not math.isfinite(result) or result < 0:
        raise ContractError(source, where, f"{expression!r} = {result} is not a non-negative number", "fix it")
    return float(result)


def case_dims(model: dict[str, Any], case_id: str, shape: str, source: str) -> dict[str, float]:
    groups, dims = shape_groups(shape), {}
    for entry in model["dims"]:
        where, text = f"work_model.dims.{entry['dim']} (case {case_id})", entry["value"]
        axis = _AXIS.match(text)
        if axis and axis.group(1) not in dims:
            group, index = axis.group(1), int(axis.group(2))
            if group not in groups or index >= len(groups[group]):
                raise ContractError(source, where, f"{text} is not an axis of the case shape {shape}",
                                    f"name a group and axis of {shape} (an unnamed shape is 'shape')")
            dims[entry["dim"]] = float(groups[group][index])
        else:
            dims[entry["dim"]] = evaluate(text, dims, where, source)
    return dims


def case_work(model: dict[str, Any], case_id: str, shape: str, dtype: str, source: str = "work_model"
              ) -> dict[str, Any]:
    """Necessary arithmetic, transcendental and matmul operations and bytes of one case (integers; ``bytes``
    counts a read_write tensor twice, ``read_bytes``/``write_bytes`` split them by direction)."""
    dims = case_dims(model, case_id, shape, source)
    totals = {c: 0.0 for c in CLASSES}
    for op in model["operations"]:
        where = f"work_model.operations.{op['operation']} (case {case_id})"
        totals[op["class"]] += evaluate(op["count"], dims, where, source) * evaluate(op["per"], dims, where, source)
    moved, by_direction = 0.0, {"read": 0.0, "write": 0.0}
    for tensor in model["tensors"]:
        where = f"work_model.tensors.{tensor['tensor']} (case {case_id})"
        name = tensor.get("dtype") or dtype_of(dtype, tensor["tensor"])
        try:
            name = canonical_dtype(name or "")
        except ValueError:
            pass
        if name not in ITEMSIZE:
            raise ContractError(source, where, f"no item size for dtype {name!r}",
                                f"give the tensor a dtype column entry from {sorted(ITEMSIZE)}")
        size = evaluate(tensor["elements"], dims, where, source) * ITEMSIZE[name]
        moved += size * DIRECTIONS[tensor["direction"]]
        for direction in ("read", "write"):
            by_direction[direction] += size if direction in tensor["direction"] else 0.0
    if moved <= 0:
        raise ContractError(source, f"work_model.tensors (case {case_id})", "moves no bytes", "declare the tensors")
    return {"dims": {k: int(v) if v == int(v) else v for k, v in dims.items()},
            "arithmetic_ops": int(round(totals["arithmetic"])),
            "transcendental_ops": int(round(totals["transcendental"])), "matmul_ops": int(round(totals["matmul"])),
            "bytes": int(round(moved)),
            "read_bytes": int(round(by_direction["read"])), "write_bytes": int(round(by_direction["write"]))}


def written_dtype(model: dict[str, Any] | None) -> str | None:
    """The one dtype the model's written tensors declare (``y | write | m*n | float32``), else None."""
    found = {canonical_dtype(t["dtype"]) for t in (model or {}).get("tensors", [])
             if t.get("dtype") and "write" in t["direction"]}
    return found.pop() if len(found) == 1 else None
