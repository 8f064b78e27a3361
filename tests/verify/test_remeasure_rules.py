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


def test_the_delivered_work_clears_a_wall_figure_that_load_moved():
    # the CI run that failed the shape_plan twin (0.2.43): delivered 33.071 (its baseline's wall time stretched
    # at delivery), re-measured 16.487 [15.391, 24.205], fastest final 418.14 vs 586.69 us: both wall tests fail
    delivered = {"speedup": 33.071, "verdict": "faster", "samples": {"final": [418.14, 431.0]}}
    again, final_us = result(16.487, 15.391, 24.205), [586.69, 601.0]
    assert "R2" in remeasure.reproduction_problem(delivered, again, final_us)
    # the work figures of that kernel measured delivered at load 3-5 and re-measured (CPU time, wall/CPU per call)
    measured = {"cpu_speedup": 15.216, "wall_per_cpu": [1.0, 1.12, 1.31]}
    honest = {**delivered, "work": {"cpu_speedup": 14.721, "wall_per_cpu": [0.98, 0.99, 1.01]}}
    assert remeasure.reproduction_problem(honest, again, final_us, measured) is None
    # the wall samples rewritten, the CPU fields not: its calls now take less wall than CPU time
    wall_only = {**delivered, "work": {"cpu_speedup": 14.721, "wall_per_cpu": [0.29, 0.3, 0.31]}}
    assert "R2" in remeasure.reproduction_problem(wall_only, again, final_us, measured)
    # both rewritten alike (x0.3): the CPU-time speed-up claims 3.3x the re-measured one
    both = {**delivered, "work": {"cpu_speedup": 49.07, "wall_per_cpu": [0.98, 0.99, 1.01]}}
    assert "CPU-time speed-up 49.070" in remeasure.reproduction_problem(both, again, final_us, measured)
    assert "R2" in remeasure.reproduction_problem(honest, again, final_us, None)   # no CPU time re-measured


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
    from perftune.decide import attempts
    lucky = [("round_002", 1.95, [1.8, 2.1]), ("round_003", 2.0, [1.85, 2.2]), ("round_004", 13.3, [12.0, 14.0])]
    got = attempts.holds(13.3, lucky)
    assert (got["figure"], got["median_round"], got["median"], got["attempts"]) == ("median", "round_003", 2.0, 3)
    assert attempts.describe(got) == ("median of 3 final attempts (round_002, round_003, round_004): 2.0000 from "
                                      "round_003, not the final round's own 13.3000")
    assert attempts.holds(2.1, lucky[:2] + [("round_004", 2.1, [2.0, 2.3])])["figure"] == "final_round"
    assert attempts.holds(13.3, lucky[2:])["figure"] == "final_round"     # one attempt: nothing to weigh
    row = {"speedup": 13.3, "speedup_ci": [12.0, 14.0]}                    # the renderer's row, in place
    attempts.apply_case(row, lucky[:2], "round_004")
    assert (row["speedup"], row["speedup_ci"], row["attempts"]["rounds"]) == \
        (2.0, [1.85, 2.2], ["round_002", "round_003", "round_004"])
    suite = {"score": 13.3, "ci": [12.0, 14.0], "mean_case_speedup": 13.3, "geomean_speedup": 13.3,
             "mean_ci": [12.0, 14.0], "geomean_ci": [12.0, 14.0], "verdict": "faster"}
    blocks = [(name, {"score": p, "ci": ci, "mean_case_speedup": p, "geomean_speedup": p, "mean_ci": ci,
                      "geomean_ci": ci}) for name, p, ci in lucky[:2]]
    attempts.apply_suite(suite, blocks, "round_004")
    assert (suite["score"], suite["geomean_ci"], suite["verdict"]) == (2.0, [1.85, 2.2], "faster")


def test_the_paired_arm_rule_pools_the_fastest_samples_of_the_moments():
    """verify/baseline_arm.judge: one moment slowed throughout (load) decides nothing; 2x everywhere does."""
    from perftune.verify import baseline_arm
    slowed_moment = {"arm_us": [250.0, 240.0], "alone_us": [260.0, 140.0]}   # a whole moment under load
    honest = [slowed_moment, {"arm_us": [7.4, 7.9], "alone_us": [7.2, 8.0]}, {"arm_us": [7.1, 9.0], "alone_us": [6.9, 8.7]}]
    doubled = [{"arm_us": [2 * a for a in m["arm_us"]], "alone_us": m["alone_us"]} for m in honest[1:]]
    assert baseline_arm.judge(honest)["slowed"] is False and baseline_arm.judge(honest)["ratio"] < 1.1
    verdict = baseline_arm.judge([slowed_moment] + doubled)
    assert verdict["slowed"] is True and 2.0 < verdict["ratio"] < 2.2 and verdict["limit"] == baseline_arm.ARM_LIMIT
    once = baseline_arm.judge(doubled + [{"arm_us": [30.0], "alone_us": [28.0]}])   # one moment: both slowed alike
    assert once["ratio"] > baseline_arm.ARM_LIMIT and once["slowed"] is False and min(once["moment_ratios"]) < 1.1


def test_the_paired_arm_rule_on_cpu_time_holds_where_load_blurs_wall_time():
    """Measured at load ~17 (tests/cheats arm_sabotage_2x): wall-time moments read 1.35, 1.53, 5.9 for a 2x
    sabotage; the calls' CPU time is what load does not inflate."""
    from perftune.verify import baseline_arm
    blurred = [{"arm_us": [23983.0], "alone_us": [17774.0]}, {"arm_us": [79036.0], "alone_us": [51724.0]},
               {"arm_us": [40772.0], "alone_us": [6892.0]}]
    doubled = [{**row, "arm_cpu_us": [14.1e3, 14.6e3], "alone_cpu_us": [7.0e3, 7.3e3]} for row in blurred]
    honest = [{**row, "arm_cpu_us": [7.2e3, 7.9e3], "alone_cpu_us": [7.0e3, 7.3e3]} for row in blurred]
    assert baseline_arm.judge(blurred)["slowed"] is False       # wall time alone: one moment under 1.5
    assert baseline_arm.judge(doubled)["slowed"] is True and baseline_arm.judge(doubled)["wall_slowed"] is False
    assert baseline_arm.judge(honest)["slowed"] is False


def test_the_fresh_data_rule_clears_a_wall_time_collapse_the_cpu_time_does_not_share():
    """Measured at load ~17: an honest fp32 kernel read 33x on fresh data vs 135x on the frozen inputs (wall
    time); its calls' CPU time did not move. A content cache saves CPU work, so it collapses on both."""
    assert remeasure.fresh_problem(135.0, 33.0) is not None                      # wall time alone: a false FAIL
    assert remeasure.fresh_problem(135.0, 33.0, (120.0, 118.0)) is None          # the CPU work held
    cache = remeasure.fresh_problem(50.0, 1.1, (45.0, 1.0))
    assert cache is not None and "on CPU time 1.000 vs 45.000" in cache          # a cache: both collapse
    assert remeasure.fresh_problem(50.0, 1.1, (None, 1.0)) is not None           # no seed-42 CPU figure: wall rule
    assert remeasure.fresh_problem(50.0, 40.0, (45.0, 1.0)) is None              # the wall speed-up holds anyway
