"""The files of one formal compare: ``performance.log``, ``perf_report.md`` and its two figures.

Rendering only: the numbers come from :func:`perftune.decide.compare.load_formal`; the verifier
re-renders with :func:`render_texts` to prove the written files match the recomputation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from . import compare_md, text

FIGURES = {"speedup": "compare_speedup_ci.png", "samples": "compare_samples.png"}


def render_texts(perf: Mapping[str, Any]) -> tuple[str, str]:
    """(``performance.log``, ``perf_report.md``) text of a compare; pure, so a verifier can re-render."""
    captions = {"Speed-up per case with CI and noise band": f"{protocol.FIGURES_DIR}/{FIGURES['speedup']}",
                "Baseline vs final samples per case": f"{protocol.FIGURES_DIR}/{FIGURES['samples']}"}
    return text.render_performance_log(perf), compare_md.render_perf_report(perf, captions)


def write_formal(op_dir: str | Path, perf: Mapping[str, Any]) -> dict[str, Path]:
    """Write figures, ``performance.log``, ``perf_report.md`` and (last) ``performance.json``."""
    from . import plots  # matplotlib is loaded only when writing
    root = Path(op_dir)
    rows = perf["per_case"]
    figures = root / protocol.FIGURES_DIR
    speed = plots.speedup_ci([r["case"] for r in rows], [r["speedup"] for r in rows],
                             [r["speedup_ci"] for r in rows], [r["delta"] for r in rows],
                             [r["verdict"] for r in rows], figures / FIGURES["speedup"],
                             title=f"{perf['task']}: speed-up per case, baseline / final "
                                   f"({'paired' if perf.get('paired') else 'independent'} rounds)",
                             ns=[(r["n_baseline"], r["n_final"]) for r in rows], targets=[r["target"] for r in rows],
                             ci_levels=[r.get("ci_level") for r in rows])
    samples = plots.sample_distributions([r["case"] for r in rows], [r["samples"]["baseline"] for r in rows],
                                         [r["samples"]["final"] for r in rows], figures / FIGURES["samples"],
                                         title=f"{perf['task']}: raw samples, baseline vs final")
    log_text, md_text = render_texts(perf)
    out = {"figures_speedup": speed, "figures_samples": samples,
           "log": fsio.write_text(root / protocol.PERFORMANCE_LOG, log_text),
           "report": fsio.write_text(root / protocol.PERF_REPORT_MD, md_text)}
    out["json"] = fsio.write_json(root / protocol.PERFORMANCE_JSON, perf)
    return out
