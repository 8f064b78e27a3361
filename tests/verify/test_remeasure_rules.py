"""The stated rules of stage5-check P10 (reproduction, moved work) and the P2 fingerprint rule."""

from __future__ import annotations

from perftune.decide.stats import SpeedupResult
from perftune.measure import fingerprint
from perftune.verify import remeasure


def result(point, low, high, verdict="faster"):
    return SpeedupResult(point=point, ci_low=low, ci_high=high, verdict=verdict, reason_code="x", delta=0.05,
                         mann_whitney_p=None, prob_candidate_faster=None, n_baseline=10, n_candidate=10,
                         method="bootstrap")


def test_reproduction_is_one_sided_with_the_tolerance():
    delivered = {"speedup": 10.0, "verdict": "faster"}
    assert remeasure.reproduction_problem(delivered, result(30.0, 20.0, 40.0)) is None      # busier deliverable
    assert remeasure.reproduction_problem(delivered, result(7.9, 7.5, 8.1)) is None         # 10 * 0.8 <= 8.1
    assert "R2" in remeasure.reproduction_problem(delivered, result(7.0, 6.5, 7.5))
    slow = {**delivered, "samples": {"final": [100.0, 120.0]}}      # measured under load: its samples are slow
    assert remeasure.reproduction_problem(slow, result(7.0, 6.5, 7.5), [110.0, 115.0]) is None
    assert "R2" in remeasure.reproduction_problem(slow, result(7.0, 6.5, 7.5), [130.0, 140.0])
    assert "R1" in remeasure.reproduction_problem(delivered, result(0.9, 0.8, 0.95, "slower"))


def gap(base_gap, final_gap, final_op):
    return {"arms": {"baseline": {"wrapper": "w", "op_us": [1000.0] * 3, "wrapper_us": [1000.0 + base_gap] * 3},
                     "candidate": {"wrapper": "w", "op_us": [final_op] * 3, "wrapper_us": [final_op + final_gap] * 3}}}


def test_work_moved_into_the_wrapper_is_named():
    assert remeasure.moved_work(gap(10, 12, 300))[1] is None
    figures, problem = remeasure.moved_work(gap(10, 900, 100))
    assert figures["moved_us"] == 890 and "softmax" not in problem and "w" in problem
    assert remeasure.moved_work({"arms": {"baseline": {"wrapper": None, "op_us": [1.0], "wrapper_us": None}}})[1] is None


def test_fingerprint_mismatch_names_the_field():
    env = fingerprint.cpu()
    assert env["backend"] == "cpu" and env["cpu_count"] >= 1
    assert fingerprint.mismatch({"environment": env}, {"environment": env}) is None
    other = {**env, "numpy": "0.0"}
    assert fingerprint.mismatch({"environment": env}, {"environment": other}).startswith("environment.numpy:")
    assert "only one round" in fingerprint.mismatch({"environment": env}, {})


def test_the_figure_that_holds_is_two_sided_and_never_a_failure():
    attempts = [{"speedup": 25.5, "speedup_ci": [2.94, 31.5]}, {"speedup": 30.0, "speedup_ci": [28.0, 33.0]}]
    inside = remeasure.figure_holds({"speedup": 32.0}, attempts)          # inside the second attempt's CI
    assert (inside["holds"], inside["delivered"]) == ("delivered", 32.0)
    for claimed in (54.7, 2.0):                                            # above every CI, and below
        got = remeasure.figure_holds({"speedup": claimed}, attempts)
        assert (got["holds"], got["re_measured"], got["ci"]) == ("re-measured", 30.0, [28.0, 33.0])
    assert remeasure.figure_holds({"speedup": 5.0}, [])["holds"] == "delivered"   # nothing re-measured


def test_every_final_attempt_counts_the_median_holds_over_a_lucky_last_round():
    from perftune.verify import final_attempts
    lucky = [("round_002", 1.95, [1.8, 2.1]), ("round_003", 2.0, [1.85, 2.2]), ("round_004", 13.3, [12.0, 14.0])]
    got = final_attempts.holds(13.3, lucky)
    assert (got["holds"], got["median_round"], got["median"], got["attempts"]) == ("median", "round_003", 2.0, 3)
    assert "median 2.000" in final_attempts.lines({"final_attempts": {"cases": {"c": got}}})
    assert final_attempts.holds(2.1, lucky[:2] + [("round_004", 2.1, [2.0, 2.3])])["holds"] == "delivered"
    assert final_attempts.holds(13.3, lucky[2:])["holds"] == "delivered"     # one attempt: nothing to weigh
