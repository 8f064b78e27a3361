"""P8 pipeline and scalar evidence of a pypto-sim case, from the simulator files of its round.

Pure over one repeat folder's raw files (the simulator is deterministic: every repeat of a case
holds the same numbers, so ``repeat_001`` stands for the case). Every number names the file and
field it comes from.

- Pipeline: per core, the busy spans of the compute pipes (``VECTOR_ALU``, ``CUBE``) and of the
  data-movement pipes (``MTE_IN``, ``MTE1``, ``MTE_OUT``) of ``_simulate.pipe.swim.json`` are united
  and intersected (``pypto_sim_files.busy_model``). Overlap > 0 cycles inside a core is ``proven``;
  otherwise ``residual_not_overlapped``: each task moves, computes and stores in sequence, and the
  only parallelism is across cores (counted).
- Platform: without ``--platform`` the shipped ``platforms/pypto-sim-<chip>.json`` of the frozen chip
  (peaks measured as simulated pipe busy rates; docs/pypto-sim-backend.md).
- Scalar (launch overhead, the simulator models no scalar pipe): the share of ``Total Cycles``
  (``_simulate.stat.report.txt``) outside the AICore window, first task start to last task end
  (``_simulate.swim.json`` ``tasks[].execStart/execEnd``): device start-up, scheduling and
  completion. Dominant when the share is above ``roofline.SCALAR_DOMINANT_SHARE``.
- Code-level profile (:func:`case_profile`, the case's ``hotspots``): cycles per tile op summed over
  every core (``profiler.hotspots.tile_ops``, top ``hotspots.TOP_N``; pypto 0.2.0 records no source line)
  and the per-core spread of simulated work (``profiler.occupancy.sim_spread``, ``bubble_analysis.log``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..profiler import hotspots, occupancy, pypto_sim_files as files
from ..measure.backends import pypto_sim
from . import roofline

PLATFORMS = Path(__file__).resolve().parents[3] / "platforms"


def default_platform(simulator: dict[str, Any] | None) -> Path | None:
    """The shipped platform file of the frozen simulated chip (``platforms/pypto-sim-<chip>.json``)."""
    arch = (simulator or {}).get("device_arch", "")
    path = PLATFORMS / f"pypto-sim-{arch.lower()}.json"
    return path if arch and path.is_file() else None


def _repeat(case_dir: Path) -> Path:
    repeat = case_dir / "repeat_001"
    return repeat if (repeat / files.STAT_REPORT).is_file() else repeat / "candidate"   # paired: the candidate


def case_profile(case_dir: Path) -> dict[str, Any]:
    """``{tile_ops, core_spread}`` of one case from ``repeat_001``'s raw files (module docstring)."""
    repeat = _repeat(case_dir)
    rel = repeat.relative_to(case_dir.parent).as_posix()
    pipes, log = repeat / files.PIPE_SWIM_JSON, repeat / files.BUBBLE_LOG
    ops = hotspots.tile_ops(json.loads(pipes.read_text(encoding="utf-8")), str(pipes))
    bubbles = files.parse_bubble_log(log.read_text(encoding="utf-8"), str(log))
    return {"tile_ops": {**ops, "file": f"{rel}/{files.PIPE_SWIM_JSON}"},
            "core_spread": occupancy.sim_spread(bubbles, f"{rel}/{files.BUBBLE_LOG}")}


def case_blocks(case_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``pipeline_evidence``, ``scalar_evidence``) of one case from ``repeat_001``'s raw files."""
    repeat = _repeat(case_dir)
    details = pypto_sim.read_details(repeat)
    rel = repeat.relative_to(case_dir.parent).as_posix()
    window = files.task_window(json.loads((repeat / files.SWIM_JSON).read_text(encoding="utf-8")))
    return _pipeline(details["busy_model"], rel), _scalar(details, window, rel)


def _pipeline(model: dict[str, Any], rel: str) -> dict[str, Any]:
    source = f"{rel}/{files.PIPE_SWIM_JSON} pipeLogs[].execStart/execEnd"
    overlap = sum(block["overlap_cycles"] for block in model.values())
    per_kind = [f"{kind}: {b['cores']} cores, task {b['task_cycles']} cycles, busy {b['busy_cycles']} cycles, "
                f"compute/data-movement overlap {b['overlap_cycles']} cycles ({source})"
                for kind, b in sorted(model.items())]
    if overlap > 0:
        return {"status": "proven", "overlap_cycles": overlap, "grounds": per_kind + [
            f"{overlap} cycles of compute overlap data movement inside cores: the simulated schedule realises "
            "the overlap edges of the tile DAG"]}
    return {"status": "residual_not_overlapped", "overlap_cycles": 0, "grounds": per_kind + [
        "no compute span overlaps a data-movement span inside any core: each task loads its tile, computes and "
        "stores it in sequence (COPY_IN -> vector ops -> COPY_OUT depend on each other inside a task)",
        "the parallelism is across cores (counted above); the residual is the data movement of each task"]}


def _scalar(details: dict[str, Any], window: tuple[int, int] | None, rel: str) -> dict[str, Any]:
    total, mhz = details["cycles"], details["frequency_mhz"]
    case_us = details["duration_us"]
    if window is None:
        return {"dominant": "unknown", "fixed_overhead_us": None, "case_time_us": case_us, "share": None,
                "grounds": [f"no task span in {rel}/{files.SWIM_JSON}"]}
    span = window[1] - window[0]
    overhead = total - span
    share = overhead / total
    dominant = share > roofline.SCALAR_DOMINANT_SHARE
    return {"dominant": dominant, "fixed_overhead_us": round(overhead / mhz, 6), "case_time_us": case_us,
            "share": float(f"{share:.6g}"), "grounds": [
                f"Total Cycles {total} ({rel}/{files.STAT_REPORT}); AICore window {window[0]}..{window[1]} = "
                f"{span} cycles ({rel}/{files.SWIM_JSON} tasks[].execStart/execEnd)",
                f"launch overhead outside the AICore window {overhead} cycles = {overhead / mhz:.3f} us at "
                f"{mhz:g} MHz: share {share:.2%} {'>' if dominant else '<='} "
                f"{roofline.SCALAR_DOMINANT_SHARE:.0%} (the simulator models no scalar pipe)"]}
