"""Figures of the real-backend verdict benchmarks (issue 23), drawn from their JSON results only.

``aa_figure``: false verdicts and false wins of unchanged code per protocol (``processes.json``);
``power_figure``: share of correct ``faster`` verdicts per variant and protocol (``power.json``);
``demo_figure``: each demo run's suite speed-up with its CI (``demo_runs.json``). Run as a script
to (re)draw every figure whose JSON is in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FIGURES = {"processes.json": "verdicts_aa.png", "power.json": "verdicts_power.png", "demo_runs.json": "demo_runs.png"}


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def aa_figure(result: dict, path: Path) -> Path:
    rows = [r for r in result["rows"] if r["delta"] == 0.01 and (r["ci"] == "two_level" or r["processes"] == 1)]
    labels = [f"{r['kind']}\n{r['processes']} × {r['repeats_per_process']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 0.75 * len(rows) + 2), 5))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [100 * (r["false_faster"] + r["false_slower"]) for r in rows], 0.4,
           label="false `faster`/`slower` per case")
    ax.bar([x + 0.2 for x in xs], [100 * r.get("false_accept", 0.0) for r in rows], 0.4,
           label="false win (SKILL's accept rule)")
    ax.axhline(5, color="red", linestyle="--", label="acceptance 5 %")
    ax.set_xticks(list(xs), labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("% of A/A comparisons (unchanged code)")
    ax.set_title(f"Unchanged code on the real cpu backend: {result['comparisons']} comparisons per bar, δ = 1 %, "
                 f"load {result['load_before'][0]:.1f}→{result['load_after'][0]:.1f}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def power_figure(result: dict, path: Path) -> Path:
    rows = result["rows"]
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / len(kinds)
    for k, kind in enumerate(kinds):
        values = [100 * next(r["faster"] for r in rows if r["variant"] == v and r["kind"] == kind) for v in variants]
        ax.bar([i + (k - (len(kinds) - 1) / 2) * width for i in range(len(variants))], values, width, label=kind)
    truth = {v: next(r["true_speedup"] for r in rows if r["variant"] == v) for v in variants}
    ax.set_xticks(range(len(variants)), [f"{v} kernel work\n(true speed-up {' / '.join(f'{t:.2f}' for t in truth[v].values())})"
                                         for v in variants], fontsize=8)
    ax.axhline(90, color="red", linestyle="--", label="acceptance 90 % (at −30 %)")
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of per-case verdicts `faster` (power)")
    ax.set_title(f"Real known changes, {result['comparisons']} comparisons, {result['repeats']} repeats, "
                 f"band {rows[0]['band']:.0%}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def demo_figure(result: dict, path: Path) -> Path:
    runs = [r for r in result["runs"] if r["score"] is not None and r["ci"] and None not in r["ci"]]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k, r in enumerate(runs, 1):
        color = "tab:green" if r["holds_median"] else "tab:red"
        ax.errorbar([k], [r["score"]], yerr=[[r["score"] - r["ci"][0]], [r["ci"][1] - r["score"]]], fmt="o",
                    color=color, capsize=4)
        ax.annotate(str(r["chosen"]), (k, r["ci"][1]), textcoords="offset points", xytext=(0, 4), ha="center",
                    fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(1, len(runs) + 1))
    ax.set_xlabel("demo run (green: its 95 % CI holds the other runs' median; red: it does not)")
    ax.set_ylabel("final suite speed-up vs v000 (log)")
    ax.set_title(f"{result['example']} demo, {len(result['runs'])} runs: {result['holds_median']} CIs hold the "
                 "other runs' median", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


DRAW = {"processes.json": aa_figure, "power.json": power_figure, "demo_runs.json": demo_figure}


def save(out: Path, stem: str, result: dict, *, smoke: bool) -> Path:
    """Write a benchmark's result as ``<stem>.json`` (``<stem>_smoke.json`` for a smoke run, which
    gets no figure) in ``out`` and draw its figure; the JSON's path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}{'_smoke' if smoke else ''}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if not smoke:
        DRAW[path.name](result, out / FIGURES[path.name])
    return path


def draw_all(out: Path) -> list[Path]:
    return [DRAW[name](json.loads((out / name).read_text()), out / FIGURES[name])
            for name in FIGURES if (out / name).is_file()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    for path in draw_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
