"""Gate P9 of stage5-check on msprof: the whole capture's device time, not only the target's rows.

msprof times the one ``Op Name`` row of the target kernel; work moved into other kernels the op
call launches (an aclnn op, a helper kernel, an AI-CPU task) would not count. Every archived table
of a repeat (``op_summary_PipeUtilization.csv``) holds the whole capture of the runner process, so
each repeat's capture is summarised (``profiler/launches.capture``: the target's compute tasks and
every other op's rows) and the delivered code's is compared with the baseline's on the same case:

- ``P9.capture_window`` (``cheating``): the device time of the ops other than the target rose from
  the baseline to the delivered code by more than ``max(MOVED_SHARE × the baseline's target time,
  MOVED_FLOOR_US)`` (medians over the repeats; the baseline is the paired arm of the final round
  when it has one, else the baseline round): the kernel got faster by handing work to other
  kernels. The message names the ops that grew, the aclnn ops and the non-compute (AI-CPU, HCCL:
  host round trips) ops of the delivered capture.

A table that cannot be read is reported by the gates that time it (P3, P4), not here.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from ..contract import manifest as manifest_mod
from ..errors import PerftuneError
from ..measure import evidence
from ..measure.backends import msprof
from ..profiler import launches, msprof_csv

MOVED_SHARE, MOVED_FLOOR_US = 0.1, 5.0
Problem = tuple[str, str, str, str | None, str | None]


def table_capture(path: Path, op_name: str) -> dict[str, Any] | None:
    """The capture summary of one archived table (None when it cannot be read)."""
    try:
        frame = msprof_csv.read_op_summary(msprof.read_csv_file(path), str(path))
        return launches.capture(frame, op_name, str(path))
    except PerftuneError:
        return None


def arm_capture(rnd: evidence.RoundEvidence, case_id: str, arm: str, op_name: str) -> dict[str, Any] | None:
    """Median target/other device time over the repeats of one arm ('' unpaired) and the last capture."""
    found = []
    for index in range(1, int(rnd.collection.get("repeats") or 0) + 1):
        folder = rnd.cases[case_id].path / f"repeat_{index:03d}" / arm
        summary = table_capture(folder / msprof.TIMING_FILE, op_name)
        if summary is not None:
            found.append(summary)
    if not found:
        return None
    return {**found[-1], "target_us": statistics.median(c["target_us"] for c in found),
            "other_us": statistics.median(c["other_us"] for c in found)}


def moved_problems(where: str, base: dict[str, Any], final: dict[str, Any]) -> list[Problem]:
    """``P9.capture_window`` of one case: other kernels' device time, baseline against delivered."""
    moved = final["other_us"] - base["other_us"]
    limit = max(MOVED_SHARE * base["target_us"], MOVED_FLOOR_US)
    if moved <= limit:
        return []
    before = {o["op_name"]: o["device_us"] for o in base.get("others", [])}
    grew = [o["op_name"] for o in final.get("others", []) if o["device_us"] > before.get(o["op_name"], 0.0)][:5]
    return [("P9.capture_window", "cheating", f"{where}: other kernels' device time rose by {moved:.3f} us "
             f"({base['other_us']:.3f} -> {final['other_us']:.3f} us; target {base['target_us']:.3f} -> "
             f"{final['target_us']:.3f} us): work moved out of the target kernel (grew: {grew}; aclnn ops: "
             f"{final.get('aclnn_ops', [])[:5]}; non-compute ops: {final.get('non_compute_ops', [])[:5]})",
             f"<= {limit:.3f} us more", f"{moved:.3f} us more")]


def _backend(rnd: evidence.RoundEvidence) -> str | None:
    return (rnd.collection.get("environment") or {}).get("backend") or rnd.collection.get("backend")


def problems(man: manifest_mod.Manifest, base: evidence.RoundEvidence, final: evidence.RoundEvidence,
             op_name: str) -> list[Problem]:
    """Every target case of an msprof final round against its baseline (module docstring)."""
    if _backend(final) != "msprof" or final.collection_id == base.collection_id:
        return []
    out: list[Problem] = []
    for case_id in (c for c in man.target_case_ids if c in final.cases):
        delivered = arm_capture(final, case_id, "candidate" if final.paired else "", op_name)
        if final.paired:
            reference = arm_capture(final, case_id, "baseline", op_name)
        else:
            reference = arm_capture(base, case_id, "", op_name) if case_id in base.cases else None
        if delivered and reference:
            out += moved_problems(f"{final.collection_id}/{case_id}", reference, delivered)
    return out
