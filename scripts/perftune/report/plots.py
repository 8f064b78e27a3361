"""Figures of a compare (matplotlib, Agg backend, PNG). Each function takes plain data and an
output path, writes the figure atomically and returns the path; nothing here computes a statistic.

- :func:`speedup_ci` — per-case speed-up on a log axis with its CI bar, n per arm, target cases
  marked and the band [1/(1+δ), 1+δ] labelled with its value.
- :func:`sample_distributions` — raw samples per case, two arms side by side (box + points),
  y axis from zero, n per arm.
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


LAST_FIGURE: list = []  # the most recent figure before it is closed (tests inspect its matplotlib objects)


def _save(fig, out_path: str | Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    LAST_FIGURE[:] = [fig]
    plt.close(fig)
    return fsio.write_bytes(out_path, buffer.getvalue())


def speedup_ci(cases: Sequence[str], points: Sequence[float | None],
               cis: Sequence[Sequence[float] | None], deltas: Sequence[float], verdicts: Sequence[str],
               out_path: str | Path, title: str = "Speed-up per case (baseline / final)",
               ns: Sequence[tuple[int, int]] | None = None, targets: Sequence[bool] | None = None,
               ci_levels: Sequence[float | None] | None = None) -> Path:
    """Log axis (ratios): hollow dot = point, bar = CI (drawn above the dot), grey box = the band
    [1/(1+δ), 1+δ] with its value; colour = verdict; tick label = case, n per arm, target mark."""
    height = max(2.4, 0.6 * len(cases) + 1.6)
    fig, ax = plt.subplots(figsize=(8.5, height))
    ax.set_xscale("log")
    values = [v for p, c in zip(points, cis) for v in ([p] if p else []) + (list(c) if c else [])]
    bands = sorted(set(deltas))
    for y, (point, ci, delta, verdict) in enumerate(zip(points, cis, deltas, verdicts)):
        label = (f"noise band [1/(1+δ), 1+δ], δ = {delta:.4g} (within noise)" if y == deltas.index(delta) else None)
        ax.add_patch(plt.Rectangle((1 / (1 + delta), y - 0.35), (1 + delta) - 1 / (1 + delta), 0.7,
                                   color="#d9d9d9", zorder=0, label=label))
        color = VERDICT_COLORS.get(verdict, "black")
        if point is None:
            ax.annotate(f"n/a ({verdict})", (1.0, y), ha="center", va="center", fontsize=8)
            continue
        ax.plot(point, y, "o", mfc="white", mec=color, ms=7, zorder=3)
        if ci is not None:
            ax.errorbar(point, y, xerr=[[point - ci[0]], [ci[1] - point]], fmt="none", ecolor=color,
                        capsize=4, lw=1.6, zorder=4)
        shown = f"{point:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else f"{point:.3g}"
        ax.annotate(f"{shown} {verdict}", (point, y), xytext=(0, -13), textcoords="offset points",
                    ha="center", fontsize=8, color=color)
    ax.axvline(1.0, color="black", lw=0.8, ls="--", label="no change (1.0)")
    labels = [f"{'★ ' if targets and targets[i] else ''}{case}" + (f"\nn={ns[i][0]}/{ns[i][1]}" if ns else "")
              for i, case in enumerate(cases)]
    ax.set_yticks(range(len(cases)), labels, fontsize=8)
    ax.set_ylim(-0.7, len(cases) - 0.3)
    ax.invert_yaxis()
    if values:
        low = min(values + [1 / (1 + max(bands))]) / 1.3
        high = max(values + [1 + max(bands)]) * 1.3
        ax.set_xlim(low, high)
    level = next((c for c in (ci_levels or []) if c), None)
    ax.set_xlabel("speed-up = baseline time / final time, log scale (>1 is faster)"
                  + (f"; CI level per case {level:.4g}" if level else "") + ("; ★ target case" if targets else ""))
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=8, ncol=2)
    ax.grid(axis="x", alpha=0.3, which="both")
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
        ax.set_xticks([1, 2], [f"{label}\nn={len(values)}" for label, values in zip(labels, arms)])
        ax.set_title(cases[index], fontsize=9)
        ax.set_ylabel(f"duration ({unit})")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out_path)
