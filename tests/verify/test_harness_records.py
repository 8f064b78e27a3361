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
