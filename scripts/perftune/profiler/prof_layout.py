"""Where the Ascend tools put their tables: PROF trees of every CANN layout, torch_npu and msOpProf folders.

Layouts read (each table is found by its name, never by a fixed depth):

- CANN >= 7 (msprof): ``PROF_*/mindstudio_profiler_output/{op_summary,task_time}_*.csv``;
- CANN <= 6.3 (msprof): ``PROF_*/device_<n>/summary/{op_summary,task_time}_*.csv``;
- torch_npu: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv`` (or the folder itself);
- msOpProf (``msprof op``): ``OPPROF_*/`` with ``OpBasicInfo.csv``, ``PipeUtilization.csv``, ... at
  any depth (``device<N>/<kernel>/<index>/`` when several launches were profiled).

A table can be sliced (:func:`msprof_csv.table_files`). Exactly one folder may hold a given msprof
table of one run; several are a ContractError (one run per output folder).

Files by content (:func:`kind_of_header`, one rule): a CSV is read for what its header says, whatever
its name: a plain ``op_summary.csv`` (tile-ai/tilelang-ascend commits one) or ``a003-op_summary.csv`` is
an op_summary table. Kinds, first match, on the normalised header (:func:`msprof_csv.normalize_header`):
``instr_exe`` (``instr``, ``addr``, ``pipe``, ``cycles``), ``code_exe`` (``code``, ``call_count``,
``cycles``), ``PipeUtilization`` (``block_id`` and a ``*_ratio`` column), ``kernel_details``
(``Accelerator Core``), ``task_time`` (``kernel_name``, ``task_time(us)``), ``OpBasicInfo`` (``Op Name``,
``Task Duration(us)``, ``Block Dim``, no ``Task ID``), ``op_summary`` (``Op Name``, ``Task Duration(us)`` and
one of ``Task ID``, ``Stream ID``, ``Task Type``); a header of no kind falls back to the name
(:func:`kind_of_name`, so that the reader names what is wrong). A single file is read as its kind; in a
folder an msprof table is found by name first and, when no name finds it, by content
(:func:`content_kinds`); the other kinds are the union of both.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..errors import ContractError
from . import msprof_csv

MSPROF_TABLES = ("op_summary", "task_time")
OUTPUT_DIRS = ("mindstudio_profiler_output", "summary")   # CANN >= 7, CANN <= 6.3 (device_<n>/summary)
KERNEL_DETAILS = "kernel_details.csv"
MSOPPROF_FILES = ("OpBasicInfo.csv", "PipeUtilization.csv")
MSOPPROF_GLOBS = ("*_instr_exe.csv", "*_code_exe.csv")   # msOpProf simulator per-core hotspot tables
MSOPPROF_KINDS = ("OpBasicInfo", "PipeUtilization", "instr_exe", "code_exe")
MAX_HEADER_BYTES = 64 << 10
MAX_CONTENT_FILES = 500


def table_folders(root: Path, prefix: str) -> list[Path]:
    """The msprof output folders under ``root`` (a PROF_* folder, its parent, or the output folder
    itself) that hold a ``<prefix>_*.csv`` table."""
    candidates = [root]
    for pattern in ("PROF_*/mindstudio_profiler_output", "PROF_*/device_*/summary", "mindstudio_profiler_output",
                    "device_*/summary"):
        candidates += sorted(p for p in root.glob(pattern) if p.is_dir())
    return [f for f in dict.fromkeys(candidates) if any(f.glob(f"{prefix}_*.csv"))]


def table_files(root: Path, prefix: str) -> list[Path]:
    """The files (slices in merge order) of the one ``<prefix>`` table under ``root``."""
    holding = table_folders(root, prefix)
    if len(holding) != 1:
        raise ContractError(root, f"PROF_*/{{{','.join(OUTPUT_DIRS)}}}/{prefix}_*.csv",
                            f"{len(holding)} profiler outputs hold a {prefix} table (need exactly 1)",
                            "the run produced no table or several; see collection.log")
    names = [p.name for p in holding[0].glob(f"{prefix}_*.csv")]
    return [holding[0] / n for n in msprof_csv.table_files(names, prefix, str(holding[0]))]


def kernel_details_files(root: Path) -> list[Path]:
    """Every torch_npu ``kernel_details.csv`` under ``root`` (or ``root`` itself), sorted."""
    if root.is_file():
        return [root] if kind_of_file(root) == "kernel_details" else []
    return sorted(root.rglob(KERNEL_DETAILS))


def msopprof_files(root: Path) -> list[Path]:
    """Every msOpProf table under ``root`` found by its name (``OpBasicInfo.csv``, ``PipeUtilization.csv``,
    ``*_instr_exe.csv``, ``*_code_exe.csv``), sorted; ``root`` itself when it is a file of such a kind."""
    if root.is_file():
        return [root] if kind_of_file(root) in MSOPPROF_KINDS else []
    return sorted({p for name in (*MSOPPROF_FILES, *MSOPPROF_GLOBS) for p in root.rglob(name)})


def kind_of_header(names: list[str]) -> str | None:
    """The table kind of a normalised CSV header (module docstring), or None."""
    have = set(names)
    if {"instr", "addr", "pipe", "cycles"} <= have:
        return "instr_exe"
    if {"code", "call_count", "cycles"} <= have:
        return "code_exe"
    if "block_id" in have and any(n.endswith("_ratio") for n in names):
        return "PipeUtilization"
    if "Accelerator Core" in have:
        return "kernel_details"
    if {msprof_csv.KERNEL_NAME, msprof_csv.TASK_TIME} <= have:
        return "task_time"
    if {msprof_csv.OP_NAME, msprof_csv.DURATION} <= have:
        if "Block Dim" in have and "Task ID" not in have:
            return "OpBasicInfo"
        if have & {"Task ID", "Stream ID", msprof_csv.TASK_TYPE}:
            return "op_summary"
    return None


def kind_of_name(name: str) -> str | None:
    """The kind a file name gives (``op_summary_*.csv``, ``OpBasicInfo.csv``, ...): the fallback of
    :func:`kind_of_file` for a file whose header names no kind, so that its reader says what is wrong."""
    for prefix in MSPROF_TABLES:
        if name.startswith(prefix + "_") and name.endswith(".csv"):
            return prefix
    if name == KERNEL_DETAILS:
        return "kernel_details"
    stem = name.removesuffix(".csv")
    if name in MSOPPROF_FILES:
        return stem
    return next((k for k in ("instr_exe", "code_exe") if stem.endswith("_" + k)), None)


def kind_of_file(path: Path) -> str | None:
    """:func:`kind_of_header` of a ``.csv`` file's first line, else :func:`kind_of_name` (None: no kind)."""
    if path.suffix.lower() != ".csv" or not path.is_file():
        return None
    with path.open("rb") as handle:
        head = handle.read(MAX_HEADER_BYTES)
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace").rstrip("\r")
    found = None
    if first.strip():
        try:
            names = [msprof_csv.normalize_header(c) for c in next(csv.reader([first]))]
            found = kind_of_header([n for n in names if n])
        except csv.Error:
            found = None
    return found or kind_of_name(path.name)


def content_kinds(root: Path) -> dict[str, list[Path]]:
    """The ``.csv`` files under the folder ``root`` grouped by :func:`kind_of_file` (sorted; at most
    ``MAX_CONTENT_FILES`` files are looked at, in path order)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.csv"))[:MAX_CONTENT_FILES]:
        kind = kind_of_file(path)
        if kind:
            found.setdefault(kind, []).append(path)
    return found
