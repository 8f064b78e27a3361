"""Figures of the final report: candidate scores with the tie set, and the roofline per case.

Each function takes plain data and an output path, writes a PNG (Agg) and returns the path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .plots import _save, plt


def candidate_scores(versions: Sequence[str], scores: Sequence[float | None],
                     cis: Sequence[Sequence[float] | None], in_tie: Sequence[bool], chosen: str | None,
                     delta: float, out_path: str | Path, title: str) -> Path:
    """Bar per version (suite score = mean per-case speed-up vs the frozen baseline), CI whiskers,
    tie-set members hatched, the chosen version outlined, the band 1±δ around 1.0 shaded."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(versions) + 2), 4.2))
    ax.axhspan(1 / (1 + delta), 1 + delta, color="#d9d9d9", zorder=0, label="noise band around 1.0")
    for x, (version, score, ci, tie) in enumerate(zip(versions, scores, cis, in_tie)):
        if score is None:
            ax.annotate("not ranked", (x, 1.0), ha="center", fontsize=8, rotation=90)
            continue
        bar = ax.bar(x, score, color="#2b83ba" if tie else "#bdbdbd", hatch="//" if tie else None,
                     edgecolor="black" if version == chosen else "none", lw=2.2 if version == chosen else 0)
        if ci is not None:
            ax.errorbar(x, score, yerr=[[max(0.0, score - ci[0])], [max(0.0, ci[1] - score)]], fmt="none",
                        ecolor="black", capsize=4)   # a degenerate CI may sit an ulp off the score
        label = f"{score:.3f}" + (" (chosen)" if version == chosen else "")
        ax.annotate(label, (x, bar[0].get_height()), xytext=(0, 4), textcoords="offset points", ha="center",
                    fontsize=8)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(range(len(versions)), list(versions))
    ax.set_ylabel("suite score = mean per-case speed-up vs baseline")
    ax.set_title(title)
    ax.bar(0, 0, color="#2b83ba", hatch="//", label="tie set (not stably distinguishable from the top)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, out_path)


def roofline(cases: Sequence[str], intensity: Sequence[float], attained_gops: Sequence[float | None],
             peak_gops: float, peak_gbs: float, out_path: str | Path, title: str) -> Path:
    """Log-log roofline: min(peak compute, intensity × bandwidth) and each case's attained rate."""
    import numpy as np
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    lo = min([i for i in intensity if i > 0] + [0.01]) / 4
    hi = max(list(intensity) + [peak_gops / peak_gbs]) * 4
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(x, np.minimum(peak_gops, x * peak_gbs), color="black", lw=1.5,
              label=f"roof: {peak_gops:.1f} Gop/s, {peak_gbs:.1f} GB/s")
    for name, ai, rate in zip(cases, intensity, attained_gops):
        if rate is None or ai <= 0:
            continue
        ax.loglog(ai, rate, "o", ms=7)
        ax.annotate(name, (ai, rate), xytext=(5, -10), textcoords="offset points", fontsize=8)
    ax.set_xlabel("arithmetic intensity (ops / necessary byte)")
    ax.set_ylabel("attained rate (Gop/s)")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(which="both", alpha=0.25)
    return _save(fig, out_path)
