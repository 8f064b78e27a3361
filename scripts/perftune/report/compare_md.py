"""``perf_report.md``: the human report of one formal compare (DESIGN §4.4).

Pure: :func:`render_perf_report` takes the ``performance.json`` dict and the figure paths
(relative to the operator directory) and returns markdown. Numbers are printed, never computed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from .text import MISSING, attempt_lines, ci_methods, fmt, fmt_ci, unproven_note


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _protocol(perf: Mapping[str, Any]) -> str:
    """Which kind of comparison every number below comes from (docs/statistics.md, "Noise calibration")."""
    if perf["paired"]:
        return (f"paired: the final round interleaves both arms, baseline version {perf['paired_baseline_version']} "
                "(drift between rounds cancels inside each pair)")
    cal = perf.get("calibration")
    if cal:
        return (f"independent rounds; noise band calibrated to {fmt(cal['effective_band'], '.4f')} "
                f"(A/A noise of the baseline code, {cal['kind']}, rounds {', '.join(cal['rounds'])})")
    return ("independent rounds, not calibrated: the CIs cover noise inside these two rounds only, so drift of the "
            "machine between them could read as a verdict; every verdict is therefore `inconclusive` "
            "(`independent_not_calibrated`, docs/statistics.md \"Independent rounds without calibration\"); pair the "
            "round (`collect_perf.py formal --paired-with`) or calibrate before any candidate (`compare_perf.py calibrate`)")


def _header(perf: Mapping[str, Any]) -> list[str]:
    p, d = perf["protocol"], perf["protocol"]["decision"]
    golden = perf.get("golden_source")
    return [
        f"# Performance compare: {perf['task']}",
        "",
        f"- Final round: `{perf['final_collection_id']}` ({perf['final_round'] or MISSING}); "
        f"baseline round: `{perf['baseline_collection_id']}` ({perf['baseline_round'] or MISSING})",
        f"- Comparison protocol: {_protocol(perf)}",
        f"- Protocol: backend `{p['backend']}`, device {p['device_id']}, seed {p['seed']}, warm-up {p['warmup']}, "
        f"repeats {p['repeats']}, op name `{p['op_name']}`, selector `{p['selector_kind'] or MISSING}`, "
        f"aggregation `{p['aggregation']}`, processes per case {p.get('processes', 1)}",
        f"- Decision rule (frozen): `{d['method']}`, confidence {d['confidence']}, {d['resamples']} resamples, "
        f"rng_seed {d['rng_seed']}, noise band {d['noise_band']}, min_repeats {d['min_repeats']}; CI "
        f"`{ci_methods(perf)}`",
        f"- Manifest: `{perf['manifest']['path']}` sha256 `{perf['manifest']['sha256'][:16]}`",
        f"- Golden contract: {'`' + golden['path'] + '`' if golden else 'not available'}",
        f"- Valid cases: {perf['n_cases_valid']} / {perf['n_cases_total']}",
        "",
    ]


def _summary(perf: Mapping[str, Any]) -> list[str]:
    suite = perf["suite"]
    counts = Counter(row["verdict"] for row in perf["per_case"] if row["target"])
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return [
        "## Summary",
        "",
        f"- Suite score over the target cases ({', '.join(f'`{c}`' for c in perf['target_case_ids'])}), "
        f"equal-weight mean speed-up: **{fmt(suite['mean_case_speedup'], '.4f')}**, "
        f"{int(suite['confidence'] * 100)} % CI {fmt_ci(suite['ci'])} ({suite['reason_code']}"
        + (f"; widened by the calibrated between-round noise {fmt(suite['between_round_noise'], '.4f')}"
           if suite.get("between_round_noise") else "") + "); "
        f"geometric mean {fmt(suite['geomean_speedup'], '.4f')}",
        f"- Target-case verdicts: {verdicts}",
        f"- Slower target cases: {', '.join(perf['slower_target_cases']) or 'none'}",
        "",
    ]


def _cases(perf: Mapping[str, Any]) -> list[str]:
    lines = ["## Per-case speed-up (baseline / final)", "",
             _row(["Case", "Target", "Shape", "DType", "Baseline (µs)", "Final (µs)", "Speed-up", "CI",
                   "δ", "Verdict (reason)", "Mann-Whitney p", "P(final faster)"]),
             _row(["---"] * 4 + ["---:"] * 5 + ["---"] + ["---:"] * 2)]
    for row in perf["per_case"]:
        lines.append(_row([
            f"`{row['case']}`", "yes" if row["target"] else "no", row["shape"], row["dtype"],
            fmt(row["baseline_us"], ".3f"), fmt(row["final_us"], ".3f"), fmt(row["speedup"], ".4f"),
            fmt_ci(row["speedup_ci"]), fmt(row["delta"], ".4f"), f"{row['verdict']} ({row['reason_code']})",
            fmt(row["mann_whitney_p"], ".3g"), fmt(row["prob_candidate_faster"], ".3f")]))
    said = attempt_lines(perf, "- ")
    lines += [""] + said + [""] * bool(said)
    lines += ["A verdict is `faster`/`slower` only when the whole CI lies outside the band 1±δ; "
              "`equivalent` when it lies inside; `inconclusive` when it straddles (collect more repeats). "
              "See docs/statistics.md of the plugin.", ""]
    return lines


def _targets(perf: Mapping[str, Any]) -> list[str]:
    user = perf.get("user_target")
    eff = perf["effective_target"]
    lines = ["## Targets (disclosed, never a delivery gate)", "",
             _row(["Case", "Final (µs)", "Golden per-iteration (µs)", "golden_reference_ratio", "Target met"]),
             _row(["---", "---:", "---:", "---:", "---"])]
    for row in perf["per_case"]:
        lines.append(_row([f"`{row['case']}`", fmt(row["final_us"], ".3f"), fmt(row["golden_per_iteration_us"], ".3f"),
                           fmt(row["golden_reference_ratio"], ".4f"), fmt(row["target_met"])]))
    lines += [
        "",
        f"- Default target `{perf['default_target_metric']} >= {perf['default_target_threshold']}` over every P0 "
        f"case: **{perf['default_target_status']}** (valid_for_target_met: {'yes' if perf['valid_for_target_met'] else 'no'})",
        f"- User target: {('`' + user['metric'] + ' >= ' + str(user['threshold']) + '` over the target cases: **' + user['status'] + '**' + unproven_note(user)) if user else 'none declared in SPEC.md'}",
        f"- Effective target ({eff['source']}): **{eff['status']}**",
        "- `golden_reference_ratio` = golden per-iteration time / final time is an ideal reference, "
        "**not** a baseline-to-final speed-up.",
        "",
    ]
    return lines


def _routes(perf: Mapping[str, Any]) -> list[str]:
    lines = ["## Bound routing of the final round (diagnostic, not a verdict)", ""]
    for row in perf["per_case"]:
        route = row["bound_route"]
        text = f"{route['label']} (repeats: {route['counts']})" if route else "no pipe counters (n/a)"
        lines.append(f"- `{row['case']}`: {text}")
    return lines + [""]


def render_perf_report(perf: Mapping[str, Any], figures: Mapping[str, str]) -> str:
    """Markdown of the compare; ``figures`` maps a caption to a path relative to the op dir."""
    lines = _header(perf) + _summary(perf) + _cases(perf) + _targets(perf) + _routes(perf)
    if figures:
        lines += ["## Figures", ""]
        for caption, path in figures.items():
            lines += [f"![{caption}]({path})", "", f"*{caption}*", ""]
    lines += ["## Re-derive", "",
              "Every number above is recomputed from the raw samples of the two rounds:", "", "```",
              f"python scripts/compare_perf.py formal --op-dir <op dir> --baseline {perf['baseline_collection_id']} "
              f"--candidate {perf['final_collection_id']} --json", "```", ""]
    return "\n".join(lines)
