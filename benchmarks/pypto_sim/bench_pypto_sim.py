#!/usr/bin/env python3
"""The pypto-sim loop's cost: product time ÷ raw simulation time of the distinct launches (issue 30).

Runs ``scripts/demo.py --example pypto_softmax`` once (or reads a kept run with ``--workdir`` and
``--launch-log``) with ``PERFTUNE_SIM_LAUNCH_LOG`` set, so every simulator process of the
backend (timed launches through ``cpu_runner``, selector preflights through ``case_adapter``, P10)
appends one line with its start time and whether it imported pypto (a process that ended before,
such as the preflight's unknown case id, is counted apart: it simulated nothing). Correctness
processes run the tests directly; they are counted from the correctness records (one process per
test that ran in its own, one per batch of tests that shared a process, one per P0 probe; a P0 test
that ran inside its probe, ``ran_in: probe``, is none);
the verifier's beyond-P0 probes (P9, one process per case in ``stage5_check.json``) count as P10's step. A **distinct question** is
one (executable sha256, case) pair some round arm or quick screen asked, or (executable sha256, test)
of a correctness test outside the P0 cases (every version's tests must run), plus each of P10's
independent re-simulations; the **raw simulation time** of them is their count times the median
timed launch (one fresh process: importing pypto/torch, compiling, simulating). Reported:
launches ÷ distinct questions and wall ÷ that raw time (the issue's targets: ≤ 2 and ≤ 2 on an
idle 2-core machine), and per step group (correctness, preflight, rounds, quick, P10, other; a
launch belongs to the demo step whose window, from ``demo_logs``, holds its start): steps, launches,
the questions no earlier step asked, product seconds and product ÷ raw of those questions.

usage:
  python benchmarks/pypto_sim/bench_pypto_sim.py [--out DIR] [--op-dir DIR | --workdir DIR --launch-log FILE --wall S]
      [--conditions TEXT]

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


GROUPS = {"correctness": "correctness", "preflight": "preflight", "baseline": "rounds", "paired_formal": "rounds",
          "confirm_round": "rounds", "final_formal": "rounds", "quick": "quick", "verify": "P10"}
ORDER = ("correctness", "preflight", "rounds", "quick", "P10", "other")


def asked(record_path: Path) -> set[tuple[str, str]]:
    """(executable_sha256, case) pairs one round (every arm) or quick screen asked."""
    d = json.loads(record_path.read_text())
    shas = [d["executable_sha256"]] + ([d["paired"]["baseline_executable_sha256"]] if d.get("paired") else [])
    return {(sha, case) for sha in shas for case in d["expected_cases"]}


def distinct_questions(op: Path) -> set[tuple[str, str]]:
    """(executable_sha256, case) pairs the protocol asked: every round's arms and quick screen."""
    out = set()
    for path in sorted((op / "docs/perf").glob("round_*/collection.json")) + \
            sorted((op / "docs/perf/quick").glob("quick_*/quick_performance.json")):
        out |= asked(path)
    return out


def steps(workdir: Path) -> list[dict]:
    """Every demo step log: key, started (unix s), seconds, and the round or quick record it wrote."""
    out = []
    for log in sorted(workdir.glob("run_*/demo_logs/[0-9]*.log")):
        text = log.read_text(encoding="utf-8")
        head = dict(line.split(": ", 1) for line in text.split("--- stdout")[0].splitlines() if ": " in line)
        stdout = text.split("--- stdout\n", 1)[-1].split("\n--- stderr", 1)[0].strip()
        try:
            data = json.loads(stdout) if stdout.startswith("{") else {}
        except ValueError:
            data = {}
        record = (Path(data["round"]) / "collection.json" if data.get("round") else
                  Path(data["path"]) if str(data.get("path", "")).endswith("quick_performance.json") else None)
        out.append({"key": head.get("step"), "started": float(head.get("started", 0)),
                    "seconds": float(head.get("seconds", 0)), "record": record})
    return out


