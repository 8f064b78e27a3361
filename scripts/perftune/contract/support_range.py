"""SPEC.md's support range: the shapes and dtypes the operator must handle beyond the P0 cases (issue 28).

The section is the first heading containing ``support range``; its table names each dimension once,
the shape positions it sets (``shape[0]`` for an unnamed shape, ``x[1] w[0]`` for a dimension two
tensors share), its inclusive bounds and the multiple a value must be (docs/operator-format.md)::

    | dim  | positions | min | max  | multiple |
    | rows | shape[0]  | 1   | 1024 | 1        |

    dtypes: float32, float16
    tails: 30 sigma

The optional ``tails:`` line declares that the input distribution's far tails are part of the
contract: the kernel must meet the precision gate on inputs of a P0 shape whose 2 % of every row lie
at mean +- (1 to 1.1) x N sigma of the P0 input (``fresh_data.tail_like``). Frozen as ``tail_sigmas``;
without it the tails lie outside the declared distribution and P9 only discloses a failure on them.

Every position of the P0 shapes is set by exactly one dimension and every P0 case lies inside the
range (refused at freeze otherwise). ``freeze`` stores it as the manifest's ``support_range``;
:func:`draw` picks shapes from the frozen range for stage5-check's P9 beyond-P0 probes.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from ..errors import ContractError
from .work_model import _AXIS, _tables, shape_groups

COLUMNS = ("dim", "positions", "min", "max", "multiple")
TAILS = re.compile(r"^\s*tails\s*:\s*(.*?)\s*$", re.M | re.I)
MAX_TAIL_SIGMAS = 1000.0
MAX_ELEMENTS = 1 << 16   # per drawn shape, all tensors together: the probes stay cheap


def section_lines(text: str) -> list[str] | None:
    lines, start = text.splitlines(), None
    for index, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            if start is not None:
                return lines[start:index]
            if "support range" in line.lower():
                start = index + 1
    return lines[start:] if start is not None else None


def _int(cell: str, source: str, where: str) -> int:
    if not re.fullmatch(r"\d+", cell):
        raise ContractError(source, where, f"{cell!r} is not a non-negative integer", "write a whole number")
    return int(cell)


def from_spec(text: str, source: str, case_shapes: list[str], dtype_of) -> dict[str, Any] | None:
    """The support range of SPEC.md (None without the section); ``case_shapes``: the P0 shapes it must
    contain; ``dtype_of``: the canonical dtype of a SPEC dtype (``manifest.canonical_dtype``)."""
    lines = section_lines(text)
    if lines is None:
        return None
    tables = [(h, rows) for h, rows in _tables(lines) if tuple(h) == COLUMNS]
    if len(tables) != 1 or not tables[0][1]:
        raise ContractError(source, "Support range", "needs one table | dim | positions | min | max | multiple |",
                            "see docs/operator-format.md")
    dims = []
    for row in tables[0][1]:
        name, positions, low, high, step = (row + [""] * 5)[:5]
        where = f"Support range.{name or '?'}"
        slots = positions.split()
        if not name or not slots or any(not _AXIS.match(s) for s in slots):
            raise ContractError(source, where, f"positions {positions!r} are not like shape[0] or x[1]",
                                "name the shape positions the dimension sets")
        dim = {"dim": name, "positions": slots, "min": _int(low, source, where), "max": _int(high, source, where),
               "multiple": _int(step, source, where)}
        if not 1 <= dim["min"] <= dim["max"] or dim["multiple"] < 1 or \
                _values(dim)[0] > dim["max"]:
            raise ContractError(source, where, "needs 1 <= min <= max and a multiple inside", "fix the bounds")
        dims.append(dim)
    match = re.search(r"^\s*dtypes?\s*:\s*(.+)$", "\n".join(lines), re.M | re.I)
    if not match:
        raise ContractError(source, "Support range.dtypes", "no 'dtypes:' line", "add e.g. 'dtypes: float32, float16'")
    try:
        dtypes = [dtype_of(d.strip()) for d in match.group(1).split(",") if d.strip()]
    except ValueError as exc:
        raise ContractError(source, "Support range.dtypes", str(exc), "use dtypes like float32, float16") from None
    frozen = {"dims": dims, "dtypes": dtypes, **_tails("\n".join(lines), source)}
    for shape in case_shapes:
        problem = outside(frozen, shape)
        if problem:
            raise ContractError(source, "Support range", f"P0 shape {shape}: {problem}",
                                "the range must contain every P0 case")
    return frozen


def _tails(text: str, source: str) -> dict[str, float]:
    """``{"tail_sigmas": N}`` of a ``tails: N sigma`` line (empty without one)."""
    match = TAILS.search(text)
    if not match:
        return {}
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:sigma|σ)", match.group(1), re.I)
    value = float(found.group(1)) if found else 0.0
    if not 0 < value <= MAX_TAIL_SIGMAS:
        raise ContractError(source, "Support range.tails", f"{match.group(1)!r} is not 'N sigma' with "
                            f"0 < N <= {MAX_TAIL_SIGMAS:g}", "write e.g. 'tails: 30 sigma', or remove the line")
    return {"tail_sigmas": value}


def tail_sigmas(support: dict[str, Any] | None) -> float | None:
    """The declared tail width in sigmas of a frozen support range (None: the tails are not declared)."""
    return (support or {}).get("tail_sigmas")


def _positions(support: dict[str, Any]) -> dict[tuple[str, int], str]:
    out = {}
    for dim in support["dims"]:
        for slot in dim["positions"]:
            tensor, index = _AXIS.match(slot).groups()
            out[(tensor, int(index))] = dim["dim"]
    return out


def _values(dim: dict[str, Any]) -> tuple[int, int]:
    step = dim["multiple"]
    return math.ceil(dim["min"] / step) * step, dim["max"] // step * step


def outside(support: dict[str, Any], shape: str) -> str | None:
    """Why ``shape`` is not inside the range (None when it is)."""
    where, seen = _positions(support), {}
    groups = shape_groups(shape)
    for tensor, sizes in groups.items():
        for index, size in enumerate(sizes):
            name = where.get((tensor, index))
            if name is None:
                return f"position {tensor}[{index}] is set by no dimension"
            if seen.setdefault(name, size) != size:
                return f"dimension {name} is {seen[name]} and {size}"
    if set(where) - {(t, i) for t, s in groups.items() for i in range(len(s))}:
        return "the range names positions the shape does not have"
    for dim in support["dims"]:
        size = seen.get(dim["dim"])
        if size is not None and not (dim["min"] <= size <= dim["max"] and size % dim["multiple"] == 0):
            return f"{dim['dim']}={size} is outside [{dim['min']}, {dim['max']}] multiple of {dim['multiple']}"
    return None


def shape_text(support: dict[str, Any], sizes: dict[str, int], like: str) -> str:
    """The shape string of ``like``'s layout (``[a,b]`` or ``x:[a,b],w:[b,c]``) with the dims' sizes."""
    where, parts = _positions(support), []
    for tensor, old in shape_groups(like).items():
        dims = ",".join(str(sizes[where[(tensor, i)]]) for i in range(len(old)))
        parts.append(f"[{dims}]" if tensor == "shape" and like.lstrip().startswith("[") else f"{tensor}:[{dims}]")
    return ",".join(parts)


def draw(support: dict[str, Any], like: str, seed: int, count: int, avoid: set[str]) -> list[str]:
    """``count`` shapes inside the range (log-uniform sizes, at most MAX_ELEMENTS elements, none in
    ``avoid``), drawn with ``seed``; fewer when the range holds fewer."""
    rng, out = random.Random(seed), []
    for _ in range(200 * count):
        if len(out) == count:
            break
        sizes = {}
        for dim in support["dims"]:
            low, high = _values(dim)
            value = math.exp(rng.uniform(math.log(low), math.log(high + 1)))
            sizes[dim["dim"]] = max(low, min(high, int(value) // dim["multiple"] * dim["multiple"]))
        shape = shape_text(support, sizes, like)
        elements = sum(math.prod(s) for s in shape_groups(shape).values())
        if elements <= MAX_ELEMENTS and shape not in avoid and shape not in out:
            out.append(shape)
    return out
