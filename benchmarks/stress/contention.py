#!/usr/bin/env python3
"""Concurrency stress: P processes x U ledger updates, and P processes racing state transitions.

Ledger: P worker processes each run U `ledger.py update` calls at the same time on one ledger
(worker w updates item w mod 8 with a unique note, so several workers share an item). Afterwards
every note is in its item's history exactly once, the revision is 1 + P x U, the revisions in the
history are unique, and ledger_check still reads the file.

State: P worker processes each try U transitions on stage 1 (`fail_stage` when they last saw it
in_progress, else `start_stage`). The guards allow each transition only from the right status, so
every accepted fail_stage is followed by exactly one accepted start_stage; the retry count must
equal the accepted fail_stage calls and every refusal must be the one-line guard error (exit 2).

usage:
  python benchmarks/stress/contention.py [--processes P] [--updates U] [--work DIR] [--json]
example:
  python benchmarks/stress/contention.py --processes 8 --updates 50 --json
exit codes: 0 nothing lost, 1 a violation (listed), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # benchmark script, not library

import common  # noqa: E402
from perftune import fsio  # noqa: E402

ITEMS = ("kb-softmax-output-by-kernel", "kb-softmax-accum-fp32", "general-07", "general-13", "general-18",
         "general-19", "card-vec-01", "template-row-block")
# One worker = one Python process running a loop of real CLI calls (each a fresh process).
WORKER = r"""
import json, subprocess, sys
kind, op, worker, updates, script_dir, items = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6].split(",")
out = []
for n in range(updates):
    if kind == "ledger":
        argv = [sys.executable, f"{script_dir}/ledger.py", "update", "--op-dir", op, "--item", items[worker % len(items)],
                "--note", f"w{worker:02d}-u{n:03d}"]
    else:
        state = json.load(open(f"{op}/.orchestrator_state.json"))
        action = ["fail_stage", "--reason", f"w{worker}-{n}"] if state["stage_status"]["1"] == "in_progress" else ["start_stage"]
        argv = [sys.executable, f"{script_dir}/orchestrator_state.py", action[0], "--op-dir", op,
                "--actor", "pypto-pro-op-orchestrator", "--stage", "1", *action[1:]]
    proc = subprocess.run(argv, capture_output=True, text=True)
    out.append({"action": argv[2] if kind == "state" else "update", "note": f"w{worker:02d}-u{n:03d}",
                "code": proc.returncode, "stderr": proc.stderr.strip()})
print(json.dumps(out))
"""


def race(kind: str, op: Path, processes: int, updates: int) -> list[dict]:
    argv = [sys.executable, "-c", WORKER, kind, str(op)]
    procs = [subprocess.Popen([*argv, str(w), str(updates), str(common.SCRIPTS), ",".join(ITEMS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(processes)]
    with ThreadPoolExecutor(max_workers=processes) as pool:
        outputs = list(pool.map(lambda p: p.communicate(timeout=3600), procs))
    results = []
    for proc, (out, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit(f"worker crashed: {err.strip()[-500:]}")
        results += json.loads(out)
    return results


def ledger_problems(op: Path, results: list[dict], processes: int, updates: int) -> list[str]:
    problems = [f"update {r['note']} exited {r['code']}: {r['stderr']}" for r in results if r["code"] != 0]
    led = fsio.read_json(op / "docs/perf/ledger.json")
    notes = [h["note"] for i in led["items"] for h in i["history"] if h["action"] == "update"]
    revisions = [h["revision"] for i in led["items"] for h in i["history"] if h["action"] == "update"]
    wanted = {r["note"] for r in results if r["code"] == 0}
    problems += [f"lost update {n}" for n in sorted(wanted - set(notes))]
    problems += [f"update {n} recorded {notes.count(n)} times" for n in sorted(set(notes)) if notes.count(n) > 1]
    if len(set(revisions)) != len(revisions):
        problems.append("two updates share a revision number")
    if led["revision"] != 1 + processes * updates:
        problems.append(f"revision {led['revision']} != 1 + {processes * updates}")
    check = common.run("ledger_check.py", "--op-dir", op, "--json")
    if check.returncode not in (0, 1):  # 1 = not closed (items still pending), which is expected here
        problems.append(f"ledger_check could not read the ledger: {check.stderr.strip()}")
    return problems


def state_problems(op: Path, results: list[dict]) -> list[str]:
    ok = [r for r in results if r["code"] == 0]
    refused = [r for r in results if r["code"] != 0]
    problems = [f"{r['action']} exited {r['code']} without a guard message: {r['stderr']}" for r in refused
                if r["code"] != 2 or "guard:" not in r["stderr"] or len(r["stderr"].splitlines()) != 1]
    fails = sum(r["action"] == "fail_stage" for r in ok)
    starts = sum(r["action"] == "start_stage" for r in ok)
    state = fsio.read_json(op / ".orchestrator_state.json")
    if state["stage_retry_count"]["1"] != fails:
        problems.append(f"retry count {state['stage_retry_count']['1']} != {fails} accepted fail_stage calls")
    expected = "in_progress" if fails == starts else "failed"
    if fails - starts not in (0, 1) or state["stage_status"]["1"] != expected:
        problems.append(f"{fails} fails / {starts} starts accepted but stage 1 is {state['stage_status']['1']}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.processes < 2 or args.updates < 1:
        parser.error("need --processes >= 2 and --updates >= 1")
    with tempfile.TemporaryDirectory(prefix="contention_") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        op = common.one_case_operator(work)
        start = time.monotonic()
        ledger_results = race("ledger", op, args.processes, args.updates)
        ledger_s = time.monotonic() - start
        state_results = race("state", op, args.processes, args.updates)
        problems = ledger_problems(op, ledger_results, args.processes, args.updates) + state_problems(op, state_results)
        files, json_problems = common.audit_json(op)
        summary = {
            "processes": args.processes, "updates_per_process": args.updates,
            "ledger_updates_under_contention": len(ledger_results),
            "ledger_updates_applied": sum(r["code"] == 0 for r in ledger_results), "ledger_seconds": round(ledger_s, 1),
            "state_attempts": len(state_results), "state_accepted": sum(r["code"] == 0 for r in state_results),
            "state_refused_by_guard": sum(r["code"] == 2 for r in state_results),
            "json_files_checked": files, "problems": problems + json_problems}
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(f"{summary['ledger_updates_applied']}/{summary['ledger_updates_under_contention']} ledger updates "
              f"applied; state {summary['state_accepted']} accepted, {summary['state_refused_by_guard']} refused "
              f"by guards; {len(summary['problems'])} problems")
        for line in summary["problems"]:
            print(f"  PROBLEM {line}")
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
