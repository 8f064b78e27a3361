"""The SKILL's order as a run's step keys must follow it (tests of the demo and perf_next runs).

The step list itself is :mod:`perftune.demo.steps` (SKILL.md's blocks in the order they run); this is
the test's reading of a run against it, kept out of the product (#38 Deliver 6: no helper only tests use).
"""

from __future__ import annotations

from perftune.demo.steps import BY_KEY, ORDER

# steps a run takes only when its evidence asks for them (a gate fails, another version is in place, an item
# repeats a closed experiment, an item is a search, a stage5_check FAIL); every other step runs in every
# complete run with a derived item
WHEN_NEEDED = ("close_gated", "restore", "overlap", "tune_declare", "tune", "reopen")
ITEM_STARTS = ("hypothesis", "overlap", "bottleneck_profile")


def order_problems(ran: list[str]) -> list[str]:
    """Where a run's step keys leave the SKILL's order: each step follows an earlier or the same step,
    except that a new item restarts the loop (a derived item's goes on at its edit: ``derived_add`` -> any
    item step), an item closed without an experiment (``close_preset``, in source order as perf_next gives
    it) may come anywhere before the sweep, and a ``confirm`` whose verdict is ``remeasure`` goes back to
    ``confirm_round`` (SKILL step 26); ``correctness`` (step 1) recurs wherever the SKILL says to run it
    again; a step of phase ``any`` (``restore``, ``reopen``) may come anywhere. Unknown keys are problems too."""
    unknown = [k for k in ran if k not in BY_KEY]
    seq = [k for k in ran if k in ORDER and k != "correctness" and BY_KEY[k].phase != "any"]
    back = [f"{a} -> {b}" for a, b in zip(seq, seq[1:]) if ORDER.index(a) > ORDER.index(b)
            and not (BY_KEY[a].phase == "item" and (b in ITEM_STARTS or a == "derived_add" and BY_KEY[b].phase == "item"))
            and (a, b) != ("confirm", "confirm_round")
            and not (b == "close_preset" and BY_KEY[a].phase != "finish")]
    return [f"unknown step {k}" for k in unknown] + [f"out of order: {x}" for x in back]
