"""The frozen precision gate: tolerances parsed from SPEC.md at freeze, kept in the manifest.

SPEC.md section (docs/spec-format.md): a heading containing "precision", then one line per dtype
in either form::

    - float32: `|y - ref| <= 1e-6 + 1e-5 * |ref|` for at least 99.9 % of elements.
    - float16: atol=1e-4, rtol=1e-3, min_matched=0.999

and optionally ``Compared with `<reference function>` `` naming the precision oracle (a function
of ``<name>.py`` in the op dir; default ``<op>_golden_cpu``). The manifest then holds::

    "precision_gate": {"source": "SPEC.md", "dtypes": {"float32": {"atol", "rtol", "min_matched"}},
                       "reference": {"function", "path", "sha256", "size_bytes"} | null}

Pure except :func:`from_spec` (reads the reference file's identity). The gate is the same
inequality everywhere: ``|actual - ref| <= atol + rtol * |ref|`` element-wise, and the fraction of
matched elements must be ``>= min_matched``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from .. import fsio
from ..errors import ContractError

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_PERCENT = re.compile(rf"at\s+least\s+{_NUM}\s*%")
_KEYED = {key: re.compile(rf"\b{key}\s*[=:]\s*{_NUM}") for key in ("atol", "rtol", "min_matched")}
_REFERENCE = re.compile(r"[Cc]ompared\s+(?:with|to|against)\s+`([A-Za-z_][A-Za-z0-9_]*)`")


def _section(text: str) -> list[str]:
    lines, inside, out = text.splitlines(), False, []
    for line in lines:
        if line.lstrip().startswith("#"):
            inside = "precision" in line.lower()
            continue
        if inside:
            out.append(line)
    return out


_EXPRESSION = re.compile(rf"{_NUM}\s*\+\s*{_NUM}\s*\*\s*\|")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.]*")


def _dtype_before(text: str, canonical_dtype: Callable[[str], str]) -> str | None:
    for word in reversed(_WORD.findall(text)):
        try:
            return canonical_dtype(word)
        except ValueError:
            continue
    return None


def _line_gates(line: str, canonical_dtype: Callable[[str], str], percent: float | None) -> list[tuple[str, dict]]:
    """Every ``<dtype> ... atol + rtol * |ref|`` (or ``<dtype>: atol=, rtol=``) on one line."""
    out, last = [], 0
    for match in _EXPRESSION.finditer(line):
        dtype = _dtype_before(line[last:match.start()], canonical_dtype)
        last = match.end()
        if dtype:
            out.append((dtype, {"atol": float(match.group(1)), "rtol": float(match.group(2)),
                                "min_matched": percent if percent is not None else 1.0}))
    head = re.match(r"\s*[-*]?\s*`?([A-Za-z0-9_.]+)`?\s*:\s*(.*)$", line)
    keyed = {k: m.group(1) for k, rx in _KEYED.items() if (m := rx.search(line))}
    if not out and head and {"atol", "rtol"} <= set(keyed):
        dtype = _dtype_before(head.group(1), canonical_dtype)
        if dtype:
            out.append((dtype, {"atol": float(keyed["atol"]), "rtol": float(keyed["rtol"]),
                                "min_matched": float(keyed.get("min_matched", 1.0))}))
    return out


def parse_gate_lines(text: str, canonical_dtype: Callable[[str], str], source: str = "SPEC.md"
                     ) -> tuple[dict[str, dict[str, float]], str | None]:
    """Per-dtype ``{atol, rtol, min_matched}`` and the named reference function (pure).

    ``canonical_dtype`` is the manifest's dtype canonicaliser (passed in: the manifest imports us).
    A percentage ("at least 99.9 %") applies to the expressions of its line, else of the section.
    """
    lines = _section(text)
    section_pct = next((m.group(1) for line in lines if (m := _PERCENT.search(line))), None)
    gates: dict[str, dict[str, float]] = {}
    reference = None
    for line in lines:
        if reference is None and (found := _REFERENCE.search(line)):
            reference = found.group(1)
        pct = (m.group(1) if (m := _PERCENT.search(line)) else section_pct)
        for dtype, gate in _line_gates(line, canonical_dtype, round(float(pct) / 100, 12) if pct else None):
            if dtype in gates and gates[dtype] != gate:
                raise ContractError(source, f"precision gate {dtype}", "declared twice with different values",
                                    "keep one line per dtype")
            if not 0 < gate["min_matched"] <= 1:
                raise ContractError(source, f"precision gate {dtype}", f"matched fraction {gate['min_matched']} "
                                    "is not in (0, 1]", "write e.g. 'for at least 99.9 % of elements'")
            gates[dtype] = gate
    return gates, reference


def from_spec(text: str, op_dir: Path, canonical_dtype: Callable[[str], str], source: str = "SPEC.md"
              ) -> dict[str, Any] | None:
    """The manifest's ``precision_gate`` (None when SPEC.md declares no parseable gate)."""
    gates, reference = parse_gate_lines(text, canonical_dtype, source)
    if not gates:
        return None
    name = reference or f"{Path(op_dir).resolve().name}_golden_cpu"
    path = Path(op_dir) / f"{name}.py"
    ref = {"function": name, **fsio.file_record(path, op_dir)} if path.is_file() else None
    return {"source": Path(source).name, "dtypes": gates, "reference": ref}


def gate_for(frozen: dict[str, Any] | None, dtype: str) -> dict[str, float] | None:
    """The frozen thresholds of ``dtype`` (None when the gate or the dtype is absent)."""
    return (frozen or {}).get("dtypes", {}).get(dtype)


def matched(actual, expected, gate: dict[str, float]) -> dict[str, float]:
    """``matched_ratio`` and ``max_abs_error`` of ``actual`` against the float64 ``expected``."""
    import numpy
    ref = numpy.asarray(expected, dtype=numpy.float64)
    got = numpy.asarray(actual, dtype=numpy.float64)
    if got.shape != ref.shape:
        return {"matched_ratio": 0.0, "max_abs_error": float("inf"), "shape_mismatch": True}
    err = numpy.abs(got - ref)
    ok = err <= gate["atol"] + gate["rtol"] * numpy.abs(ref)
    ok &= numpy.isfinite(got) | ~numpy.isfinite(ref)
    return {"matched_ratio": float(ok.mean()) if ok.size else 1.0,
            "max_abs_error": float(numpy.nanmax(err)) if err.size else 0.0}


def meets(figures: dict[str, float], gate: dict[str, float]) -> bool:
    return not figures.get("shape_mismatch") and figures["matched_ratio"] >= gate["min_matched"]
