"""Terminal evidence on the msprof backend from profiler data (P8), every number with its source.

Inputs, all recomputed from files: the final round's archived op_summary tables of each case
(:func:`case_tables.case_columns`, median over repeats of the target row), the case's
supplemental ``timeline.json`` (:mod:`measure.timeline_collect`, hashes re-checked), the platform
file, and the necessary-work side already computed by :mod:`terminal.roofline` (kept as is).

Per case:
- ``profiler.memory_levels``: bytes moved per level = (read + write bandwidth, GB/s) x the core
  time of the same table (``aiv_time(us)`` for ``aiv_*`` columns, ``aicore_time(us)`` for
  ``aic_*``; a 0.0 written next to real cycles is a missing time, :func:`core_types.core_time`:
  the level then has ``bytes: null`` and ``missing_core_time``, never 0 B); GM from Memory, L1 from Memory (cube), UB from MemoryUB, L0 from MemoryL0. The GM
  bandwidth attained over the case time is compared with the platform's memory peak (its source
  kept). Measured arithmetic intensity = necessary operations / measured GM bytes.
- ``profiler.diagnosis``: the bound label of :func:`profiler.diagnosis.diagnose` (the one rule set
  ``profiler_inspect.py`` applies too) over the repeats' PipeUtilization rows of the target, with the
  chip's core counts from the platform file (``cores``, the chip the device probe named) for the
  occupancy rule, and its next step.
- ``roofline_terminal.status``: :func:`roofline.classify` with the SCALAR pipe ratio as the
  fixed-cost share (the time the core spends issuing scalar work); ``data_movement_bound`` is
  kept only with a measured GM bandwidth, else ``insufficient_evidence``.
- ``pipeline_evidence`` from the timeline: overlap of a movement pipe (MTE1/2/3, FIXPIPE) with a
  compute pipe (VECTOR, CUBE) counted only inside one lane; ``proven`` when it is at least
  :data:`PROVEN_MIN_SHARE` of the shorter busy time, ``residual_not_overlapped`` when both kinds
  are busy but do not overlap that much (coincidence on different lanes is not overlap),
  ``not_applicable_with_dag`` when only one kind is busy (no movement/compute edge to overlap).
- ``scalar_evidence.dominant``: the SCALAR ratio of the primary core's side
  (:func:`case_tables.pipe_ratios`, the side routing reads; never the nearly idle side of a MIX
  kernel) above ``roofline.SCALAR_DOMINANT_SHARE``; the
  timeline's SCALAR busy fraction is given beside it.
A missing metric group, timeline or timeline file is a :class:`ContractError` naming it;
:func:`verify` turns it into a P8 problem.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import ContractError, PerftuneError
from ..measure import devices, evidence
from ..profiler import case_tables, core_types, diagnosis, occupancy, timeline
from ..measure.timeline_collect import timeline_path
from . import roofline

PROVEN_MIN_SHARE = 0.05
LEVELS = {
    "GM": ("Memory", ("aiv_main_mem_read_bw(GB/s)", "aiv_main_mem_write_bw(GB/s)", "aic_main_mem_read_bw(GB/s)",
                      "aic_main_mem_write_bw(GB/s)")),
    "L1": ("Memory", ("aic_l1_read_bw(GB/s)", "aic_l1_write_bw(GB/s)")),
    "UB": ("MemoryUB", ("aiv_ub_read_bw_vector(GB/s)", "aiv_ub_write_bw_vector(GB/s)", "aiv_ub_read_bw_scalar(GB/s)",
                        "aiv_ub_write_bw_scalar(GB/s)")),
    "L0": ("MemoryL0", ("aic_l0a_read_bw(GB/s)", "aic_l0a_write_bw(GB/s)", "aic_l0b_read_bw(GB/s)",
                        "aic_l0b_write_bw(GB/s)", "aic_l0c_read_bw_cube(GB/s)", "aic_l0c_write_bw_cube(GB/s)")),
}


def _cite(c: dict[str, Any]) -> dict[str, Any]:
    return {k: c[k] for k in ("metric", "column", "value", "files", "rows", "aggregation", "core") if k in c}


def memory_levels(columns: dict, case_us: float, peak: roofline.Peak) -> dict[str, Any]:
    out = {}
    for level, (metric, names) in LEVELS.items():
        table, parts, missing = columns.get(metric, {}), [], []
        for name in names:
            core = "aiv" if name.startswith("aiv_") else "aic"
            time_col, cycles_col = core_types.TIME[core], core_types.CYCLES[core]
            if name not in table or time_col not in table:
                continue
            cycles = table[cycles_col]["value"] if cycles_col in table else None
            time_us, how = core_types.core_time(table[time_col]["value"], cycles)
            if time_us is None:
                missing.append({"bandwidth": name, "core_time": time_col, "reason": how})
                continue
            parts.append({"bytes": table[name]["value"] * time_us * 1e3,
                          "bandwidth": _cite(table[name]), "core_time_us": _cite(table[time_col])})
        if parts:
            out[level] = {"bytes": _r(sum(p["bytes"] for p in parts)), "from": parts}
        elif missing:   # never 0 B from a 0.0 that means "not written"
            out[level] = {"bytes": None, "missing_core_time": missing}
    if (out.get("GM") or {}).get("bytes") is not None:
        rate = out["GM"]["bytes"] / (case_us * 1e-6)
        out["GM"].update(attained_bytes_per_s=_r(rate), peak_bytes_per_s=peak.value, peak_status=peak.status,
                         peak_source=peak.source, fraction_of_peak=_r(rate / peak.value))
    return out


def case_diagnosis(columns: dict, cores: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`diagnosis.diagnose` of the case over its repeats (one launch per repeat)."""
    rows = case_tables.launch_rows(columns)
    return diagnosis.diagnose(rows, [r.get(protocol.TIMING_COLUMN) for r in rows], cores=cores)


