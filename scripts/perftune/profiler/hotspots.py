"""Code-level hotspots: where the cycles of a launch went, per instruction, source line or tile op.

Pure over texts / parsed JSON. Sources, each read as the tool writes it:

- msOpProf simulator ``core<N>.<vec|cube>core<M>/core<N>.<...>_instr_exe.csv``
  (:func:`instr_exe`): ``instr,addr,pipe,call_count,cycles,running_time(us),detail``, one row per
  instruction address (a real file: tile-ai/tilelang-ascend foreach_norm, 215 rows on one vector core);
  ``*_code_exe.csv`` (:func:`code_exe`): ``code,call_count,cycles,running_time(us)``, one row per source
  line (``file:line``), written empty when the kernel was built without debug line information (the same
  real capture: header only). The top rows by cycles, and the cycles per pipe.
- pypto-sim ``_simulate.pipe.swim.json`` (:func:`tile_ops`): every ``pipeLogs[pipe][]`` span is one tile
  op (``tileOp`` text ``<magic> <OP> <operands> ...``); cycles (``execEnd - execStart``) summed per op name
  over every core, with the count, the pipes and the op magics. pypto 0.2.0 records no source line in the
  simulator files (``tileOp`` names the op and its tiles only), so ``source_line`` is None.

:func:`top` orders by cycles (ties by name) and keeps ``n``; ``source`` names the file in errors (the
caller records where the file is, relative to its root).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from typing import Any

from ..errors import ContractError

TOP_N = 5
INSTR_COLUMNS = ("instr", "addr", "pipe", "call_count", "cycles", "running_time(us)")
CODE_COLUMNS = ("code", "call_count", "cycles", "running_time(us)")
_TILE_OP = re.compile(r"^(?P<magic>\d+) (?P<op>[A-Z][A-Z0-9_]*)\b")


def _rows(text: str, source: str, required: Sequence[str]) -> list[dict[str, str]]:
    body = text.lstrip("\ufeff")
    try:
        reader = csv.DictReader(io.StringIO(body, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
        rows = list(reader)
    except csv.Error as exc:
        raise ContractError(source, "-", f"malformed CSV: {exc}", "re-run msprof op simulator") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise ContractError(source, missing[0], "required column missing",
                            "pass msOpProf's *_instr_exe.csv / *_code_exe.csv")
    return [{k.strip(): (v or "").strip() for k, v in r.items() if k is not None} for r in rows]


def _number(value: str, source: str, column: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ContractError(source, column, f"{value!r} is not a number", "re-run msprof op simulator") from None
    if not math.isfinite(number) or number < 0:
        raise ContractError(source, column, f"{value!r} is not finite and >= 0", "re-run msprof op simulator")
    return number


def top(items: list[dict[str, Any]], n: int = TOP_N) -> list[dict[str, Any]]:
    """The ``n`` items with the most cycles (ties by name, then address)."""
    return sorted(items, key=lambda i: (-i["cycles"], str(i.get("name")), str(i.get("addr", ""))))[:n]


def instr_exe(text: str, source: str, n: int = TOP_N) -> dict[str, Any]:
    """``{kind, rows, total_cycles, by_pipe, top}`` of one ``*_instr_exe.csv``."""
    items = []
    for row in _rows(text, source, INSTR_COLUMNS):
        items.append({"name": row["instr"], "addr": row["addr"], "pipe": row["pipe"],
                      "calls": int(_number(row["call_count"], source, "call_count")),
                      "cycles": int(_number(row["cycles"], source, "cycles")),
                      "running_time_us": _number(row["running_time(us)"], source, "running_time(us)")})
    total = sum(i["cycles"] for i in items)
    by_pipe: dict[str, int] = {}
    for item in items:
        by_pipe[item["pipe"]] = by_pipe.get(item["pipe"], 0) + item["cycles"]
    shares = {p: {"cycles": c, "share": round(c / total, 6) if total else None}
              for p, c in sorted(by_pipe.items(), key=lambda kv: (-kv[1], kv[0]))}
    return {"kind": "instr_exe", "rows": len(items), "total_cycles": total, "by_pipe": shares,
            "top": [{**i, "share": round(i["cycles"] / total, 6) if total else None} for i in top(items, n)]}


def code_exe(text: str, source: str, n: int = TOP_N) -> dict[str, Any]:
    """``{kind, rows, total_cycles, top, note}`` of one ``*_code_exe.csv`` (source lines)."""
    items = [{"name": row["code"], "calls": int(_number(row["call_count"], source, "call_count")),
              "cycles": int(_number(row["cycles"], source, "cycles")),
              "running_time_us": _number(row["running_time(us)"], source, "running_time(us)")}
             for row in _rows(text, source, CODE_COLUMNS)]
    note = None if items else "no source line recorded (the kernel was built without debug line information)"
    return {"kind": "code_exe", "rows": len(items), "total_cycles": sum(i["cycles"] for i in items),
            "top": top(items, n), "note": note}


def tile_ops(pipe_swim: Any, source: str, n: int = TOP_N) -> dict[str, Any]:
    """Cycles per tile op of a simulated launch (module docstring)."""
    if not isinstance(pipe_swim, list):
        raise ContractError(source, "-", "not a list of cores", "archive the simulator file unchanged")
    ops: dict[str, dict[str, Any]] = {}
    for core in pipe_swim:
        for pipe, logs in ((core.get("pipeLogs") or {}) if isinstance(core, dict) else {}).items():
            for entry in logs if isinstance(logs, list) else ():
                match = _TILE_OP.match(str(entry.get("tileOp", ""))) if isinstance(entry, dict) else None
                start, end = (entry.get("execStart"), entry.get("execEnd")) if isinstance(entry, dict) else (None, None)
                if not match or not isinstance(start, int) or not isinstance(end, int) or end < start:
                    continue
                item = ops.setdefault(match["op"], {"name": match["op"], "cycles": 0, "count": 0, "pipes": set(),
                                                    "magics": set()})
                item["cycles"] += end - start
                item["count"] += 1
                item["pipes"].add(str(pipe))
                item["magics"].add(int(match["magic"]))
    total = sum(i["cycles"] for i in ops.values())
    items = [{**i, "pipes": sorted(i["pipes"]), "magics": sorted(i["magics"]), "source_line": None,
              "share": round(i["cycles"] / total, 6) if total else None} for i in ops.values()]
    return {"kind": "tile_ops", "ops": len(items), "total_cycles": total, "top": top(items, n),
            "note": "pypto 0.2.0 records no source line in the simulator files (tileOp names the op and its tiles)"}
