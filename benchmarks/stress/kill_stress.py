#!/usr/bin/env python3
"""SIGKILL crash-safety stress: kill collectors, ledger edits, state transitions and report writers.

Builds a one-case copy of examples/softmax (frozen, cpu, repeats 3, warmup 0; ledger and state
initialised; two formal rounds), then runs ``--trials`` trials cycling through four kinds:

  collector  collect_perf.py formal
  ledger     ledger.py update --item general-18 --note <token>
  state      orchestrator_state.py fail_stage / start_stage on stage 1 (whichever the state allows)
  report     compare_perf.py formal round_001 vs the newest complete round (performance.json, .log,
             perf_report.md, figures)

Each trial starts the script in its own process group and SIGKILLs the whole group after a random
delay drawn uniformly from [0, 1.2 x the kind's calibrated duration] (so about one trial in six
finishes). After every trial: every JSON file parses (fsio.read_json) and validates against its
schema; every round is labelled, and a round that says ``complete`` loads with its evidence seal
and recomputed samples (a killed round stays in_progress or failed, never complete); every ledger
token of an update that exited 0 is in the history exactly once and no token appears twice; the
ledger revision equals 1 + the number of applied updates; the state's stage-1 retry count equals
the number of applied fail_stage calls. At the end one unkilled run of each kind must succeed:
a new round with the next number, an update, a transition, a compare.

usage:
  python benchmarks/stress/kill_stress.py [--trials N] [--seed S] [--work DIR] [--json]
example:
  python benchmarks/stress/kill_stress.py --trials 120 --json
exit codes: 0 every invariant held, 1 a violation (listed), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # benchmark script, not library

import common  # noqa: E402
from perftune.measure import evidence  # noqa: E402
from perftune import fsio

KINDS = ("collector", "ledger", "state", "report")
ITEM = "general-18"


def kill_after(argv: list[str], delay: float) -> tuple[bool, int]:
    """Run ``argv`` in a new process group; SIGKILL the group after ``delay`` s. (killed, returncode)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return False, proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return True, proc.wait()