def analyse(workdir: Path, log: Path, wall_s: float) -> dict:
    """Launch counts, distinct questions and ratios of one kept demo run, in total and per step group.
    The raw simulation time of a question is the median timed launch (one fresh process: import,
    compile, simulate; every case of the example costs about the same). A group's ``new`` questions
    are those no earlier step asked; P10's re-simulations are all needed (fresh, independent)."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    timed = [e["seconds"] for e in lines if not e["module"].endswith("case_adapter") and e["returncode"] == 0]
    median = statistics.median(timed) if timed else 0.0
    op = next(workdir.glob("run_*/*/PERFORMANCE_CASES.json")).parent
    correctness = [r for r in (json.loads(p.read_text()) for p in sorted((op / "docs/perf/correctness").glob("c*.json")))
                   if "reused_from" not in r]   # a reused record started no process
    p10 = len(list((op / "docs/perf/stage5_remeasure").glob("rm_*/*/case_*")))
    check = op / "docs/perf/stage5_check.json"   # P9's beyond-P0 probes: one simulating process per case
    beyond = len(json.loads(check.read_text()).get("beyond_p0", {}).get("cases", [])) if check.is_file() else 0
    groups = {g: {"steps": 0, "product_s": 0.0, "launches": 0, "new_questions": 0} for g in ORDER}
    seen: set[tuple[str, str]] = set()
    runs = steps(workdir)
    for step in runs:
        g = groups[GROUPS.get(step["key"], "other")]
        g["steps"] += 1
        g["product_s"] += step["seconds"]
        if step["record"] is not None and step["record"].is_file():
            new = asked(step["record"]) - seen
            g["new_questions"] += len(new)
            seen |= new
    groups["P10"]["new_questions"] = p10
    idle = [e for e in lines if e.get("simulated") is False]   # ended before importing pypto
    lines = [e for e in lines if e.get("simulated") is not False]
    for entry in lines:   # a runner process belongs to the step whose window holds its start
        step = next((s for s in runs if s["started"] <= entry.get("started", -1) <= s["started"] + s["seconds"]), None)
        groups[GROUPS.get(step["key"], "other") if step else "other"]["launches"] += 1
    tests = sum(1 for r in correctness for c in r["cases"] if "ran_in" not in c) + \
        len({(r["run_id"], c["batch"]) for r in correctness for c in r["cases"] if c.get("ran_in") == "batch"})
    probes = sum(1 for r in correctness for c in r["cases"] if "probe" in c)
    groups["correctness"]["launches"] += tests + probes
    # a test outside the P0 cases (or run before the freeze) is a (version, test) launch the protocol needs
    # too (SKILL step 1: every test of every version): counted in ``total``, so counted as a question
    non_p0 = {(r["executable_sha256"], c["id"]) for r in correctness for c in r["cases"] if c.get("p0") is not True}
    groups["correctness"]["new_questions"] += len(non_p0 - seen)
    groups["P10"]["launches"] += beyond
    for g in groups.values():
        g["product_s"] = round(g["product_s"], 1)
        g["raw_s"] = round(g["new_questions"] * median, 1)
        g["product_per_raw"] = round(g["product_s"] / g["raw_s"], 2) if g["raw_s"] else None
    preflights = sum(e["module"].endswith("case_adapter") for e in lines)
    distinct = len(distinct_questions(op) | non_p0) + p10
    raw_s = distinct * median
    total = len(lines) + tests + probes + beyond
    return {"wall_s": round(wall_s, 1), "launches": {"timed": len(lines) - preflights, "preflight": preflights,
                                                      "correctness_tests": tests, "correctness_probes": probes,
                                                      "verifier_probes": beyond, "total": total,
                                                      "not_simulating": len(idle)},
            "median_launch_s": round(median, 2) if timed else None, "p10_launches": p10,
            "distinct_questions": distinct, "raw_simulation_s": round(raw_s, 1), "steps": groups,
            "launches_per_distinct": round(total / distinct, 2) if distinct else None,
            "wall_per_raw": round(wall_s / raw_s, 2) if raw_s else None,
            "cpu_count": os.cpu_count(), "load": list(os.getloadavg())}


def run_demo(workdir: Path, log: Path, op_dir: Path | None = None) -> tuple[float, dict]:
    """One demo run with the launch log: the pypto_softmax example, or ``op_dir`` (e.g. a scaffolded
    ``new_operator.py --backend pypto-sim`` folder with its plan in ``variants/``)."""
    env = {**os.environ, "PERFTUNE_SIM_LAUNCH_LOG": str(log)}
    which = ["--op-dir", str(op_dir)] if op_dir else ["--example", "pypto_softmax"]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/demo.py"), *which, "--workdir", str(workdir), "--keep",
                           "--json"], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: demo.py {' '.join(which)} exited {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return time.monotonic() - started, json.loads(proc.stdout)


def verdicts(summary: dict) -> dict:
    """What must not change when the loop gets faster: the verifier's line, the chosen version, the
    delivered cycles' speed-ups per case and the suite's."""
    return {"verifier": summary.get("verifier"), "chosen_version": summary.get("chosen_version"),
            "cases": {c["case"]: [c["baseline_us"], c["final_us"], c["speedup"]] for c in summary.get("cases", [])},
            "suite_mean_speedup": (summary.get("suite") or {}).get("mean_case_speedup")}


def table(d: dict) -> str:
    l = d["launches"]
    return "\n".join([
        "| wall s | raw sim s (distinct) | wall ÷ raw | simulator launches (timed + preflight + tests + probes + "
        "verifier probes) | "
        "not simulating | distinct | launches ÷ distinct |",
        "|---|---|---|---|---|---|---|",
        f"| {d['wall_s']} | {d['raw_simulation_s']} | {d['wall_per_raw']} | {l['total']} ({l['timed']} + {l['preflight']} + "
        f"{l['correctness_tests']} + {l['correctness_probes']} + {l.get('verifier_probes', 0)}) | "
        f"{l.get('not_simulating', 0)} | "
        f"{d['distinct_questions']} | {d['launches_per_distinct']} |",
        "", "| step | runs | launches | new distinct | product s | raw sim s | product ÷ raw |", "|---|---|---|---|---|---|---|",
        *(f"| {name} | {g['steps']} | {g['launches']} | {g['new_questions']} | {g['product_s']} | {g['raw_s']} | "
          f"{g['product_per_raw'] if g['product_per_raw'] is not None else '—'} |" for name, g in ((n, d["steps"][n]) for n in ORDER))])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--op-dir", type=Path, help="run the demo on this operator folder (its own plan) instead of "
                        "the pypto_softmax example; the result is pypto_sim_<folder name>.json")
    parser.add_argument("--workdir", type=Path, help="a kept demo work folder (else one demo is run)")
    parser.add_argument("--launch-log", type=Path, help="its PERFTUNE_SIM_LAUNCH_LOG file")
    parser.add_argument("--wall", type=float, help="its wall seconds")
    parser.add_argument("--conditions", help="how the run was made (load at its start and end, branch), kept in the JSON")
    args = parser.parse_args(argv)
    if args.workdir:
        if not (args.launch_log and args.wall):
            parser.error("--workdir needs --launch-log and --wall")
        result = analyse(args.workdir, args.launch_log, args.wall)
    else:
        with tempfile.TemporaryDirectory(prefix="bench_pypto_sim_") as tmp:
            work, log = Path(tmp) / "work", Path(tmp) / "launches.jsonl"
            wall, summary = run_demo(work, log, args.op_dir)
            result = {**analyse(work, log, wall), "verdicts": verdicts(summary)}
    if args.conditions:
        result["conditions"] = args.conditions
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"pypto_sim_{args.op_dir.name}.json" if args.op_dir else "pypto_sim.json"
    (args.out / name).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(table(result))
    if "verdicts" in result:
        print(json.dumps(result["verdicts"], sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
