#!/usr/bin/env python3
"""Measure one evidence-processing job on one synthetic operator dir, in a fresh process.

Jobs: ``floor`` (``pandas.read_csv`` of every op_summary CSV of both rounds, default options, the
frames dropped one by one), ``compare`` (``perftune.decide.compare.load_formal``: what ``compare_perf.py
formal`` computes before writing), ``select`` (``perftune.decide.candidates.rank``: ``select_best.py``'s
recomputation) and ``evidence`` (``perftune.measure.evidence.load_round`` on both rounds, stage5_check's
evidence loading). Modules are imported and pandas warmed up first; then the peak-RSS mark is
reset (``/proc/self/clear_refs`` = 5) so the reported memory is the job's own peak above the
resident size before it. Prints one JSON object: wall_s, cpu_s (user+sys of this process),
rss_before_bytes, peak_rss_delta_bytes and, for ``floor``, files, bytes and the largest frame's
``memory_usage(deep=True)``.

usage:
  python benchmarks/scale/measure.py OP_DIR JOB [JOB ...]     (JOB: floor, compare, select, evidence)

One process per job is the clean measurement; several jobs share one process (smoke runs).
"""

from __future__ import annotations

import io
import json
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "scripts"), str(HERE)]  # benchmark script, not library

import pandas as pd  # noqa: E402

from generate import csv_files  # noqa: E402
from perftune.contract import golden  # noqa: E402,F401
from perftune.decide import candidates, compare, selection  # noqa: E402,F401
from perftune.measure import evidence  # noqa: E402,F401
from perftune.measure.backends import msprof  # noqa: E402,F401


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def floor(op: Path) -> dict:
    files, largest, total = csv_files(op), 0, 0
    for path in files:
        frame = pd.read_csv(path)
        total += path.stat().st_size
        largest = max(largest, int(frame.memory_usage(deep=True).sum()))
        del frame
    return {"files": len(files), "bytes": total, "largest_frame_bytes": largest}


JOBS = {
    "floor": floor,
    "compare": lambda op: {"cases": len(compare.load_formal(op, "round_001", "round_002")["per_case"])},
    "select": lambda op: {"chosen": candidates.rank(op)["chosen"]},
    "evidence": lambda op: {"cases": sum(len(evidence.load_round(op, r).cases) for r in ("round_001", "round_002"))},
}


def measure(op: Path, job: str) -> dict:
    reset = _reset_peak()
    rss0 = _status_kb("VmRSS")
    usage0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    extra = JOBS[job](op)
    wall, usage1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    peak = _status_kb("VmHWM") if reset else usage1.ru_maxrss * 1024
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    return {"job": job, "wall_s": wall, "cpu_s": cpu, "rss_before_bytes": rss0,
            "peak_rss_delta_bytes": max(0, peak - rss0), "peak_reset": reset, "pid": os.getpid(), **extra}


def main() -> int:
    op, jobs = Path(sys.argv[1]), sys.argv[2:]
    pd.read_csv(io.StringIO("a,b\n1,x\n"))
    print(json.dumps([measure(op, job) for job in jobs], sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
