#!/usr/bin/env python3
"""The pypto-sim loop's cost: product time ÷ raw simulation time of the distinct launches (issue 30).

Runs ``scripts/demo.py --example pypto_softmax`` once (or reads a kept run with ``--workdir`` and
``--launch-log``) with ``PERFTUNE_SIM_LAUNCH_LOG`` set, so every simulator process of the
backend (timed launches through ``cpu_runner``, selector preflights through ``case_adapter``, P10)
appends one line. Correctness processes run the tests directly; they are counted from the
correctness records (one process per test, one per P0 probe). A **distinct question** is one
(executable sha256, case) pair some round arm or quick screen asked; the **raw simulation time**
of them is their count times the median timed launch (one fresh process: importing pypto/torch,
compiling, simulating). Reported: launches ÷ distinct questions and wall ÷ that raw time (the
issue's targets: ≤ 2 and ≤ 2 on an idle 2-core machine).

usage:
  python benchmarks/pypto_sim/bench_pypto_sim.py [--out DIR] [--workdir DIR --launch-log FILE --wall S]

example:
  python benchmarks/pypto_sim/bench_pypto_sim.py --out benchmarks/results   # one demo, ~5-10 min
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def distinct_questions(op: Path) -> set[tuple[str, str]]:
    """(executable_sha256, case) pairs the protocol asked: every round's arms and quick screen."""
    out = set()
    for path in sorted((op / "docs/perf").glob("round_*/collection.json")):
        d = json.loads(path.read_text())
        shas = [d["executable_sha256"]] + ([d["paired"]["baseline_executable_sha256"]] if d.get("paired") else [])
        out |= {(sha, case) for sha in shas for case in d["expected_cases"]}
    for path in sorted((op / "docs/perf/quick").glob("quick_*/quick_performance.json")):
        d = json.loads(path.read_text())
        out |= {(d["executable_sha256"], case) for case in d["expected_cases"]}
    return out


def analyse(workdir: Path, log: Path, wall_s: float) -> dict:
    """Launch counts, distinct questions and ratios of one kept demo run. The raw simulation time
    of the distinct questions is their count times the median timed launch (one fresh process:
    import, compile, simulate; every case of the example costs about the same)."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    timed = [e["seconds"] for e in lines if not e["module"].endswith("case_adapter") and e["returncode"] == 0]
    preflights = sum(e["module"].endswith("case_adapter") for e in lines)
    op = next(workdir.glob("run_*/*/PERFORMANCE_CASES.json")).parent
    correctness = [json.loads(p.read_text()) for p in sorted((op / "docs/perf/correctness").glob("c*.json"))]
    tests = sum(len(r["cases"]) for r in correctness)
    probes = sum(1 for r in correctness for c in r["cases"] if "probe" in c)
    distinct = len(distinct_questions(op))
    raw_s = distinct * statistics.median(timed) if timed else 0.0
    total = len(lines) + tests + probes
    return {"wall_s": round(wall_s, 1), "launches": {"timed": len(lines) - preflights, "preflight": preflights,
                                                      "correctness_tests": tests, "correctness_probes": probes,
                                                      "total": total},
            "median_launch_s": round(statistics.median(timed), 2) if timed else None,
            "distinct_questions": distinct, "raw_simulation_s": round(raw_s, 1),
            "launches_per_distinct": round(total / distinct, 2) if distinct else None,
            "wall_per_raw": round(wall_s / raw_s, 2) if raw_s else None,
            "cpu_count": os.cpu_count(), "load": list(os.getloadavg())}


def run_demo(workdir: Path, log: Path) -> float:
    env = {**os.environ, "PERFTUNE_SIM_LAUNCH_LOG": str(log)}
    started = time.monotonic()
    subprocess.run([sys.executable, str(ROOT / "scripts/demo.py"), "--example", "pypto_softmax", "--workdir",
                    str(workdir), "--keep", "--json"], env=env, check=True, capture_output=True, text=True)
    return time.monotonic() - started


def table(d: dict) -> str:
    l = d["launches"]
    return "\n".join([
        "| wall s | raw sim s (distinct) | wall ÷ raw | launches (timed + preflight + tests + probes) | distinct | launches ÷ distinct |",
        "|---|---|---|---|---|---|",
        f"| {d['wall_s']} | {d['raw_simulation_s']} | {d['wall_per_raw']} | {l['total']} ({l['timed']} + {l['preflight']} + "
        f"{l['correctness_tests']} + {l['correctness_probes']}) | {d['distinct_questions']} | {d['launches_per_distinct']} |"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--workdir", type=Path, help="a kept demo work folder (else one demo is run)")
    parser.add_argument("--launch-log", type=Path, help="its PERFTUNE_SIM_LAUNCH_LOG file")
    parser.add_argument("--wall", type=float, help="its wall seconds")
    args = parser.parse_args(argv)
    if args.workdir:
        if not (args.launch_log and args.wall):
            parser.error("--workdir needs --launch-log and --wall")
        result = analyse(args.workdir, args.launch_log, args.wall)
    else:
        with tempfile.TemporaryDirectory(prefix="bench_pypto_sim_") as tmp:
            work, log = Path(tmp) / "work", Path(tmp) / "launches.jsonl"
            result = analyse(work, log, run_demo(work, log))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pypto_sim.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
