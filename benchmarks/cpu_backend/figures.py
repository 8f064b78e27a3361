"""Figure of the cpu backend benchmark: cpu runner / timeit ratio per kernel cost."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def cpu_figure(result: dict, path: Path) -> Path:
    rows = result["kernels"]
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [r["timeit_median_us"] for r in rows]
    ax.plot(xs, [r["ratio_median"] for r in rows], "o-", label="median(cpu runner) / median(timeit)")
    ax.plot(xs, [r["ratio_min"] for r in rows], "s--", label="min(cpu runner) / min(timeit)")
    ax.plot(xs, [r["ratio_cold_median"] for r in rows], "^-", label="median(cpu runner) / median(timeit, one call after gc.collect())")
    overhead_us = result["timer_overhead"]["shim_noop_sample"]["median_ns"] / 1000
    ax.plot(xs, [1 + overhead_us / x for x in xs], ":", color="grey",
            label=f"1 + timer overhead ({overhead_us * 1000:.0f} ns) / kernel time")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kernel time per call measured by timeit (us, log scale)")
    ax.set_ylabel("cpu backend time / timeit time (log scale)")
    ax.set_title("cpu backend (collect_perf.py formal) vs timeit on busy-loop kernels")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
