"""Profiler columns of one case of a round, each value with the file, column and rows it came from.

The msprof backend archives the 7 op_summary tables of every repeat
(``repeat_NNN/op_summary_<Metric>.csv``). :func:`case_columns` reads the target's one launch (the frozen
``Op Name``, its compute row: :mod:`profiler.launches`) of every table of every repeat and gives, per metric group and
column, the median over repeats with its citation ``{metric, column, files, rows, values}``. A
missing table is a :class:`ContractError` naming the metric group. ``N/A`` cells are left out;
a column with no number in any repeat is absent.

:data:`core_types.PIPE_COLUMNS` maps the documented pipe families to their ``*_ratio`` columns per
core type (``aic_*`` cube core, ``aiv_*`` vector core). :func:`pipe_ratios` reports the ratios of
ONE side, the primary core of :func:`core_types.primary_core` (the rule routing uses), each
citation naming its ``core``: on a MIX kernel a ratio of the nearly idle side (SCALAR 0.551 of a
cube side busy 4.45 of 300 µs) is never taken for the kernel's. Without a primary core a row
with only one side's ratios reports that side; with both sides and no time, nothing.
:func:`pipe_ratios_by_core` gives both sides; :func:`expected_pipes` (what an instruction timeline
must show) takes a family busy on any side that ran.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import ContractError
from . import core_types, launches, msprof_csv

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


def launch_rows(columns: dict[str, dict[str, dict[str, Any]]],
                metric: str = protocol.CANONICAL_METRIC) -> list[dict[str, float]]:
    """The target row of every repeat of ``metric``'s table as ``column -> number`` (repeat order): the
    launches :func:`profiler.diagnosis.diagnose` reads for the case."""
    table = columns.get(metric, {})
    files = sorted({f for cite in table.values() for f in cite["files"]})
    return [{column: cite["values"][cite["files"].index(f)] for column, cite in table.items() if f in cite["files"]}
            for f in files]


def _value(pipe: dict[str, dict[str, Any]], column: str) -> float | None:
    return pipe[column]["value"] if column in pipe else None


def primary_core(columns: dict[str, dict[str, dict[str, Any]]]) -> tuple[str | None, str]:
    """``(core, basis)`` of the case's PipeUtilization table (:func:`core_types.primary_core`)."""
    pipe = columns.get(protocol.CANONICAL_METRIC, {})
    times, cycles = core_types.values_of(lambda c: _value(pipe, c))
    return core_types.primary_core(times, cycles)


def pipe_ratios_by_core(columns: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{core: {family: citation}}``: the present ratio columns of each side (the first present per family)."""
    pipe = columns.get(protocol.CANONICAL_METRIC, {})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for core, families in core_types.PIPE_COLUMNS.items():
        for family, names in families.items():
            present = [pipe[n] for n in names if n in pipe]
            if present:
                out.setdefault(core, {})[family] = {**present[0], "core": core}
    return out


def pipe_ratios(columns: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """``{family: citation}`` of the primary core's side (module docstring)."""
    sides = pipe_ratios_by_core(columns)
    core, basis = primary_core(columns)
    if core is None and len(sides) == 1:
        core, basis = next(iter(sides)), "the only side with ratios"
    return {f: {**c, "primary_core_basis": basis} for f, c in sides.get(core, {}).items()} if core else {}


def expected_pipes(columns: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Families the PipeUtilization table says were busy (ratio above :data:`BUSY_RATIO`) on a side that ran."""
    pipe = columns.get(protocol.CANONICAL_METRIC, {})
    times, cycles = core_types.values_of(lambda c: _value(pipe, c))
    idle = {c for c in core_types.CORES if times[c] == 0 and not (cycles[c] or 0) > 0}
    return sorted({f for core, fams in pipe_ratios_by_core(columns).items() if core not in idle
                   for f, c in fams.items() if c["value"] > BUSY_RATIO})
