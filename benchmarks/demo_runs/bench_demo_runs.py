#!/usr/bin/env python3
"""Repeat the end-to-end demo and check that its reported suite CI holds the spread between runs (issue 23).

Runs ``scripts/demo.py --example NAME --json`` ``--runs`` times one after another, each in a fresh
work folder, and reads from each run's summary the chosen version, the final suite speed-up (the
frozen aggregate metric, final round paired with v000) with its CI, the verifier's verdict and the
wall time. A run's CI **holds the spread** when it contains the median of the other runs' suite
speed-ups that delivered the same version (a run that delivered another version is compared with
none); also reported: whether it contains every other same-version point, and the spread itself
(min–max over runs). ``uptime`` load before and after every run.

usage:
  python benchmarks/demo_runs/bench_demo_runs.py [--out DIR] [--runs 10] [--example softmax] [--smoke]

example:
  python benchmarks/demo_runs/bench_demo_runs.py --out benchmarks/results   # ~12 min on 2 idle cores
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def one_run(example: str, workdir: Path) -> dict:
    load, began = os.getloadavg()[0], time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), "--example", example,
                           "--workdir", str(workdir), "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - began
    try:
        summary = json.loads(proc.stdout)
    except json.JSONDecodeError:
        summary = {}
    suite = summary.get("suite") or {}
    return {"returncode": proc.returncode, "wall_s": wall, "load_before": load, "load_after": os.getloadavg()[0],
            "chosen": summary.get("chosen_version"), "verifier": summary.get("verifier"),
            "metric": suite.get("metric"), "score": suite.get("score"), "ci": suite.get("ci"),
            "cases": [{k: c.get(k) for k in ("case", "speedup", "speedup_ci", "verdict")}
                      for c in summary.get("cases") or []],
            "stderr_tail": proc.stderr[-400:] if proc.returncode else ""}


def judge(runs: list[dict]) -> list[dict]:
    """Per run: does its CI hold the median of the other same-version runs, and every one of them."""
    for i, run in enumerate(runs):
        others = [r["score"] for j, r in enumerate(runs) if j != i and r["chosen"] == run["chosen"]
                  and r["score"] is not None]
        ci = run["ci"]
        usable = bool(others) and ci is not None and None not in ci
        run["others_median"] = statistics.median(others) if others else None
        run["holds_median"] = usable and ci[0] <= run["others_median"] <= ci[1]
        run["holds_all"] = usable and all(ci[0] <= s <= ci[1] for s in others)
    return runs


def table(result: dict) -> str:
    out = ["| run | exit | chosen | suite speed-up | 95 % CI | holds the others' median | holds every other | wall s "
           "| load |", "|---|---|---|---|---|---|---|---|---|"]
    for k, r in enumerate(result["runs"], 1):
        ci = "-" if not r["ci"] or None in r["ci"] else f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        score = "-" if r["score"] is None else f"{r['score']:.3f}"
        out.append(f"| {k} | {r['returncode']} | {r['chosen']} | {score} | {ci} | {'yes' if r['holds_median'] else 'no'} "
                   f"| {'yes' if r['holds_all'] else 'no'} | {r['wall_s']:.0f} | {r['load_before']:.1f} |")
    n = len(result["runs"])
    out.append(f"\n{result['holds_median']}/{n} CIs hold the other runs' median, {result['holds_all']}/{n} every other "
               f"run; spread of the suite speed-up {result['spread']}; {result['passed']}/{n} runs PASS; "
               f"{result['total_s']:.0f} s in all")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--example", default="softmax", help="bundled example to run (default softmax)")
    parser.add_argument("--smoke", action="store_true", help="2 runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    if args.runs < 2:
        print("error: bench_demo_runs.py: --runs: at least 2 runs are needed to see a spread (give --runs 2 or more)",
              file=sys.stderr)
        return 2
    began, runs = time.perf_counter(), []
    with tempfile.TemporaryDirectory(prefix="bench_demo_runs_") as tmp:
        for k in range(args.runs):
            runs.append(one_run(args.example, Path(tmp) / f"w{k:02d}"))
            r = runs[-1]
            print(f"run {k + 1}/{args.runs}: exit {r['returncode']}, {r['chosen']}, suite {r['score']} CI {r['ci']}, "
                  f"{r['wall_s']:.0f} s, load {r['load_before']:.1f}", file=sys.stderr)
    judge(runs)
    scores = [r["score"] for r in runs if r["score"] is not None]
    result = {"example": args.example, "runs": runs, "total_s": time.perf_counter() - began,
              "holds_median": sum(r["holds_median"] for r in runs), "holds_all": sum(r["holds_all"] for r in runs),
              "spread": [min(scores), max(scores)] if scores else None,
              "passed": sum(r["returncode"] == 0 for r in runs), "cpu_count": os.cpu_count()}
    sys.path.insert(0, str(HERE.parent))
    import verdict_figures
    verdict_figures.save(args.out, "demo_runs", result, smoke=args.smoke)
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
