"""Gather the Stage 5 evidence and write ``PERFORMANCE_REPORT.md`` with its figures.

Every number is recomputed from disk by the decision modules: the compare of the baseline and
final rounds named in ``performance.json`` (``compare.load_formal``), the ranking
(``candidates.rank``); the ledger and terminal evidence are validated before rendering.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..decide import candidates, compare, ledger, search
from ..measure import evidence
from .. import fsio
from ..contract import manifest, protocol, schemas
from . import final_md, formal

TERMINAL_NAME = "terminal_evidence.json"


def _optional(path: Path, load, *args) -> Any:
    """None when ``path`` was never written; a present but invalid file is an error (exit 2)."""
    return load(*args) if path.exists() else None


def _confirm(root: Path) -> dict[str, Any] | None:
    """The last confirm attempt, recomputed from its rounds (None when confirm never ran)."""
    path = candidates.confirm_path(root)
    if not path.is_file():
        return None
    attempts = fsio.read_json(path, what="confirm log").get("attempts") or [{}]
    return {**candidates.evaluate_confirm(root, attempts[-1].get("final_collection_id") or ""),
            "attempt": attempts[-1].get("attempt"), "limit": attempts[-1].get("limit")}


def _terminal(root: Path) -> dict[str, Any] | None:
    path = root / protocol.PERF_DIR / TERMINAL_NAME
    if not path.is_file():
        return None
    obj = fsio.read_json(path, what="terminal evidence")
    schemas.validate(obj, "terminal_evidence", path)
    return obj


def evidence_paths(root: Path) -> list[str]:
    """Every evidence file and folder of the operator, relative, in a stable order."""
    perf = root / protocol.PERF_DIR
    found = [fsio.display_path(root / name, root) for name in
             (protocol.MANIFEST_NAME, protocol.GOLDEN_REPORT_NAME, protocol.PERFORMANCE_JSON,
              protocol.PERFORMANCE_LOG, protocol.PERF_REPORT_MD) if (root / name).is_file()]
    for pattern in ("round_*", "quick/quick_*", "correctness/*.json", "versions/*", "*.json"):
        found += [fsio.display_path(p, root) for p in sorted(perf.glob(pattern)) if not p.is_symlink()]
    return found


def roof_sources(platform: dict | None) -> tuple[str, str]:
    """Where the compute and the bandwidth roof come from: the platform file's peaks and their status
    (compute: every peak but the bandwidth one, e.g. arithmetic and transcendental)."""
    plat = platform or {}
    path, status = (plat.get("file") or {}).get("path", "platform file not recorded"), plat.get("peak_status") or {}
    memory = "memory_bytes_per_s"
    compute = [k for k in sorted(status) if k != memory] or ["arithmetic_ops_per_s"]
    return (f"{path} " + ", ".join(f"peaks.{k} {status.get(k, 'status not recorded')}" for k in compute),
            f"{path} peaks.{memory} {status.get(memory, 'status not recorded')}")


def _figures(root: Path, task: str, selection: dict | None, terminal: dict | None, draw: bool = True) -> dict[str, str]:
    """Caption -> path of each figure; drawn when ``draw`` (else only where it would be drawn)."""
    out, figures = {}, root / protocol.FIGURES_DIR
    if selection and selection.get("candidates"):
        rows, path = selection["candidates"], figures / "candidate_scores.png"
        if draw:
            from . import final_plots  # matplotlib is loaded only when drawing
            final_plots.candidate_scores(
                [r["version_id"] for r in rows], [r.get("score") for r in rows], [r.get("ci") for r in rows],
                [bool(r.get("in_tie_set")) for r in rows], selection.get("chosen"), selection["rule"]["delta"],
                path, f"{task}: candidate suite scores vs the baseline", reasons=[r.get("ineligible_reason") for r in rows],
                metric=selection["rule"].get("aggregate_metric", protocol.AGGREGATE_METRIC))
        out["Candidate scores and the tie set"] = fsio.display_path(path, root)
    if terminal and terminal["cases"] and not draw:
        out["Roofline per P0 case"] = fsio.display_path(figures / "roofline.png", root)
    elif terminal and terminal["cases"]:
        names, ai, rate, peaks = [], [], [], []
        for c in terminal["cases"]:
            roof = c["roofline_terminal"]
            ops = roof["arithmetic_intensity_ops_per_byte"] * roof["necessary_bytes"]
            names.append(c["case"])
            ai.append(roof["arithmetic_intensity_ops_per_byte"])
            rate.append(ops / roof["measured_us"] / 1e3 if roof.get("measured_us") else None)
            peaks.append((ops / roof["compute_floor_us"] / 1e3, roof["necessary_bytes"] / roof["memory_floor_us"] / 1e3))
        from . import final_plots
        path = final_plots.roofline(names, ai, rate, peaks[0][0], peaks[0][1], figures / "roofline.png",
                                    f"{task}: roofline of the final version per P0 case",
                                    sources=roof_sources(terminal["cases"][0]["roofline_terminal"].get("platform")))
        out["Roofline per P0 case"] = fsio.display_path(path, root)
    return out


def _searches(root: Path, task: str, figures: dict[str, str], draw: bool) -> tuple[dict[str, Any], ...]:
    """The complete search records, each with its figure (heat map for two parameters; drawn when ``draw``)."""
    out = []
    for path in sorted((root / search.SEARCH_DIR).glob(f"*/{search.RECORD_NAME}")):
        rec = fsio.read_json(path, what="search.json")
        if rec.get("status") != "complete":
            continue
        params = rec["search"]["parameters"]
        png = root / protocol.FIGURES_DIR / f"search_{rec['item_id']}.png"
        if draw:
            from . import search_plots
            search_plots.space([p["name"] for p in params], [p["values"] for p in params], rec["points"],
                               (rec.get("best") or {}).get("trial"), png, f"{task}: search of {rec['item_id']}")
        figures[f"Search space of {rec['item_id']}"] = fsio.display_path(png, root)
        out.append(rec)
    return tuple(out)


def build(op_dir: str | Path) -> dict[str, Any]:
    """Write PERFORMANCE_REPORT.md (+ figures); returns {report, figures}."""
    root = Path(op_dir)
    inputs = gather(root, draw=True)
    report = fsio.write_text(root / protocol.PERFORMANCE_REPORT_MD, final_md.render(inputs))
    return {"report": fsio.display_path(report, root), "figures": sorted(inputs.figures.values()),
            "evidence_paths": len(inputs.evidence_paths), "rounds": [r["name"] for r in evidence.list_rounds(root)]}


def rendered(op_dir: str | Path) -> str:
    """The text :func:`build` writes for the evidence as it is now (no file written, no figure drawn)."""
    return final_md.render(gather(Path(op_dir), draw=False))


def gather(root: Path, draw: bool) -> final_md.FinalInputs:
    """Every input of the report, recomputed from the evidence (figures drawn when ``draw``)."""
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    perf_file = fsio.read_json(root / protocol.PERFORMANCE_JSON, what="performance.json")
    perf = compare.load_formal(root, perf_file["baseline_collection_id"], perf_file["final_collection_id"])
    ledger_obj = _optional(ledger.ledger_path(root), ledger.load_ledger, ledger.ledger_path(root))
    selection = _optional(candidates.paths(root)[0], candidates.rank, root)
    if selection is not None:
        selection["confirm"] = _confirm(root)
    terminal = _terminal(root)
    task = root.resolve().name
    figures = _figures(root, task, selection, terminal, draw)
    searches = _searches(root, task, figures, draw)
    figures.update({"Speed-up per case with CI and noise band": f"{protocol.FIGURES_DIR}/{formal.FIGURES['speedup']}",
                    "Baseline vs final samples per case": f"{protocol.FIGURES_DIR}/{formal.FIGURES['samples']}"})
    figures = {k: v for k, v in figures.items() if (root / v).is_file()}
    return final_md.FinalInputs(task, man.raw, fsio.file_record(root / protocol.MANIFEST_NAME, root), perf,
                                ledger_obj, selection, terminal, evidence_paths(root), figures, searches)
