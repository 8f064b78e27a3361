"""Reading msprof CSV tables (op_summary, task_time): pure functions over text and DataFrames.

The profiler's CSVs drift between CANN versions and locales, so every header goes through one
normalisation before any lookup (DESIGN §6):

- the text is strict UTF-8; a leading BOM and CRLF line ends are tolerated;
- each header name is NFKC-folded (full-width ``（us）`` becomes ``(us)``), trimmed, inner
  whitespace collapsed, and a space before ``(`` dropped;
- three alias families map onto one canonical name: ``Op Name`` (``Name``), ``Task Duration(us)``
  (``Duration(us)``) and ``Device_id`` (``Device Id``, ``Device ID``); the match ignores case,
  spaces and underscores;
- two columns that normalise to the same name are refused (never "first one wins").

Cells: ``N/A`` and empty cells are *missing* (NaN / ``None``), never 0. msprof pads some cells with
a trailing tab so that spreadsheets keep them as text; surrounding whitespace is therefore trimmed
before a cell is compared or converted. ``Op Name`` is then compared *exactly* (case and every
inner character); :func:`select_target_row` is the single row equal to a name (zero or several rows
are a :class:`ContractError`; never the longest row, never a fuzzy match). Which rows of a name make
one launch (a PyPTO launch is three rows) is :mod:`profiler.launches`; discovery and quick mode too.

Sharded output (``op_summary_[<stem>_]slice_<N>[_<timestamp>].csv``) is merged in slice order; every
slice carries the same header and the slice numbers must be contiguous (a gap names the lost shard).

Speed: a caller that needs only some columns passes them in ``columns`` and pandas materialises
only those (a 1,000,000-row, 120 MB op_summary: about 1.3 s of CPU to select the target row). With a column subset the C
parser cannot see *extra* trailing fields of a ragged row; short rows give missing cells.
"""

from __future__ import annotations

import csv
import io
import math
import re
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..contract import protocol
from ..errors import ContractError

OP_NAME = protocol.OP_NAME_COLUMN            # "Op Name"
DURATION = protocol.TIMING_COLUMN            # "Task Duration(us)"
DEVICE = "Device_id"
TASK_TYPE = "Task Type"


class _Pandas:
    """pandas, imported on first use: only the profiler tables need it, so a command that reads
    none (every cpu run, ``--help``) starts without its ~0.2 s import. A missing pandas is still
    the import guard's ``env_error`` (``errors.install_import_guard`` covers lazy imports)."""

    module = None

    def __getattr__(self, name: str):
        if _Pandas.module is None:
            import pandas
            _Pandas.module = pandas
        return getattr(_Pandas.module, name)


pd = _Pandas()   # ``pd.read_csv``... as with ``import pandas as pd``; launches.py shares it
KERNEL_NAME = "kernel_name"
KERNEL_TYPE = "kernel_type"
TASK_TIME = "task_time(us)"
MISSING_TOKENS = ("N/A", "")
DISCOVERY_HEADER = ("count", "rows_per_launch", "task_type", "streams", "total_duration_us", "exact_op_name")

_ALIASES = {
    "opname": OP_NAME, "name": OP_NAME,
    "taskduration(us)": DURATION, "duration(us)": DURATION,
    "deviceid": DEVICE,
}


def normalize_header(name: str) -> str:
    """The canonical spelling of one header cell (NFKC, trimmed, aliases resolved)."""
    text = unicodedata.normalize("NFKC", name).replace("\ufeff", "").strip()
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r" \(", "(", text)
    key = re.sub(r"[\s_]", "", text).casefold()
    return _ALIASES.get(key, text)


