#!/usr/bin/env python3
"""The pypto-sim loop's cost: product time ÷ raw simulation time of the distinct launches (issue 30).

Runs ``scripts/demo.py --example pypto_softmax`` once (or reads a kept run with ``--workdir`` and
``--launch-log``) with ``PERFTUNE_SIM_LAUNCH_LOG`` set, so every simulator process of the
backend (timed launches through ``cpu_runner``, selector preflights through ``case_adapter``, P10)
appends one line. Correctness processes run the tests directly; they are counted from the
correctness records (one process per test, one per P0 probe). A **distinct question** is one
(runner file sha256, case) pair; its **raw simulation time** is the fastest logged launch of it
(one fresh process: importing pypto/torch, compiling, simulating). Reported per demo step: wall
seconds and the launches it made; in all: launches ÷ distinct questions and wall ÷ the raw time of
the distinct questions (the issue's targets: ≤ 2 and ≤ 2 on an idle 2-core machine).

usage:
  python benchmarks/pypto_sim/bench_pypto_sim.py [--out DIR] [--workdir DIR --launch-log FILE --wall S]

example:
  python benchmarks/pypto_sim/bench_pypto_sim.py --out benchmarks/results   # one demo, ~5-10 min
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def _sha(path: str | None) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12] if path else None
    except OSError:
        return None


def analyse(workdir: Path, log: Path, wall_s: float) -> dict:
    """Launch counts, distinct questions and ratios of one kept demo run."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    launches, raw = [], {}
    for entry in lines:
        args = entry["args"]
        kind = "preflight" if entry["module"].endswith("case_adapter") else "timed"
        key = (_sha(_flag(args, "--runner")) if kind == "timed" else "-", _flag(args, "--case-id"))
        launches.append({"kind": kind, "key": key, "seconds": entry["seconds"]})
        if kind == "timed" and entry["returncode"] == 0:
            raw[key] = min(raw.get(key, entry["seconds"]), entry["seconds"])
    op = next(workdir.glob("run_*/*/PERFORMANCE_CASES.json")).parent
    correctness = [json.loads(p.read_text()) for p in sorted((op / "docs/perf/correctness").glob("c*.json"))]
    tests = sum(len(r["cases"]) for r in correctness)
    probes = sum(1 for r in correctness for c in r["cases"] if c.get("probe"))
    steps = []
    for path in sorted((workdir / next(workdir.glob("run_*")).name / "demo_logs").glob("*.log")):
        steps.append({"step": path.stem, "bytes": path.stat().st_size})
    distinct = len(raw)
    raw_s = sum(raw.values())
    total = len(launches) + tests + probes
    return {"wall_s": round(wall_s, 1), "launches": {"timed": sum(l["kind"] == "timed" for l in launches),
                                                      "preflight": sum(l["kind"] == "preflight" for l in launches),
                                                      "correctness_tests": tests, "correctness_probes": probes,
                                                      "total": total},
            "distinct_questions": distinct, "raw_simulation_s": round(raw_s, 1),
            "launches_per_distinct": round(total / distinct, 2) if distinct else None,
            "wall_per_raw": round(wall_s / raw_s, 2) if raw_s else None,
            "steps": steps, "cpu_count": os.cpu_count(), "load": list(os.getloadavg())}


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
