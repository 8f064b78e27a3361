"""Figures of the final report: candidate scores with the tie set, and the roofline per case.

Each function takes plain data and an output path, writes a PNG (Agg) and returns the path.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from matplotlib import ticker

from .plots import _save, plt


def candidate_scores(versions: Sequence[str], scores: Sequence[float | None],
                     cis: Sequence[Sequence[float] | None], in_tie: Sequence[bool], chosen: str | None,
                     delta: float, out_path: str | Path, title: str,
                     reasons: Sequence[str | None] | None = None, metric: str = "mean_case_speedup") -> Path:
    """Suite score per version on a log axis (a ratio to the frozen baseline) with its CI: tie-set
    members filled, the chosen one starred, superseded and ineligible versions hollow and labelled
    (``reasons``: each version's ineligible reason or None). The grey box is the band
    [1/(1+δ), 1+δ] around 1.0 (within noise of the baseline); the dotted line is the tie margin
    top score/(1+δ) (a version is tied when the lower CI bound of score/top reaches 1/(1+δ))."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.1 * len(versions) + 2.5), 4.6))
    ax.set_yscale("log")
    reasons = list(reasons or [None] * len(versions))
    low, high = 1 / (1 + delta), 1 + delta
    ax.axhspan(low, high, color="#d9d9d9", zorder=0,
               label=f"band [1/(1+δ), 1+δ] = [{low:.3f}, {high:.3f}], δ = {delta:.4g}: within noise of the baseline")
    values = [low, high]
    for x, (version, score, ci, tie, reason) in enumerate(zip(versions, scores, cis, in_tie, reasons)):
        if score is None:
            ax.annotate(f"not ranked\n({reason or 'no score'})", (x, 1.0), ha="center", fontsize=7, rotation=90)
            continue
        values += [score] + list(ci or [])
        state = "superseded" if (reason or "").startswith("superseded") else "ineligible" if reason else None
        face = "white" if state else ("#2b83ba" if tie else "#bdbdbd")
        marker = "*" if version == chosen else "o"
        ax.plot(x, score, marker, ms=14 if marker == "*" else 8, mfc=face, mec="black", zorder=3)
        if ci is not None:
            ax.errorbar(x, score, yerr=[[max(0.0, score - ci[0])], [max(0.0, ci[1] - score)]], fmt="none",
                        ecolor="black", capsize=4, zorder=4)  # a degenerate CI may sit an ulp off the score
        label = f"{score:.3f}" + (" chosen" if version == chosen else "") + (f"\n{state}" if state else "")
        ax.annotate(label, (x, score), xytext=(9, 3), textcoords="offset points", va="bottom", fontsize=8,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    top = max((s for s, r in zip(scores, reasons) if s is not None and not r), default=None)
    if top is not None:
        ax.axhline(top / (1 + delta), color="#2b83ba", lw=1, ls=":",
                   label=f"tie margin: top score / (1+δ) = {top / (1 + delta):.3f}")
        values.append(top / (1 + delta))
    ax.axhline(1.0, color="black", lw=0.8, ls="--", label="baseline (1.0)")
    ax.set_ylim(min(values) / 1.15, max(values) * 1.15)
    plain = ticker.FuncFormatter(lambda v, _pos: f"{v:.3g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.set_xticks(range(len(versions)), list(versions))
    ax.set_xlim(-0.6, len(versions) - 0.1)
    what = "geometric mean" if metric == "geomean_speedup" else "arithmetic mean"
    ax.set_ylabel(f"suite score = {what} of case speed-ups\nvs the baseline (log scale)")
    ax.set_title(title)
    ax.plot([], [], "o", mfc="#2b83ba", mec="black", label="tie set (score/top CI reaches 1/(1+δ))")
    ax.plot([], [], "o", mfc="#bdbdbd", mec="black", label="eligible, outside the tie set")
    ax.plot([], [], "o", mfc="white", mec="black", label="superseded or ineligible (not ranked)")
    ax.plot([], [], "*", ms=11, mfc="#bdbdbd", mec="black", label="chosen")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=7, ncol=2)
    ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    return _save(fig, out_path)


def roofline(cases: Sequence[str], intensity: Sequence[float], attained_gops: Sequence[float | None],
             peak_gops: float, peak_gbs: float, out_path: str | Path, title: str,
             sources: tuple[str, str] | None = None) -> Path:
    """Log-log roofline: min(peak compute, intensity × bandwidth) and each case's attained rate;
    ``sources`` names where the compute and the bandwidth peak come from (legend)."""
    import numpy as np
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    lo = min([i for i in intensity if i > 0] + [0.01]) / 4
    hi = max(list(intensity) + [peak_gops / peak_gbs]) * 4
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    compute, memory = sources or ("source not recorded", "source not recorded")
    ax.loglog(x, np.minimum(peak_gops, x * peak_gbs), color="black", lw=1.5,
              label="\n".join(textwrap.wrap(f"roof: compute {peak_gops:.1f} Gop/s, work-weighted for the first "
                                             f"case ({compute});", 95)
                               + textwrap.wrap(f"bandwidth {peak_gbs:.1f} GB/s ({memory})", 95)))
    for name, ai, rate in zip(cases, intensity, attained_gops):
        if rate is None or ai <= 0:
            continue
        ax.loglog(ai, rate, "o", ms=7)
        ax.annotate(name, (ai, rate), xytext=(5, -10), textcoords="offset points", fontsize=8)
    ax.set_xlabel("arithmetic intensity (ops / necessary byte)")
    ax.set_ylabel("attained rate (Gop/s)")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8)  # below: never over a case
    ax.grid(which="both", alpha=0.25)
    fig.tight_layout()
    return _save(fig, out_path)
