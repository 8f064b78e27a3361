"""The signature of a scaffolded pypto-sim operator (pure): named inputs, dimensions, dtypes, cases, gate.

``--shape 'x:[M,K],w:[K,N]' --dims M=64,K=512,N=128 --dtype x:float16,w:float16 --reduction K``:

- **Dimensions.** An axis is a name (its P0 size from ``--dims``) or a number. Every axis with the same
  name is one dimension; with numbers, every axis of the same size is one (name the axes when two
  different dimensions happen to share a size).
- **Small cases.** Besides the P0 case, three non-P0 cases (the Stage 4 gate ``test_count`` needs 4
  tests) change one dimension, the first input's axis 0, to 16, 24 (a tail of the 16-row tile) and 40
  in every input where it occurs, so each is valid for every input (``[M,K]x[K,N]`` keeps K and N).
- **Dtypes.** One for every input, or one per name (``x:bfloat16,idx:int32``): ``float32``, ``float16``,
  ``bfloat16``, ``int32``, ``int64``. An integer input is an index: its values are drawn in
  ``[0, first input's axis 0)``. The first input is the skeleton's operand: 2-D and floating.
- **Precision gate** (docs/spec-format.md, "The precision gate"): per floating dtype
  ``atol = atol0 * sqrt(K)`` and ``rtol = rtol0`` from the element-wise base (:data:`BASE_GATE`), ``K``
  the longest reduction one output element accumulates over the cases (``--reduction``: a dimension
  or a number; 1 for element-wise).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..contract import manifest
from ..errors import ContractError

BASE_GATE = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}
INDEX_DTYPES = ("int32", "int64")
SMALL_SIZES = (16, 24, 40)
TOOL = "new_operator.py"
_GROUP = re.compile(r"(?:(\w+):)?\[([^\]]*)\]")


@dataclass(frozen=True)
class Input:
    name: str
    axes: tuple[str, ...]   # dimension tokens: a name, or a size as text
    dtype: str


@dataclass(frozen=True)
class Signature:
    inputs: tuple[Input, ...]
    sizes: dict[str, int]   # dimension token -> P0 size
    reduction: str           # a dimension token, or a number as text

    @property
    def varied(self) -> str:
        """The dimension the small cases change: the first input's axis 0."""
        return self.inputs[0].axes[0]

    def shape(self, sizes: dict[str, int]) -> str:
        return ",".join(f"{i.name}:[{','.join(str(sizes[a]) for a in i.axes)}]" for i in self.inputs)

    def dtype(self) -> str:
        kinds = {i.dtype for i in self.inputs}
        return kinds.pop() if len(kinds) == 1 else ",".join(f"{i.name}:{i.dtype}" for i in self.inputs)

    def cases(self, case_id: str) -> dict[str, str]:
        """Case id -> canonical shape: the P0 case, then the small cases (module docstring)."""
        return {case_id: self.shape(self.sizes),
                **{f"{case_id}_{self.varied_label}{n}": self.shape({**self.sizes, self.varied: n}) for n in SMALL_SIZES}}

    @property
    def varied_label(self) -> str:
        return "rows" if self.varied.isdigit() else self.varied.lower()

    def reduction_length(self) -> int:
        """The longest reduction over the cases (the small cases change only :attr:`varied`)."""
        if self.reduction.isdigit():
            return int(self.reduction)
        return max([self.sizes[self.reduction], *(SMALL_SIZES if self.reduction == self.varied else ())])

    def float_kinds(self) -> list[str]:
        return sorted({i.dtype for i in self.inputs if i.dtype in BASE_GATE})

    def dim_name(self, token: str) -> str:
        """The work model's identifier of a dimension (``d256`` for a number)."""
        return f"d{token}" if token.isdigit() else token

    def positions(self, token: str) -> list[str]:
        return [f"{i.name}[{n}]" for i in self.inputs for n, a in enumerate(i.axes) if a == token]


