#!/usr/bin/env python3
"""Run every benchmark of issue 9 and leave JSON + SUMMARY.md + PNG results in one folder.

Runs, each in its own process: ``scale/bench_scale.py`` (evidence processing vs a pandas read
floor), ``decisions/bench_decisions.py`` (A/A false-positive rate and power of our verdict rule,
pyperf's compare_to and the upstream rule) and ``cpu_backend/bench_cpu_timeit.py`` (cpu runner
vs timeit, timer overhead) and ``aa/bench_aa.py`` (real cpu A/A under load: false directional
verdicts of independent uncalibrated, calibrated and paired compares); then renders ``SUMMARY.md``. pyperf is not a project dependency: it
is installed with pip into this interpreter when missing (``pip install '.[bench]'`` does the
same). The full run takes about 10 minutes on 2 cores; ``--smoke`` runs tiny sizes in well
under a minute (used by tests/test_benchmarks_smoke.py).

usage:
  python benchmarks/run_all.py [--out DIR] [--smoke] [--only NAME ...] [--json]

example:
  python benchmarks/run_all.py            # writes benchmarks/results/
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = {"scale": HERE / "scale" / "bench_scale.py", "decisions": HERE / "decisions" / "bench_decisions.py",
           "cpu_backend": HERE / "cpu_backend" / "bench_cpu_timeit.py", "aa": HERE / "aa" / "bench_aa.py"}


def ensure_pyperf() -> str:
    """pyperf's version, installing it with pip first when it is not importable."""
    if importlib.util.find_spec("pyperf") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "pyperf"], check=True)
    out = subprocess.run([sys.executable, "-c", "import pyperf; print(pyperf.__version__)"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder (default benchmarks/results)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these benchmarks")
    parser.add_argument("--json", action="store_true", help="print the per-benchmark timings as JSON")
    args = parser.parse_args()
    start, timings = time.perf_counter(), {}
    if "decisions" in (args.only or BENCHES):
        timings["pyperf_version"] = ensure_pyperf()
    for name in args.only or BENCHES:
        began = time.perf_counter()
        argv = [sys.executable, str(BENCHES[name]), "--out", str(args.out)] + (["--smoke"] if args.smoke else [])
        if subprocess.run(argv).returncode != 0:
            print(f"error: benchmarks/run_all.py: {name}: benchmark failed (see its output above)", file=sys.stderr)
            return 1
        timings[f"{name}_s"] = time.perf_counter() - began
    sys.path.insert(0, str(HERE))
    from summary import render
    timings["total_s"] = time.perf_counter() - start
    (args.out / "SUMMARY.md").write_text(render(args.out, timings["total_s"]), encoding="utf-8")
    (args.out / "run_all.json").write_text(json.dumps({**timings, "smoke": args.smoke}, indent=2, sort_keys=True) + "\n")
    print(json.dumps(timings, indent=2, sort_keys=True) if args.json else
          f"benchmarks done in {timings['total_s']:.0f} s; results in {args.out}/SUMMARY.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
