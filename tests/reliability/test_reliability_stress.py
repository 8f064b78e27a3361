"""Crash safety and contention, scaled down for CI: the real stress scripts in benchmarks/stress/.

kill_stress.py SIGKILLs collectors, ledger edits, state transitions and report writers at random
points and audits every JSON file, every round and the ledger/state histories after each kill;
contention.py races P processes x U ledger updates and state transitions. Full sizes (>= 100
kills, 8 x 50 updates) are run by hand; the counts are in docs/reliability.md.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

STRESS = ROOT / "benchmarks" / "stress"


def run_stress(name: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, str(STRESS / name), *args, "--json"], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def test_sigkill_at_random_points_loses_nothing_and_the_next_run_continues(tmp_path):
    out = run_stress("kill_stress.py", "--trials", "8", "--seed", "7", "--work", str(tmp_path))
    assert out["problems"] == []
    assert out["trials"] == 8 and sum(out["killed"].values()) + sum(out["finished"].values()) == 8
    assert all(out["killed"][k] + out["finished"][k] == 2 for k in ("collector", "ledger", "state", "report"))
    assert out["crashes_survived"] >= 4
    assert out["rounds"].get("complete", 0) >= 3  # two calibration rounds + the final unkilled one
    assert set(out["rounds"]) <= {"complete", "in_progress", "failed"}


def test_four_processes_racing_ledger_updates_and_state_transitions_lose_nothing(tmp_path):
    out = run_stress("contention.py", "--processes", "4", "--updates", "6", "--work", str(tmp_path))
    assert out["problems"] == []
    assert out["ledger_updates_under_contention"] == out["ledger_updates_applied"] == 24
    assert out["state_attempts"] == 24 and out["state_accepted"] + out["state_refused_by_guard"] == 24
    assert out["state_accepted"] >= 1


def test_stress_scripts_explain_themselves():
    for name in ("kill_stress.py", "contention.py"):
        proc = subprocess.run([sys.executable, str(STRESS / name), "--help"], capture_output=True, text=True)
        assert proc.returncode == 0 and "usage:" in proc.stdout and "example:" in proc.stdout
