#!/usr/bin/env python3
"""Scale benchmark: evidence processing on growing synthetic msprof rounds vs a pandas read floor.

For every scenario (cases x repeats x op_summary rows, two rounds of 7 metric CSVs per repeat) it
builds the operator dir (``generate.py``), then runs each job in its own fresh process
(``measure.py``): the floor (``pandas.read_csv`` of the same CSVs), compare (``load_formal``),
select (``candidates.rank``) and evidence (``load_round`` x 2). Targets (issue 9): each job's time
<= 1.5x the floor, its peak memory <= 2x the largest parsed frame, linear growth in the number of
files (least-squares slope in ms per file, and the log-log exponent, 1.0 = linear). Times are
judged on CPU time (user+sys of the job's process), which co-tenant load on a shared machine
disturbs far less than wall time; both are recorded.

usage:
  python benchmarks/scale/bench_scale.py [--out DIR] [--work DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "scripts"), str(HERE)]  # benchmark script, not library

from generate import Shape, build_op_dir  # noqa: E402

JOBS = ("floor", "compare", "select", "evidence")
FULL = [Shape(5, 3, 100), Shape(5, 10, 100), Shape(50, 3, 100), Shape(20, 10, 100),
        Shape(50, 10, 100), Shape(5, 3, 2000), Shape(5, 3, 20000), Shape(1, 3, 100, big_rows=1_000_000)]
SMOKE = [Shape(1, 2, 20), Shape(2, 2, 20, big_rows=200)]
TIME_TARGET, MEMORY_TARGET, MEMORY_MIN_FRAME = 1.5, 2.0, 10 << 20


def run_jobs(op: Path, jobs: tuple[str, ...]) -> list[dict]:
    proc = subprocess.run([sys.executable, str(HERE / "measure.py"), str(op), *jobs], capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"error: measure.py {jobs} on {op} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout)


def scenario(shape: Shape, work: Path, shared: bool = False) -> dict:
    """Build, measure (one fresh process per job; ``shared``: one process for all) and delete."""
    root = Path(tempfile.mkdtemp(prefix="scale_", dir=work))
    try:
        start = time.perf_counter()
        op = build_op_dir(root, shape)
        row = {"cases": shape.cases, "repeats": shape.repeats, "rows": shape.rows, "big_rows": shape.big_rows,
               "generate_s": time.perf_counter() - start}
        results = run_jobs(op, JOBS) if shared else [run_jobs(op, (job,))[0] for job in JOBS]
        row["jobs"] = {r["job"]: r for r in results}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    floor = row["jobs"]["floor"]
    row["files"], row["largest_frame_bytes"] = floor["files"], floor["largest_frame_bytes"]
    for job in JOBS[1:]:
        result = row["jobs"][job]
        result["cpu_vs_floor"] = result["cpu_s"] / floor["cpu_s"]
        result["wall_vs_floor"] = result["wall_s"] / floor["wall_s"]
        result["memory_vs_largest_frame"] = result["peak_rss_delta_bytes"] / floor["largest_frame_bytes"]
    return row


def fits(rows: list[dict]) -> dict:
    """Per job on the fixed-row-count series: CPU seconds = a + b * files, and the log-log exponent.

    (A smoke run has too few points and fits over all its scenarios.)"""
    series = [r for r in rows if r["rows"] == rows[0]["rows"] and (r["big_rows"] is None or len(rows) < 3)]
    files = np.array([r["files"] for r in series], float)
    out = {}
    for job in JOBS:
        cpu = np.array([r["jobs"][job]["cpu_s"] for r in series])
        slope, intercept = np.polyfit(files, cpu, 1)
        exponent = np.polyfit(np.log(files), np.log(cpu), 1)[0] if len(set(files)) > 1 else None
        residual = cpu - (intercept + slope * files)
        r2 = 1 - float((residual ** 2).sum() / max(((cpu - cpu.mean()) ** 2).sum(), 1e-300))
        out[job] = {"ms_per_file": 1000 * slope, "intercept_s": intercept, "loglog_exponent": exponent, "r2": r2}
    return {"rows_per_file": series[0]["rows"] if series else None, "points": len(series), "jobs": out}


def verdicts(rows: list[dict], fit: dict) -> dict:
    time_ok = {job: max(r["jobs"][job]["cpu_vs_floor"] for r in rows) for job in JOBS[1:]}
    big = [r for r in rows if r["largest_frame_bytes"] >= MEMORY_MIN_FRAME]
    memory = {job: max((r["jobs"][job]["memory_vs_largest_frame"] for r in big), default=None) for job in JOBS[1:]}
    return {"worst_cpu_vs_floor": time_ok, "time_target_met": all(v <= TIME_TARGET for v in time_ok.values()),
            "worst_memory_vs_largest_frame": memory, "memory_judged_on_frames_at_least_bytes": MEMORY_MIN_FRAME,
            "memory_target_met": all(v is None or v <= MEMORY_TARGET for v in memory.values()),
            "slope_vs_floor": {job: fit["jobs"][job]["ms_per_file"] / fit["jobs"]["floor"]["ms_per_file"]
                               for job in JOBS[1:]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results", help="results folder")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder for the generated trees")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI smoke run)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="pypto_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for shape in SMOKE if args.smoke else FULL:
        rows.append(scenario(shape, work, shared=args.smoke))
        r = rows[-1]
        print(f"scale {r['cases']}x{r['repeats']} rows={r['rows']} big={r['big_rows']} files={r['files']}: "
              + ", ".join(f"{j} {r['jobs'][j]['cpu_s']:.2f}s" for j in JOBS), flush=True)
    fit = fits(rows)
    result = {"benchmark": "scale", "smoke": args.smoke, "targets": {"time_vs_floor": TIME_TARGET,
              "memory_vs_largest_frame": MEMORY_TARGET}, "scenarios": rows, "fit": fit,
              "summary": verdicts(rows, fit)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    from figures import scale_figures
    scale_figures(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
