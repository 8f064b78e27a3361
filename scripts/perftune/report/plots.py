"""Figures of a compare (matplotlib, Agg backend, PNG). Each function takes plain data and an
output path, writes the figure atomically and returns the path; nothing here computes a statistic.

- :func:`speedup_ci` — per-case speed-up with its CI bar and the per-case noise band 1±δ.
- :func:`sample_distributions` — raw samples per case, two arms side by side (box + points).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from .. import fsio  # noqa: E402

VERDICT_COLORS = {"faster": "#1a9641", "slower": "#d7191c", "equivalent": "#2b83ba",
                  "inconclusive": "#fdae61", "insufficient": "#7f7f7f"}
ARM_COLORS = ("#7f7f7f", "#2b83ba")


def _save(fig, out_path: str | Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return fsio.write_bytes(out_path, buffer.getvalue())


def speedup_ci(cases: Sequence[str], points: Sequence[float | None],
               cis: Sequence[Sequence[float] | None], deltas: Sequence[float], verdicts: Sequence[str],
               out_path: str | Path, title: str = "Speed-up per case (baseline / final)") -> Path:
    """Dot = point speed-up, bar = CI, grey box = noise band [1/(1+δ), 1+δ]; colour = verdict."""
    height = max(2.4, 0.55 * len(cases) + 1.4)
    fig, ax = plt.subplots(figsize=(8.0, height))
    for y, (point, ci, delta, verdict) in enumerate(zip(points, cis, deltas, verdicts)):
        ax.add_patch(plt.Rectangle((1 / (1 + delta), y - 0.35), (1 + delta) - 1 / (1 + delta), 0.7,
                                   color="#d9d9d9", zorder=0, label="noise band 1±δ" if y == 0 else None))
        color = VERDICT_COLORS.get(verdict, "black")
        if point is None:
            ax.annotate(f"n/a ({verdict})", (1.0, y), ha="center", va="center", fontsize=8)
            continue
        if ci is not None:
            # a degenerate CI [r, r] (deterministic backend) may sit an ulp off the point: never negative
            ax.errorbar(point, y, xerr=[[max(0.0, point - ci[0])], [max(0.0, ci[1] - point)]], fmt="none", ecolor=color,
                        capsize=4, lw=1.6)
        ax.plot(point, y, "o", color=color, ms=7, zorder=3)
        ax.annotate(f"{point:.3f}  {verdict}", (point, y), xytext=(0, 9), textcoords="offset points",
                    ha="center", fontsize=8, color=color)
    ax.axvline(1.0, color="black", lw=0.8, ls="--", label="no change (1.0)")
    ax.set_yticks(range(len(cases)), list(cases))
    ax.set_ylim(-0.7, len(cases) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("speed-up = baseline time / final time  (>1 is faster)")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, out_path)


def sample_distributions(cases: Sequence[str], baseline: Sequence[Sequence[float]],
                         final: Sequence[Sequence[float]], out_path: str | Path,
                         labels: tuple[str, str] = ("baseline", "final"),
                         title: str = "Raw samples per case", unit: str = "µs") -> Path:
    """One panel per case: box plot and every sample of both arms, in ``unit``."""
    columns = min(4, max(1, len(cases)))
    rows = math.ceil(len(cases) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 3.0 * rows), squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= len(cases):
            ax.set_visible(False)
            continue
        arms = [list(baseline[index]), list(final[index])]
        ax.boxplot(arms, widths=0.5, showfliers=False)
        for position, (values, color) in enumerate(zip(arms, ARM_COLORS), 1):
            offsets = [position + 0.12 * ((k % 5) - 2) / 2 for k in range(len(values))]
            ax.plot(offsets, values, "o", ms=3.5, color=color, alpha=0.8)
        ax.set_xticks([1, 2], list(labels))
        ax.set_title(cases[index], fontsize=9)
        ax.set_ylabel(f"duration ({unit})")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out_path)