def load_timeline(op_dir: Path, rnd: evidence.RoundEvidence, case_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    path = timeline_path(op_dir, rnd.path.name, case_id)
    shown = fsio.display_path(path, op_dir)
    if not path.is_file():
        raise ContractError(path, "timeline", f"instruction timeline {shown} is missing",
                            f"run instruction_timeline.py collect --op-dir {op_dir} --round {rnd.path.name}")
    doc = fsio.read_json(path, what="timeline.json")
    if doc.get("round", {}).get("collection_id") != rnd.collection_id or doc.get("case") != case_id:
        raise ContractError(path, "round", f"{shown} belongs to another round or case", "collect it for this round")
    for record in doc.get("files", []):
        if not fsio.record_matches(record, op_dir):
            raise ContractError(path, "files", f"timeline file {record.get('path')} is missing or changed",
                                "re-collect the timeline; never edit it")
    if doc.get("model", {}).get("completeness", {}).get("status") != "complete":
        raise ContractError(path, "completeness", f"{shown} is incomplete", "re-collect the timeline")
    return doc, {**fsio.file_record(path, op_dir), "collection_kind": doc.get("collection_kind")}


def pipeline_block(model: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    pipes, overlap = model["pipes"], model["overlap_same_lane"]
    moving = {f: pipes[f]["busy"] for f in timeline.MEMORY_PIPES if f in pipes}
    computing = {f: pipes[f]["busy"] for f in timeline.COMPUTE_PIPES if f in pipes}
    pairs = {k: v for k, v in overlap.items() if len({*k.split("|")} & set(moving)) == 1
             and len({*k.split("|")} & set(computing)) == 1}
    lanes = [{"lane": r["lane"], "overlap": r["overlap"]} for r in model["lanes"] if r.get("overlap")]
    source = {"timeline": ref["path"], "sha256": ref["sha256"], "field": "model.overlap_same_lane", "lanes": lanes}
    if not moving or not computing:
        return {"status": "not_applicable_with_dag", "source": source, "grounds": [
            f"only {sorted(moving) or sorted(computing)} busy in the target window: no movement/compute pair to overlap"]}
    shorter, total = min(sum(moving.values()), sum(computing.values())), sum(pairs.values())
    share = total / shorter if shorter > 0 else 0.0
    status = "proven" if share >= PROVEN_MIN_SHARE else "residual_not_overlapped"
    return {"status": status, "overlap_share": _r(share), "overlap": pairs, "source": source, "grounds": [
        f"movement pipes busy {moving}, compute pipes busy {computing} ({model['unit']}) in the one target window",
        f"overlap inside one lane {_r(total)} = {share:.1%} of the shorter side "
        f"({'>=' if status == 'proven' else '<'} {PROVEN_MIN_SHARE:.0%}); spans on different lanes never count"]}


def case_evidence(op_dir: Path, rnd: evidence.RoundEvidence, case, op_name: str, entry: dict[str, Any],
                  platform: roofline.Platform, cores: dict[str, Any] | None = None) -> dict[str, Any]:
    """``entry`` (the cpu-shaped block with the necessary-work roofline) completed from profiler data."""
    out = copy.deepcopy(entry)
    roof = out["roofline_terminal"]
    columns = case_tables.case_columns(rnd.cases[case.id].path, op_name, op_dir)
    doc, ref = load_timeline(op_dir, rnd, case.id)
    ratios = case_tables.pipe_ratios(columns)
    levels = memory_levels(columns, roof["measured_us"], platform.peaks["memory_bytes_per_s"])
    scalar = ratios.get("SCALAR")
    share = scalar["value"] if scalar else None
    status, reason = roofline.classify(roof["attained_fraction"], roof["compute_to_memory_ratio"], share)
    measured_gm = (levels.get("GM") or {}).get("bytes") is not None
    if status == "data_movement_bound" and not measured_gm:
        status, reason = "insufficient_evidence", "memory bound needs the measured GM bandwidth (Memory group)" + (
            " and the core time it was measured over (missing: 0.0 written next to real cycles)"
            if "GM" in levels else "")
    if measured_gm:
        gm = levels["GM"]
        reason += (f"; measured GM traffic {gm['bytes']:.4g} B at {gm['attained_bytes_per_s']:.4g} B/s = "
                   f"{gm['fraction_of_peak']:.1%} of the {gm['peak_status']} peak")
        roof["measured_arithmetic_intensity_ops_per_byte"] = _r(
            (roof["arithmetic_ops"] + roof["transcendental_ops"]) / gm["bytes"]) if gm["bytes"] > 0 else None
    roof.update(status=status, reason=reason, fixed_share_source=_cite(scalar) if scalar else None)
    model = doc["model"]
    scalar_busy = model["pipes"].get("SCALAR", {}).get("mean_busy_fraction")
    out["scalar_evidence"] = {
        "dominant": "unknown" if share is None else share > roofline.SCALAR_DOMINANT_SHARE, "share": share,
        "case_time_us": roof["measured_us"], "fixed_overhead_us": None, "timeline_busy_fraction": scalar_busy,
        "sources": {"share": _cite(scalar) if scalar else None,
                    "timeline_busy_fraction": {"timeline": ref["path"], "field": "model.pipes.SCALAR"}},
        "core": scalar["core"] if scalar else None,
        "grounds": [f"SCALAR ratio {share} (PipeUtilization {scalar['column'] if scalar else 'absent'}, the primary "
                    f"core's side: {scalar['primary_core_basis'] if scalar else 'no primary core'}) vs "
                    f"{roofline.SCALAR_DOMINANT_SHARE:.0%}", f"timeline SCALAR busy fraction per lane {scalar_busy}"]}
    out["pipeline_evidence"] = pipeline_block(model, ref)
    out["profiler"] = {"diagnosis": case_diagnosis(columns, cores), "memory_levels": levels, "timeline": ref}
    return out


def apply(op_dir: Path, rnd: evidence.RoundEvidence, manifest, platform_path: Path, platform_obj: dict[str, Any],
          platform: roofline.Platform, cases: list[dict[str, Any]], *, probe: bool = True) -> dict[str, Any]:
    """Replace each msprof case block in place; returns the document-level additions."""
    probed = devices.check_platform(platform_obj, platform_path, devices.probe_chip(manifest.protocol.device_id)) \
        if probe else None
    by_id = {c.id: c for c in manifest.cases}
    cores = occupancy.cores_of(platform_obj, (probed or {}).get("chip_name"))
    for index, entry in enumerate(cases):
        cases[index] = case_evidence(op_dir, rnd, by_id[entry["case"]], manifest.protocol.op_name, entry, platform,
                                     cores)
    return {"device_probe": probed}


def verify(op_dir: Path, doc: dict[str, Any], manifest) -> list[str]:
    """P8 on msprof: re-derive every profiler-based block; name what is missing or differs."""
    missing = missing_metric_groups(op_dir, doc)
    if missing:
        return missing
    try:
        rnd = evidence.load_round(op_dir, doc["round"]["collection_id"])
        record = doc["platform"]["file"]
        path = Path(record["path"]) if Path(record["path"]).is_absolute() else op_dir / record["path"]
        if not fsio.record_matches(record, op_dir):
            return [f"platform file {record['path']} is missing or changed since the terminal evidence was built"]
        obj = fsio.read_json(path, what="platform file")
        platform = roofline.parse_platform(obj, str(path))
    except (PerftuneError, KeyError) as exc:
        return [f"terminal evidence inputs: {exc.line() if isinstance(exc, PerftuneError) else exc}"]
    out = []
    if (doc.get("device_probe") or {}).get("platform_id") != platform.platform_id:
        out.append("no device-architecture probe matched the platform file (device_probe)")
    by_id = {c.id: c for c in manifest.cases}
    cores = occupancy.cores_of(obj, (doc.get("device_probe") or {}).get("chip_name"))
    for entry in doc["cases"]:
        if entry["case"] not in by_id:
            continue
        try:
            again = case_evidence(op_dir, rnd, by_id[entry["case"]], manifest.protocol.op_name, entry, platform, cores)
        except PerftuneError as exc:
            out.append(f"case {entry['case']}: missing evidence: {exc.problem} ({fsio.display_path(exc.file, op_dir)})")
            continue
        for key in ("pipeline_evidence", "scalar_evidence", "profiler"):
            if again.get(key) != entry.get(key):
                out.append(f"case {entry['case']}: {key} is not what the profiler data and timeline give")
        if again["roofline_terminal"]["status"] != entry["roofline_terminal"]["status"]:
            out.append(f"case {entry['case']}: roofline status is not what the profiler data give")
    return out


def missing_metric_groups(op_dir: Path, doc: dict[str, Any]) -> list[str]:
    """Named before the round is loaded (a removed table would otherwise only break the seal)."""
    try:
        folder = fsio.safe_join(op_dir, doc["round"]["path"], field="round.path")
    except (PerftuneError, KeyError):
        return []
    out = []
    for case_dir in sorted(folder.glob("case_*")):
        for repeat in case_tables.repeat_dirs(case_dir):
            for metric in protocol.METRIC_GROUPS:
                if not (repeat / f"op_summary_{metric}.csv").is_file():
                    out.append(f"{case_dir.name}: missing evidence: metric group {metric} "
                               f"(op_summary_{metric}.csv) is missing in {repeat.relative_to(case_dir).as_posix()}")
    return out


def _r(value: float) -> float:
    return float(f"{value:.6g}")