def decode(data: bytes, source: str) -> str:
    """Strict UTF-8 text of a CSV file; a leading BOM is dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ContractError(source, f"byte {exc.start}", "CSV is not valid UTF-8",
                            "re-export the profiler output; do not edit it by hand") from None


def _split_header(text: str, source: str) -> tuple[list[str], str]:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        raise ContractError(source, "-", "CSV contains NUL bytes", "re-export the profiler output")
    end = text.find("\n")
    first = text if end < 0 else text[:end]
    if not first.strip("\r\n\t "):
        raise ContractError(source, "header", "CSV is empty or has a blank header line",
                            "pass the op_summary CSV written by msprof")
    try:
        raw = next(csv.reader([first.rstrip("\r")]))
    except csv.Error as exc:
        raise ContractError(source, "header", f"unreadable header: {exc}", "re-export the CSV") from None
    return raw, text


def header(text: str, source: str) -> list[str]:
    """The normalised header of a CSV text; blank or duplicate names are refused."""
    raw, _ = _split_header(text, source)
    names = [normalize_header(cell) for cell in raw]
    seen: dict[str, int] = {}
    for position, name in enumerate(names):
        if not name and position == len(names) - 1 and position > 0:
            raise ContractError(source, f"column {position + 1}", "blank last header name (a trailing comma: "
                                "the way msOpProf writes OpBasicInfo.csv / PipeUtilization.csv, not an msprof "
                                "op_summary or task_time table)", "read msOpProf CSVs with scripts/profiler_inspect.py;"
                                " Stage 5's timing tables come from msprof")
        if not name:
            raise ContractError(source, f"column {position + 1}", "blank header name",
                                "re-export the CSV; every column needs a name")
        if name in seen:
            raise ContractError(source, name, f"duplicate column (positions {seen[name] + 1} and "
                                f"{position + 1}, raw {raw[seen[name]]!r} and {raw[position]!r})",
                                "keep one column of each name; never guess which one is real")
        seen[name] = position
    return names


def read_table(text: str, source: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Parse one CSV text into a frame of strings with canonical headers; missing cells are NaN.

    ``columns`` (canonical names) restricts what is materialised; each must exist, else a
    ContractError naming the column. The frame keeps the file's row order.
    """
    names = header(text, source)
    body = text[1:] if text.startswith("\ufeff") else text
    usecols = None
    if columns is not None:
        absent = [c for c in columns if c not in names]
        if absent:
            raise ContractError(source, absent[0], f"required column missing (header has {len(names)} "
                                "columns)", "use the op_summary of an --aic-metrics run; never a renamed file")
        usecols = sorted({names.index(c) for c in columns})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)   # ragged rows lose data
            frame = pd.read_csv(io.BytesIO(body.encode("utf-8")), encoding="utf-8", header=0, names=names,
                                usecols=usecols, dtype=str, keep_default_na=False,
                                na_values=list(MISSING_TOKENS), index_col=False, engine="c",
                                skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError, csv.Error) as exc:
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ContractError(source, "-", f"malformed CSV: {detail}", "re-export the profiler output") from None
    return frame[list(columns)] if columns is not None else frame


def stripped(series: pd.Series) -> pd.Series:
    """Cells with surrounding whitespace removed; padded ``N/A`` and blank cells become NaN.

    Profiler columns repeat few distinct values (op names, task types), so the strip runs once per
    distinct value (``pd.factorize``) instead of once per row.
    """
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    cleaned = [value.strip() if isinstance(value, str) else value for value in uniques]
    table = np.array([None if v in MISSING_TOKENS else v for v in cleaned] + [None], dtype=object)
    return pd.Series(table[codes], index=series.index, dtype=object)


def numeric(series: pd.Series, source: str, column: str) -> pd.Series:
    """A column as floats (missing stays NaN); text that is not a number is a ContractError."""
    values = pd.to_numeric(series, errors="coerce")
    suspect = values.isna() & series.notna()
    if suspect.any():
        text = stripped(series[suspect])
        bad = text.notna()
        if bad.any():
            position = int(np.flatnonzero(suspect.to_numpy())[int(np.flatnonzero(bad.to_numpy())[0])])
            raise ContractError(source, column, f"data row {position + 1} is not a number: "
                                f"{text[bad].iloc[0]!r}", "re-export the profiler output")
    return values.astype(float)


def _slice_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(prefix)}_(?:(?P<stem>.*?)_)?slice_(?P<n>\d+)(?:_(?P<stamp>\d+))?\.csv$")


def table_files(names: Iterable[str], prefix: str, source: str) -> list[str]:
    """The file names of the one ``<prefix>`` table of a profiler output folder, in merge order.

    Either exactly one plain ``<prefix>_*.csv`` or the complete slice set of one stem:
    ``<prefix>_[<stem>_]slice_<N>[_<timestamp>].csv`` (the timestamp may differ between slices, a
    device prefix is part of the stem). Slices are numbered from 0 (or 1) without a gap; a missing
    slice is named. None, several plain files or mixed stems are a ContractError.
    """
    pattern, plain_re = _slice_pattern(prefix), re.compile(rf"^{re.escape(prefix)}_.*\.csv$")
    slices: dict[str, dict[int, list[str]]] = {}
    plain: list[str] = []
    for name in sorted(names):
        match = pattern.match(name)
        if match:
            slices.setdefault(match["stem"] or "", {}).setdefault(int(match["n"]), []).append(name)
        elif plain_re.match(name):
            plain.append(name)
    if len(plain) + len(slices) != 1:
        found = plain + [f"{prefix}_{s + '_' if s else ''}slice_N" for s in sorted(slices)]
        raise ContractError(source, f"{prefix}_*.csv", f"expected exactly one {prefix} table, found "
                            f"{len(found)}: {found[:4]}", "profile exactly one run into each output folder")
    if plain:
        return plain
    (stem, numbered), = slices.items()
    label = f"{prefix}_{stem + '_' if stem else ''}slice_N"
    doubled = [n for n, files in numbered.items() if len(files) > 1]
    if doubled:
        raise ContractError(source, label, f"slice {doubled[0]} exists {len(numbered[doubled[0]])} times "
                            f"{numbered[doubled[0]]}", "profile exactly one run into each output folder")
    order = sorted(numbered)
    start = 0 if order[0] == 0 else 1
    missing = sorted(set(range(start, order[-1] + 1)) - set(order))
    if missing:
        raise ContractError(source, label, f"slice {missing[0]} is missing (have {order}): slice numbers are "
                            "not contiguous", "a shard is missing; re-run the profiler")
    return [numbered[n][0] for n in order]