def gate(dtype: str, reduction_length: int) -> tuple[float, float]:
    """(atol, rtol) of ``dtype`` for outputs that accumulate ``reduction_length`` terms (docs/spec-format.md)."""
    atol, rtol = BASE_GATE[dtype]
    return float(f"{atol * math.sqrt(reduction_length):.3g}"), rtol


def _dims(text: str) -> dict[str, int]:
    out = {}
    for piece in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = piece.partition("=")
        if not re.fullmatch(r"[A-Za-z_]\w*", name.strip()) or not value.strip().isdigit() or int(value) <= 0:
            raise ContractError(TOOL, "--dims", f"{piece!r} is not NAME=SIZE", "e.g. --dims M=64,K=512,N=128")
        out[name.strip()] = int(value)
    return out


def _dtypes(text: str, names: list[str]) -> dict[str, str]:
    try:
        canon = manifest.canonical_dtype(text)
    except ValueError as exc:
        raise ContractError(TOOL, "--dtype", str(exc), "e.g. --dtype bfloat16 or x:float16,idx:int32") from None
    if ":" not in canon:
        return dict.fromkeys(names, canon)
    given = dict(p.split(":") for p in canon.split(","))
    if sorted(given) != sorted(names):
        raise ContractError(TOOL, "--dtype", f"names {sorted(given)} are not the inputs {names}",
                            "give one dtype, or one per input name")
    return given


def parse(shape: str, dims: str, dtype: str, reduction: str) -> Signature:
    """The signature the flags describe; ContractError naming the flag on any inconsistency."""
    sizes, groups = _dims(dims or ""), _GROUP.findall(shape)
    if not groups or _GROUP.sub("", shape).strip(" ,") or len({n or "x" for n, _ in groups}) != len(groups):
        raise ContractError(TOOL, "--shape", f"{shape!r} is not named groups NAME:[axis,...]",
                            "e.g. --shape 'x:[M,K],w:[K,N]' --dims M=64,K=512,N=128")
    names = [n or "x" for n, _ in groups]
    kinds = _dtypes(dtype, names)
    inputs = []
    for name, body in groups:
        axes = tuple(a.strip() for a in body.split(","))
        for axis in axes:
            if not (axis.isdigit() and int(axis) > 0) and axis not in sizes:
                raise ContractError(TOOL, "--shape", f"axis {axis!r} of {name or 'x'} is neither a size nor a name "
                                    "given in --dims", "e.g. --dims M=64,K=512")
        sizes.update({a: int(a) for a in axes if a.isdigit()})
        inputs.append(Input(name or "x", axes, kinds[name or "x"]))
    unknown = sorted({i.dtype for i in inputs} - set(BASE_GATE) - set(INDEX_DTYPES))
    if unknown:
        raise ContractError(TOOL, "--dtype", f"{unknown} not supported by the scaffold",
                            f"use {sorted(BASE_GATE)} (inputs) or {list(INDEX_DTYPES)} (indices)")
    first = inputs[0]
    if len(first.axes) != 2 or first.dtype not in BASE_GATE:
        raise ContractError(TOOL, "--shape", f"the first input {first.name} must be 2-D and floating (the skeleton "
                            "computes 2 * it)", "put the 2-D floating operand first, e.g. --shape 'x:[64,256],idx:[8]'")
    if not (reduction.isdigit() and int(reduction) > 0) and reduction not in sizes:
        raise ContractError(TOOL, "--reduction", f"{reduction!r} is neither a positive number nor a dimension",
                            "give the summed dimension (e.g. K) or 1 for element-wise")
    return Signature(tuple(inputs), sizes, reduction)


def gate_lines(sig: Signature) -> list[str]:
    """SPEC.md's gate lines, one per floating dtype of the inputs (the skeleton's output takes the first's)."""
    k = sig.reduction_length()
    return [f"- {kind}: `|y - ref| <= {gate(kind, k)[0]:g} + {gate(kind, k)[1]:g} * |ref|` for at least 99.9 % "
            "of elements." for kind in sig.float_kinds()]
