"""Where the Ascend tools put their tables: PROF trees of every CANN layout, torch_npu and msOpProf folders.

Layouts read (each table is found by its name, never by a fixed depth):

- CANN >= 7 (msprof): ``PROF_*/mindstudio_profiler_output/{op_summary,task_time}_*.csv``;
- CANN <= 6.3 (msprof): ``PROF_*/device_<n>/summary/{op_summary,task_time}_*.csv``;
- torch_npu: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv`` (or the folder itself);
- msOpProf (``msprof op``): ``OPPROF_*/`` with ``OpBasicInfo.csv``, ``PipeUtilization.csv``, ... at
  any depth (``device<N>/<kernel>/<index>/`` when several launches were profiled).

A table can be sliced (:func:`msprof_csv.table_files`). Exactly one folder may hold a given msprof
table of one run; several are a ContractError (one run per output folder).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ContractError
from . import msprof_csv

MSPROF_TABLES = ("op_summary", "task_time")
OUTPUT_DIRS = ("mindstudio_profiler_output", "summary")   # CANN >= 7, CANN <= 6.3 (device_<n>/summary)
KERNEL_DETAILS = "kernel_details.csv"
MSOPPROF_FILES = ("OpBasicInfo.csv", "PipeUtilization.csv")


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
        return [root] if root.name == KERNEL_DETAILS else []
    return sorted(root.rglob(KERNEL_DETAILS))


def msopprof_files(root: Path) -> list[Path]:
    """Every msOpProf ``OpBasicInfo.csv`` / ``PipeUtilization.csv`` under ``root``, sorted."""
    if root.is_file():
        return [root] if root.name in MSOPPROF_FILES else []
    return sorted(p for name in MSOPPROF_FILES for p in root.rglob(name))
