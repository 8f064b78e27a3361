"""Figures of the decision benchmark: A/A false-positive rate and power curves per rule."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"ours": "ours (bootstrap CI vs 1 % band)", "pyperf": "pyperf compare_to (t-test)",
         "upstream": "upstream (trimmed mean, 1 % band)"}


def false_positive(result: dict, path: Path) -> Path:
    aa = sorted((r for r in result["results"] if r["effect"] == 0.0), key=lambda r: (r["noise"], r["repeats"]))
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(aa) + 2), 5))
    width = 0.27
    for k, rule in enumerate(NAMES):
        ax.bar([i + (k - 1) * width for i in range(len(aa))], [100 * r["rates"][rule]["any"] for r in aa], width,
               label=NAMES[rule])
    ax.axhline(100 * result["targets"]["aa_false_positive_max"], color="red", linestyle="--", label="target 5 %")
    ax.set_xticks(range(len(aa)), [f"n={r['repeats']}\nnoise {r['noise']:.0%}" for r in aa], fontsize=8)
    ax.set_ylabel("A/A false-positive rate (% of comparisons\ncalled faster or slower)")
    ax.set_title(f"A/A (no true change): false 'faster'/'slower' calls, {aa[0]['sims']} simulations per bar")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def power(result: dict, path: Path) -> Path:
    rows = result["results"]
    noises = sorted({r["noise"] for r in rows})
    repeats = sorted({r["repeats"] for r in rows})
    fig, axes = plt.subplots(len(noises), len(NAMES), figsize=(4.2 * len(NAMES), 3.2 * len(noises)),
                             sharex=True, sharey=True, squeeze=False)
    for i, noise in enumerate(noises):
        for j, rule in enumerate(NAMES):
            ax = axes[i][j]
            for n in repeats:
                line = sorted((r for r in rows if r["noise"] == noise and r["repeats"] == n), key=lambda r: r["effect"])
                ax.plot([100 * r["effect"] for r in line], [100 * r["rates"][rule]["faster"] for r in line],
                        "o-", label=f"{n} repeats")
            ax.axhline(100 * result["targets"]["power_min"], color="red", linestyle=":", linewidth=1)
            ax.set_title(f"{NAMES[rule]}\nnoise {noise:.0%}", fontsize=9)
            ax.grid(alpha=0.3)
            if i == len(noises) - 1:
                ax.set_xlabel("true speed-up (%)")
            if j == 0:
                ax.set_ylabel("called 'faster' (%)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Power: share of comparisons called 'faster' vs the true speed-up (dotted: 90 %)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def decision_figures(result: dict, out: Path) -> list[Path]:
    return [false_positive(result, out / "decisions_false_positive.png"), power(result, out / "decisions_power.png")]
