"""Figures of the scale benchmark (matplotlib, Agg): time vs files, time vs floor, memory vs frame."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

JOBS = ("floor", "compare", "select", "evidence")
LABELS = {"floor": "pandas.read_csv floor", "compare": "compare_perf (load_formal)",
          "select": "select_best (candidates.rank)", "evidence": "stage5_check evidence (load_round x2)"}


def _label(row: dict) -> str:
    big = f"+1 table of {row['big_rows']:,}" if row["big_rows"] else ""
    return f"{row['cases']}c x {row['repeats']}r\n{row['rows']:,} rows{big and chr(10) + big}"


def time_vs_files(result: dict, path: Path) -> Path:
    rows = [r for r in result["scenarios"] if r["rows"] == result["fit"]["rows_per_file"]
            and (r["big_rows"] is None or len(result["scenarios"]) < 3)]
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, job in enumerate(JOBS):
        xs, colour = [r["files"] for r in rows], f"C{k}"
        ax.plot(xs, [r["jobs"][job]["cpu_s"] for r in rows], "o", color=colour)
        fit = result["fit"]["jobs"][job]
        line = [fit["intercept_s"] + fit["ms_per_file"] / 1000 * x for x in sorted(xs)]
        ax.plot(sorted(xs), line, "-", color=colour, label=f"{LABELS[job]}: {fit['ms_per_file']:.2f} ms/file")
    ax.set_xlabel("op_summary CSV files read (both rounds, 7 per repeat)")
    ax.set_ylabel("CPU time of the job (s)")
    ax.set_title(f"Scale: CPU time vs number of files ({result['fit']['rows_per_file']} rows per file), linear fits")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _bars(result: dict, key: str, target: float, ylabel: str, title: str, path: Path, rows: list[dict]) -> Path:
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(rows) + 2), 5))
    width = 0.25
    for k, job in enumerate(JOBS[1:]):
        ax.bar([i + (k - 1) * width for i in range(len(rows))], [r["jobs"][job][key] for r in rows], width,
               label=LABELS[job])
    ax.axhline(target, color="red", linestyle="--", label=f"target {target}x")
    ax.set_xticks(range(len(rows)), [_label(r) for r in rows], fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scale_figures(result: dict, out: Path) -> list[Path]:
    rows = result["scenarios"]
    big = [r for r in rows if r["largest_frame_bytes"] >= result["summary"]["memory_judged_on_frames_at_least_bytes"]]
    paths = [time_vs_files(result, out / "scale_time_vs_files.png"),
             _bars(result, "cpu_vs_floor", result["targets"]["time_vs_floor"], "CPU time / pandas.read_csv floor",
                   "Scale: job time relative to reading the same CSVs with pandas", out / "scale_time_vs_floor.png",
                   rows)]
    if big:
        paths.append(_bars(result, "memory_vs_largest_frame", result["targets"]["memory_vs_largest_frame"],
                           "peak RSS increase / largest parsed frame", "Scale: peak memory / largest pandas frame\n"
                           "(scenarios whose largest frame is >= 10 MiB)", out / "scale_memory_vs_frame.png", big))
    return paths