class Stress:
    def __init__(self, op: Path, rng: random.Random) -> None:
        self.op, self.rng = op, rng
        self.duration: dict[str, float] = {}
        self.tokens_ok: set[str] = set()
        self.fails_ok = 0
        self.fails_maybe = 0
        self.killed = {k: 0 for k in KINDS}
        self.finished = {k: 0 for k in KINDS}

    def argv(self, kind: str, token: str) -> list[str]:
        op = self.op
        if kind == "collector":
            return common.command("collect_perf.py", "formal", "--op-dir", op)
        if kind == "ledger":
            return common.command("ledger.py", "update", "--op-dir", op, "--item", ITEM, "--note", token)
        if kind == "report":  # performance.json always describes the newest complete round
            newest = [r["name"] for r in evidence.list_rounds(op) if r["status"] == "complete"][-1]
            return common.command("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_001",
                                  "--candidate", newest)
        status = fsio.read_json(op / ".orchestrator_state.json")["stage_status"]["1"]
        action = ("fail_stage", "--reason", token) if status == "in_progress" else ("start_stage",)
        return common.command("orchestrator_state.py", action[0], "--op-dir", op, *common.ACTOR, "--stage", "1",
                              *action[1:])

    def calibrate(self) -> None:
        """Time one unkilled run of each kind (the collector twice: these are rounds 1 and 2)."""
        for kind in ("collector", "collector", "ledger", "state", "report"):
            start = time.monotonic()
            killed, code = kill_after(self.argv(kind, f"calibrate-{kind}"), 900)
            if code != 0:
                raise SystemExit(f"calibration run of {kind} failed with exit {code}")
            self.duration[kind] = time.monotonic() - start
            if kind == "ledger":
                self.tokens_ok.add("calibrate-ledger")
            self.fails_ok += kind == "state"  # stage 1 starts in_progress, so this was a fail_stage

    def trial(self, kind: str, number: int) -> None:
        token = f"trial-{number:04d}"
        argv = self.argv(kind, token)
        is_fail = kind == "state" and "fail_stage" in argv
        killed, code = kill_after(argv, self.rng.uniform(0, 1.2 * self.duration[kind]))
        (self.killed if killed else self.finished)[kind] += 1
        if kind == "ledger" and not killed and code == 0:
            self.tokens_ok.add(token)
        if is_fail:
            if killed:
                self.fails_maybe += 1
            elif code == 0:
                self.fails_ok += 1

    def ledger_problems(self) -> list[str]:
        led = fsio.read_json(self.op / "docs/perf/ledger.json")
        item = next(i for i in led["items"] if i["item_id"] == ITEM)
        notes = [h["note"] for h in item["history"] if h["action"] == "update"]
        problems = [f"ledger: token {t} of a finished update is missing" for t in sorted(self.tokens_ok - set(notes))]
        problems += [f"ledger: note {n} recorded twice" for n in set(notes) if notes.count(n) > 1]
        applied = sum(len([h for h in i["history"] if h["action"] == "update"]) for i in led["items"])
        if led["revision"] != 1 + applied:
            problems.append(f"ledger: revision {led['revision']} but {applied} updates in the history")
        return problems

    def state_problems(self) -> list[str]:
        state = fsio.read_json(self.op / ".orchestrator_state.json")
        retries = state["stage_retry_count"]["1"]
        if not self.fails_ok <= retries <= self.fails_ok + self.fails_maybe:
            return [f"state: retry count {retries} outside [{self.fails_ok}, {self.fails_ok + self.fails_maybe}]"]
        if state["stage_status"]["1"] not in ("in_progress", "failed"):
            return [f"state: stage 1 is {state['stage_status']['1']}"]
        return []

    def audit(self) -> tuple[dict, list[str]]:
        files, problems = common.audit_json(self.op)
        rounds, round_problems = common.audit_rounds(self.op)
        return {"json_files": files, "rounds": rounds}, problems + round_problems + self.ledger_problems() + \
            self.state_problems()

    def continue_after(self) -> list[str]:
        """One unkilled run of each kind must work on the crashed-into tree."""
        problems = []
        before = max(int(r["name"][6:]) for r in evidence.list_rounds(self.op))
        for kind in KINDS:
            token = f"final-{kind}"
            proc = subprocess.run(self.argv(kind, token), capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                problems.append(f"next {kind} run failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
            elif kind == "ledger":
                self.tokens_ok.add(token)
            elif kind == "state" and "fail_stage" in proc.args:
                self.fails_ok += 1
        newest = evidence.list_rounds(self.op)[-1]
        if newest["name"] != f"round_{before + 1:03d}" or newest["status"] != "complete":
            problems.append(f"next round is {newest['name']} ({newest['status']}), expected round_{before + 1:03d}")
        return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", type=Path, help="work folder (default: a fresh temp folder, removed after)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("--trials must be >= 1")
    with tempfile.TemporaryDirectory(prefix="kill_stress_") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        stress = Stress(common.one_case_operator(work), random.Random(args.seed))
        stress.calibrate()
        problems: list[str] = []
        for number in range(args.trials):
            stress.trial(KINDS[number % len(KINDS)], number)
            facts, found = stress.audit()
            problems += [f"after trial {number} ({KINDS[number % len(KINDS)]}): {p}" for p in found]
        problems += stress.continue_after()
        facts, found = stress.audit()
        problems += [f"at the end: {p}" for p in found]
        summary = {"trials": args.trials, "killed": stress.killed, "finished": stress.finished,
                   "crashes_survived": sum(stress.killed.values()), "rounds": facts["rounds"],
                   "json_files_checked_last": facts["json_files"],
                   "leftover_temp_files": common.leftover_temp_files(stress.op),
                   "ledger_updates_confirmed": len(stress.tokens_ok), "state_fail_stage_confirmed": stress.fails_ok,
                   "calibrated_seconds": {k: round(v, 2) for k, v in stress.duration.items()},
                   "problems": problems}
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(f"{summary['trials']} trials, {summary['crashes_survived']} SIGKILLs survived "
              f"(killed {stress.killed}, finished {stress.finished}); rounds {facts['rounds']}; "
              f"{summary['leftover_temp_files']} leftover temp files; {len(problems)} problems")
        for line in problems:
            print(f"  PROBLEM {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
