"""Figures of a search (issue 39): the objective over a two-parameter space as a heat map, over one
parameter as bars. Plain data in, one PNG (Agg) out; a point without an objective is a hatched cell."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .plots import _save, plt


def space(names: Sequence[str], values: Sequence[Sequence[Any]], points: Sequence[dict[str, Any]],
          best: int | None, out_path: str | Path, title: str) -> Path:
    """``points``: {values, objective, status, trial}; ``values``: each parameter's declared values."""
    if len(names) == 2:
        grid = np.full((len(values[1]), len(values[0])), np.nan)
        fig, ax = plt.subplots(figsize=(1.0 * len(values[0]) + 3, 0.7 * len(values[1]) + 2.5))
        for p in points:
            x, y = values[0].index(p["values"][names[0]]), values[1].index(p["values"][names[1]])
            if p.get("objective") is not None:
                grid[y, x] = p["objective"]
            text = f"{p['objective']:.3f}" if p.get("objective") is not None else p["status"].replace("_", "\n")
            ax.text(x, y, text + ("\nbest" if p["trial"] == best else ""), ha="center", va="center", fontsize=7)
        image = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
        fig.colorbar(image, ax=ax, label="objective (paired quick score vs the base)")
        ax.set_xticks(range(len(values[0])), [str(v) for v in values[0]], rotation=45)
        ax.set_yticks(range(len(values[1])), [str(v) for v in values[1]])
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
    else:
        labels = [", ".join(f"{n}={p['values'][n]}" for n in names) for p in points]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(points) + 2), 4.2))
        heights = [p.get("objective") or 0.0 for p in points]
        bars = ax.bar(range(len(points)), heights, color=["#2b83ba" if p["trial"] == best else "#bdbdbd"
                                                          for p in points])
        for bar, p in zip(bars, points):
            if p.get("objective") is None:
                bar.set_hatch("//")
                ax.annotate(p["status"], (bar.get_x() + bar.get_width() / 2, 0), rotation=90, fontsize=7,
                            ha="center", va="bottom")
        ax.axhline(1.0, color="black", lw=0.8, ls="--", label="the base (1.0)")
        ax.set_xticks(range(len(points)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("objective (paired quick score vs the base)")
        ax.legend(fontsize=7)
    ax.set_title(title)
    fig.tight_layout()
    return _save(fig, out_path)
