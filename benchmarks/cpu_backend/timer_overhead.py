#!/usr/bin/env python3
"""Per-sample timing overhead of the cpu backend (not a unit test; run by hand).

Times a no-op "kernel" through the same ``TimingShim`` the cpu runner installs (GC disabled
around the call, ``perf_counter_ns`` before/after), so every recorded sample is pure overhead:
the floor added to each real kernel sample. Also reports the bare back-to-back
``perf_counter_ns`` pair and the clock resolution for comparison.

usage:
  python benchmarks/cpu_backend/timer_overhead.py [--samples N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # benchmark script, not library

from perftune.measure.backends.cpu_runner import TimingShim  # noqa: E402


def noop(*_args, **_kwargs):
    return None


def summarise(values_ns: list[int]) -> dict[str, float]:
    ordered = sorted(values_ns)
    return {"median_ns": statistics.median(ordered), "p05_ns": ordered[len(ordered) // 20],
            "p95_ns": ordered[(len(ordered) * 19) // 20], "min_ns": ordered[0], "max_ns": ordered[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shim = TimingShim(noop)
    for _ in range(args.samples):
        shim()
    bare = []
    for _ in range(args.samples):
        start = time.perf_counter_ns()
        bare.append(time.perf_counter_ns() - start)
    result = {"samples": args.samples, "shim_noop_sample": summarise(shim.durations_ns),
              "bare_counter_pair": summarise(bare),
              "clock_resolution_ns": time.get_clock_info("perf_counter").resolution * 1e9,
              "python": sys.version.split()[0]}
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        s, b = result["shim_noop_sample"], result["bare_counter_pair"]
        print(f"shim no-op sample: median {s['median_ns']:.0f} ns (p05 {s['p05_ns']} ns, p95 {s['p95_ns']} ns)")
        print(f"bare perf_counter_ns pair: median {b['median_ns']:.0f} ns; resolution {result['clock_resolution_ns']:.0f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
