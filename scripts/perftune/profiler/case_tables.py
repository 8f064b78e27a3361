"""Profiler columns of one case of a round, each value with the file, column and rows it came from.

The msprof backend archives the 7 op_summary tables of every repeat
(``repeat_NNN/op_summary_<Metric>.csv``). :func:`case_columns` reads the target's one launch (the frozen
``Op Name``, its compute row: :mod:`profiler.launches`) of every table of every repeat and gives, per metric group and
column, the median over repeats with its citation ``{metric, column, files, rows, values}``. A
missing table is a :class:`ContractError` naming the metric group. ``N/A`` cells are left out;
a column with no number in any repeat is absent.

:data:`PIPE_RATIO_COLUMNS` maps the documented pipe families to their ``*_ratio`` columns
(``aic_*`` cube core, ``aiv_*`` vector core); :func:`pipe_ratios` takes, per family, the larger
of the present columns, as the peer's bound analyzer does (docs/msprof-backend.md).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import ContractError
from . import launches, msprof_csv

PIPE_RATIO_COLUMNS = {
    "VECTOR": ("aiv_vec_ratio",), "CUBE": ("aic_mac_ratio", "aic_cube_ratio"),
    "MTE1": ("aic_mte1_ratio", "aiv_mte1_ratio"), "MTE2": ("aiv_mte2_ratio", "aic_mte2_ratio"),
    "MTE3": ("aiv_mte3_ratio", "aic_mte3_ratio"), "SCALAR": ("aiv_scalar_ratio", "aic_scalar_ratio"),
    "FIXPIPE": ("aic_fixpipe_ratio",),
}
BUSY_RATIO = 0.01  # a pipe with a ratio above 1 % must appear in the instruction timeline


def repeat_dirs(case_dir: Path) -> list[Path]:
    """The folders holding the measured code's tables: ``repeat_NNN`` or, in a paired round, its
    ``candidate/`` arm (the code the round's ``executable_sha256`` names)."""
    repeats = sorted(p for p in case_dir.glob("repeat_[0-9][0-9][0-9]") if p.is_dir())
    return [r / "candidate" if (r / "candidate").is_dir() else r for r in repeats]


def case_columns(case_dir: Path, op_name: str, op_dir: Path,
                 metrics: tuple[str, ...] = protocol.METRIC_GROUPS) -> dict[str, dict[str, dict[str, Any]]]:
    """``{metric: {column: citation with median value}}`` over the repeats of one case folder."""
    repeats = repeat_dirs(case_dir)
    if not repeats:
        raise ContractError(case_dir, "repeat_NNN", "no repeat folders", "use a complete formal round")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for metric in metrics:
        columns: dict[str, dict[str, Any]] = {}
        for repeat in repeats:
            path = repeat / f"op_summary_{metric}.csv"
            if not path.is_file():
                raise ContractError(path, f"metric group {metric}", "is missing (its op_summary table was not archived)",
                                    "re-collect the round; every repeat needs all 7 metric groups")
            text = msprof_csv.decode(path.read_bytes(), str(path))
            row = launches.select_target(msprof_csv.read_op_summary(text, str(path)), op_name, str(path))
            rel = fsio.display_path(path, op_dir)
            for column, value in row.values.items():
                if isinstance(value, float):
                    cite = columns.setdefault(column, {"metric": metric, "column": column, "files": [], "rows": [],
                                                       "values": []})
                    cite["files"].append(rel)
                    cite["rows"].append(row.row)
                    cite["values"].append(value)
        for cite in columns.values():
            cite["value"] = float(f"{statistics.median(cite['values']):.6g}")
            cite["aggregation"] = f"median over {len(cite['values'])} repeats"
        out[metric] = columns
    return out


def pipe_ratios(columns: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """``{family: citation}``: the largest present ratio column of each family (PipeUtilization)."""
    pipe = columns.get(protocol.CANONICAL_METRIC, {})
    out = {}
    for family, names in PIPE_RATIO_COLUMNS.items():
        present = [pipe[n] for n in names if n in pipe]
        if present:
            out[family] = max(present, key=lambda c: c["value"])
    return out


def expected_pipes(columns: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Families the PipeUtilization table says were busy (ratio above :data:`BUSY_RATIO`)."""
    return sorted(f for f, c in pipe_ratios(columns).items() if c["value"] > BUSY_RATIO)