def merge_slices(texts: Sequence[str], sources: Sequence[str]) -> str:
    """One CSV text from shard texts (slice order): the first header, then every data line."""
    if not texts:
        raise ContractError("-", "op_summary", "no slices to merge", "pass at least one CSV")
    first = header(texts[0], sources[0])
    parts: list[str] = []
    for text, source in zip(texts, sources):
        if header(text, source) != first:
            raise ContractError(source, "header", f"slice header differs from {sources[0]}",
                                "all slices of one table must share the header")
        _, body = _split_header(text, source)
        if parts:
            body = body.partition("\n")[2]
        if body and not body.endswith("\n"):
            body += "\n"
        parts.append(body)
    return "".join(parts)


def read_op_summary(text: str, source: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """An op_summary frame; ``Op Name`` and ``Task Duration(us)`` are always required."""
    needed = None if columns is None else list(dict.fromkeys([OP_NAME, DURATION, *columns]))
    frame = read_table(text, source, needed)
    for column in (OP_NAME, DURATION):
        if column not in frame.columns:
            raise ContractError(source, column, "required column missing",
                                "use the op_summary of an msprof --aic-metrics run")
    return frame


@dataclass(frozen=True)
class TargetRow:
    """The single exact target row of one op_summary table."""

    op_name: str
    duration_us: float
    row: int                                    # 1-based data row (after merging slices)
    values: dict[str, float | str | None]       # every column: number, text, or None (missing)

    @property
    def task_type(self) -> str | None:
        value = self.values.get(TASK_TYPE)
        return value if isinstance(value, str) else None


def cell(value: Any) -> float | str | None:
    """One cell as a number, a trimmed text, or None (missing: ``N/A`` or empty)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if text in MISSING_TOKENS:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _exact_rows(names: pd.Series, wanted: str) -> list[int]:
    return [int(i) for i in (stripped(names) == wanted).to_numpy().nonzero()[0]]


def _hint(names: pd.Series) -> str:
    present = list(dict.fromkeys(stripped(names).dropna().head(10000)))
    more = f" (+{len(present) - 3} more)" if len(present) > 3 else ""
    return f"names present: {present[:3]}{more}" if present else "the table has no named rows"


def positive_duration(value: Any, source: str, column: str, row: int) -> float:
    """A duration cell as a finite float > 0, else a ContractError (missing is never 0)."""
    number = cell(value)
    if not isinstance(number, float) or not math.isfinite(number) or number <= 0:
        raise ContractError(source, column, f"data row {row}: duration {number!r} is not a finite "
                            "number > 0", "an invalid sample is never repaired; re-run the profile")
    return number


def select_target_row(frame: pd.DataFrame, op_name: str, source: str) -> TargetRow:
    """The one row whose ``Op Name`` equals ``op_name`` exactly, with a valid duration."""
    hits = _exact_rows(frame[OP_NAME], op_name)
    if not hits:
        raise ContractError(source, OP_NAME, f"no row equals {op_name!r} exactly ({len(frame)} rows; "
                            f"{_hint(frame[OP_NAME])})",
                            "freeze the exact name listed by collect_perf.py list-op-names")
    if len(hits) > 1:
        rows = [h + 1 for h in hits[:5]]
        raise ContractError(source, OP_NAME, f"{len(hits)} rows equal {op_name!r} (data rows {rows}): "
                            "the runner launched the target more than once",
                            "make each profiled process launch the target exactly once")
    index = hits[0]
    record = frame.iloc[index]
    values = {str(column): cell(record[column]) for column in frame.columns}
    duration = positive_duration(record[DURATION], source, DURATION, index + 1)
    return TargetRow(op_name=op_name, duration_us=duration, row=index + 1, values=values)


def discovery_tsv(rows: Sequence[dict[str, Any]]) -> str:
    """The discovery table as TSV text (:data:`DISCOVERY_HEADER`; ``count`` is launches).

    ``streams`` lists the compute streams, then ``control`` ones (``46 control 42,43``); a key a
    backend does not report (cpu: rows per launch, streams) is ``N/A``, never a guess.
    """
    lines = ["\t".join(DISCOVERY_HEADER)]
    for row in rows:
        total = "N/A" if row["total_duration_us"] is None else f"{row['total_duration_us']:.3f}"
        per = row.get("rows_per_launch")
        streams = ",".join(row.get("compute_streams") or []) or "N/A"
        if row.get("control_streams"):
            streams += " control " + ",".join(row["control_streams"])
        lines.append(f"{row['count']}\t{'N/A' if per is None else per}\t{row['task_type']}\t{streams}\t{total}\t"
                     f"{row['exact_op_name']}")
    return "\n".join(lines) + "\n"
