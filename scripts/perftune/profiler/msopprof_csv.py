"""msOpProf (``msprof op``) CSVs: ``OpBasicInfo.csv`` and ``PipeUtilization.csv``, read as the tool writes them.

msOpProf ends every line with a comma (the header too: ``...,Current Freq,Rated Freq,``) and writes
``NA`` for a missing cell. The trailing empty column is dropped only when it is empty on every
line; ``NA``, ``N/A`` and empty cells are missing (never 0). Headers are NFKC-normalised like
the msprof tables (:func:`msprof_csv.normalize_header`, so ``Op Name`` / ``Task Duration(us)`` /
``Device_id`` aliases resolve).

What it adds to P8 evidence: :func:`op_basic_info` gives the kernel's msOpProf duration, block
dims and frequencies (a second, per-kernel source next to op_summary); :func:`pipe_utilization`
gives, per ``*_ratio`` column, the per-block values with min / mean / max (one row per
``block_id`` / ``sub_block_id``). Which file is which is decided by its header
(:func:`prof_layout.kind_of_file`).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from ..errors import ContractError
from . import msprof_csv

MISSING = ("NA", "N/A", "")
BLOCK_TIMES = ("aic_time(us)", "aiv_time(us)")
OP_SUMMARY_NAME = {"aic_time(us)": "aicore_time(us)"}


def read_rows(text: str, source: str) -> tuple[list[str], list[dict[str, str | None]]]:
    """``(header, rows)``: the trailing all-empty column dropped, missing cells None."""
    body = text.lstrip("\ufeff")
    try:
        lines = [row for row in csv.reader(io.StringIO(body, newline="")) if any(c.strip() for c in row)]
    except csv.Error as exc:
        raise ContractError(source, "-", f"malformed CSV: {exc}", "re-run msprof op") from None
    if not lines:
        raise ContractError(source, "header", "empty CSV", "re-run msprof op")
    if all(row and not row[-1].strip() for row in lines):
        lines = [row[:-1] for row in lines]
    names = [msprof_csv.normalize_header(c) for c in lines[0]]
    if "" in names or len(set(names)) != len(names):
        raise ContractError(source, "header", "blank or duplicate column name", "re-run msprof op")
    rows = []
    for number, row in enumerate(lines[1:], 2):
        if len(row) != len(names):
            raise ContractError(source, f"line {number}", f"{len(row)} cells for {len(names)} columns",
                                "re-run msprof op")
        rows.append({n: (None if c.strip() in MISSING else c.strip()) for n, c in zip(names, row)})
    return names, rows


def _number(value: str | None, source: str, column: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ContractError(source, column, f"{value!r} is not a number", "re-run msprof op") from None
    return number if math.isfinite(number) else None


def op_basic_info(text: str, source: str) -> list[dict[str, Any]]:
    """Every kernel row of ``OpBasicInfo.csv``: name, type, duration (us), block dims, device, frequencies."""
    names, rows = read_rows(text, source)
    for column in (msprof_csv.OP_NAME, msprof_csv.DURATION):
        if column not in names:
            raise ContractError(source, column, "required column missing", "pass msOpProf's OpBasicInfo.csv")
    fields = {"Op Type": "op_type", "Block Dim": "block_dim", "Mix Block Dim": "mix_block_dim",
              msprof_csv.DEVICE: "device_id", "Current Freq": "current_freq_mhz", "Rated Freq": "rated_freq_mhz"}
    out = []
    for row in rows:
        item: dict[str, Any] = {"op_name": row[msprof_csv.OP_NAME],
                                "duration_us": _number(row[msprof_csv.DURATION], source, msprof_csv.DURATION)}
        for column, key in fields.items():
            if column in names:
                item[key] = row[column] if key == "op_type" else _number(row[column], source, column)
        out.append(item)
    return out


def pipe_utilization(text: str, source: str) -> dict[str, dict[str, Any]]:
    """``{column: {values, min, mean, max, blocks}}`` over the blocks of ``PipeUtilization.csv``: every
    ``*_ratio`` column and the per-block core times ``aic_time(us)`` / ``aiv_time(us)`` (the spread between
    blocks, :func:`occupancy.msopprof_spread`); a block row whose cell is ``NA`` (the other side) is left out."""
    names, rows = read_rows(text, source)
    ratios = [n for n in names if n.endswith("_ratio")]
    if not ratios:
        raise ContractError(source, "*_ratio", "no ratio column", "pass msOpProf's PipeUtilization.csv")
    out = {}
    for column in [*ratios, *(n for n in BLOCK_TIMES if n in names)]:
        values = [v for v in (_number(r[column], source, column) for r in rows) if v is not None]
        if values:
            out[column] = {"values": values, "blocks": len(values), "min": min(values),
                           "mean": round(sum(values) / len(values), 6), "max": max(values)}
    return out


def block_rows(text: str, source: str) -> list[dict[str, float]]:
    """Every block row of ``PipeUtilization.csv`` as ``column -> number`` (``NA`` cells left out), in the
    op_summary sense: the cube core time ``aic_time(us)`` named ``aicore_time(us)``, and each
    ``<side>_<pipe>_ratio`` recomputed as ``<side>_<pipe>_time(us) / <side>_time(us)`` (the block's share of
    its own core time). msOpProf writes the ratio over the whole task duration instead (a real TileLang
    sigmoid block: ``aiv_vec_time`` 23.551516 of ``aiv_time`` 28.755152 µs is written 0.122664 =
    23.551516 / 192.84 µs, the OpBasicInfo duration), which no bound threshold can read."""
    _names, rows = read_rows(text, source)
    out = []
    for row in rows:
        numbers = {c: _number(v, source, c) for c, v in row.items() if c not in ("block_id", "sub_block_id")}
        present = {c: v for c, v in numbers.items() if v is not None}
        for column in [c for c in present if c.endswith("_ratio")]:
            side = column.split("_", 1)[0]
            pipe_time, core = present.get(column.removesuffix("_ratio") + "_time(us)"), present.get(f"{side}_time(us)")
            if pipe_time is not None and core:
                present[column] = round(pipe_time / core, 6)
        out.append({OP_SUMMARY_NAME.get(c, c): v for c, v in present.items()})
    return out
