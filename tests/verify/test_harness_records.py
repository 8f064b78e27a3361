"""The P9 harness checks on records the real harness writes (issue 35 item 12: every check id asserted by id).

``harness_guard.CallGuard`` is the cpu runner's own per-call guard; each test makes it observe the
behaviour a check forbids, here in this process (no pipeline: cheap), and ``timed_calls.harness_problems``
(what stage5_check runs on every timed call) must name that check id; its honest twin names none. The
full-pipeline versions of the same cheats: tests/verify/test_cheats_harness.py, tests/cheats/.
"""

from __future__ import annotations

import threading
import time

from perftune.measure.backends import harness_guard
from perftune.verify import timed_calls

OUT = [{"arg": "out", "sha256": "a" * 64}]


def _record(after_return=None, outputs_at_end=("a" * 64,)) -> dict:
    """One timed call under the guard; ``after_return`` runs between the call's return and the test's end."""
    guard = harness_guard.CallGuard(harness_guard.library_snapshot())
    guard.returned()
    if after_return:
        after_return()
    return {"outputs": OUT, "harness": guard.finished(list(outputs_at_end))}


def _ids(record: dict, duration_us: float = 1000.0) -> list[tuple[str, str]]:
    return [(check, category) for check, category, *_ in timed_calls.harness_problems("r/c repeat 1", record,
                                                                                      duration_us)]


def _burn_on_a_thread(seconds: float = 0.05) -> None:
    def spin():
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass
    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()


def test_cpu_used_by_another_thread_after_the_call_returned_is_other_cpu():
    assert ("P9.other_cpu", "cheating") in _ids(_record(_burn_on_a_thread))   # 50 ms of thread CPU >> 250 us


def test_an_output_that_changes_after_return_is_deferred_output():
    assert _ids(_record(outputs_at_end=("b" * 64,))) == [("P9.deferred_output", "cheating")]


def test_a_timed_call_without_a_harness_record_is_harness_missing():
    assert _ids({"outputs": OUT}) == [("P9.harness_missing", "performance_evidence_invalid")]


def test_the_honest_twin_a_call_that_finishes_its_work_before_it_returns():
    assert _ids(_record()) == []


def test_the_time_floor_rule_on_hand_computed_calls():
    """Limit = 1.05 x wall + 20 us; at least 2 broken calls of one round, case and arm (all when fewer)."""
    one = timed_calls.time_floor_problems([("r/c repeat 1", 1070.5, 1000.0)])   # limit 1070.0
    assert [(p[0], p[1], p[3]) for p in one] == [("P9.time_floor", "performance_evidence_invalid",
                                                   "thread CPU <= 1.05 x wall + 20 us = 1070.0 us")]
    assert timed_calls.time_floor_problems([("r/c repeat 1", 1070.0, 1000.0)]) == []
    lone = [("r/c repeat 1", 2000.0, 1000.0), ("r/c repeat 2", 900.0, 1000.0), ("r/c repeat 3", None, 1000.0)]
    assert timed_calls.time_floor_problems(lone) == []     # one interrupt-sized outlier among three calls
    two = lone + [("r/c repeat 4", 300.0, 200.0)]      # limit 230.0
    assert [p[2].split(":")[0] for p in timed_calls.time_floor_problems(two)] == ["r/c repeat 1", "r/c repeat 4"]


def test_a_real_timed_call_keeps_the_floor_and_its_wall_time_rewritten_below_its_cpu_time_breaks_it():
    """The cpu runner's own shim times a call that computes on its thread; its record holds the floor (the
    honest twin); the same record with the wall time written as 0.75 x its thread's CPU time breaks it."""
    from perftune.measure.backends import cpu_runner
    import numpy as np

    def kernel(x):
        end = time.thread_time() + 0.002
        while time.thread_time() < end:
            pass
        return x + 1.0

    shim = cpu_runner.TimingShim(kernel)
    shim(np.ones(8))
    shim.settle()
    wall_us, thread_us = shim.durations_ns[0] / 1000, shim.attestations[0]["harness"]["thread_cpu_us"]
    assert thread_us >= 2000.0
    assert timed_calls.time_floor_problems([("r/c repeat 1", thread_us, wall_us)]) == []
    forged = timed_calls.time_floor_problems([("r/c repeat 1", thread_us, 0.75 * thread_us)])
    assert [p[0] for p in forged] == ["P9.time_floor"]
