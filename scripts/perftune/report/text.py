"""``performance.log``: the fixed-width text table of a formal compare (DESIGN §4.4).

Pure: :func:`render_performance_log` takes the ``performance.json`` dict and returns the text.
Columns are as wide as their widest cell, so the table stays aligned for any case id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "n/a"


def unproven_note(user: dict | None) -> str:
    """Why a speed-up target is ``unproven``: its inconclusive/insufficient target cases (else '')."""
    cases = (user or {}).get("unproven_cases")
    return f" (inconclusive or insufficient target cases: {', '.join(cases)}; points alone never meet it)" if cases else ""


def ci_methods(perf: Mapping[str, Any]) -> str:
    """Which CI the per-case verdicts used (``two_level_bootstrap`` over processes, ``bootstrap``)."""
    used = sorted({r.get("ci_method") for r in perf["per_case"] if r.get("ci_method")})
    return ", ".join(used) or MISSING


def fmt(value: Any, spec: str = ".4g") -> str:
    """A number with ``spec``; ``None`` is ``n/a`` (missing is never zero)."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    return format(value, spec)


def fmt_ci(ci: Sequence[float] | None) -> str:
    return MISSING if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int] | None = None) -> list[str]:
    """Fixed-width lines: left-aligned text columns, right-aligned columns listed in ``right``."""
    right = right or set()
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _case_rows(per_case: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for row in per_case:
        route = (row.get("bound_route") or {}).get("label") or MISSING
        rows.append([row["case"], "T" if row["target"] else "", row["shape"], row["dtype"],
                     fmt(row["baseline_us"], ".3f"), fmt(row["final_us"], ".3f"), fmt(row["speedup"], ".4f"),
                     fmt_ci(row["speedup_ci"]), row["verdict"], row["reason_code"],
                     fmt(row["golden_per_iteration_us"], ".3f"), fmt(row["golden_reference_ratio"], ".4f"),
                     fmt(row["target_met"]), route])
    return rows


def attempt_lines(perf: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Where the delivered figure is the median of several final attempts (decide/attempts.py), say so."""
    from ..decide.attempts import describe
    rows = [(f"case {row['case']}", describe(row.get("attempts"))) for row in perf["per_case"]]
    rows.append(("suite score", describe((perf.get("suite") or {}).get("attempts"))))
    return [f"{prefix}{name}: speed-up delivered = {text} (every final attempt counts)" for name, text in rows if text]


def _header_lines(perf: Mapping[str, Any]) -> list[str]:
    p, d = perf["protocol"], perf["protocol"]["decision"]
    golden = perf.get("golden_source")
    return [
        f"performance.log - {perf['task']} - formal compare (baseline vs final)",
        f"baseline: {perf['baseline_collection_id']} ({perf['baseline_round'] or MISSING})",
        f"final:    {perf['final_collection_id']} ({perf['final_round'] or MISSING})"
        f"  paired={'yes' if perf['paired'] else 'no'}",
        f"protocol: backend={p['backend']} device={p['device_id']} seed={p['seed']} warmup={p['warmup']} "
        f"repeats={p['repeats']} op_name={p['op_name']} selector={p['selector_kind'] or MISSING} "
        f"aggregation={p['aggregation']} processes={p.get('processes', 1)}",
        f"decision: {d['method']} confidence={d['confidence']} resamples={d['resamples']} "
        f"rng_seed={d['rng_seed']} noise_band={d['noise_band']} min_repeats={d['min_repeats']} "
        f"ci={ci_methods(perf)}",
        f"manifest: {perf['manifest']['path']} sha256={perf['manifest']['sha256'][:16]}",
        f"golden:   {golden['path'] + ' sha256=' + golden['sha256'][:16] if golden else 'not available'}",
        f"cases:    {perf['n_cases_valid']}/{perf['n_cases_total']} valid; target (T): "
        f"{', '.join(perf['target_case_ids'])}",
        "",
    ]


def render_performance_log(perf: Mapping[str, Any]) -> str:
    """The whole ``performance.log`` text (ends with a newline)."""
    header = ["case", "T", "shape", "dtype", "baseline_us", "final_us", "speedup", "speedup_ci",
              "verdict", "reason", "golden_us", "golden_ratio", "target_met", "bound_route"]
    lines = _header_lines(perf) + table(header, _case_rows(perf["per_case"]), right={4, 5, 6, 10, 11})
    suite = perf["suite"]
    user = perf.get("user_target")
    lines += [
        "",
        f"suite (target cases, equal weight): mean_case_speedup={fmt(suite['mean_case_speedup'], '.4f')} "
        f"ci={fmt_ci(suite['ci'])} geomean_speedup={fmt(suite['geomean_speedup'], '.4f')} ({suite['reason_code']})",
        f"default target: {perf['default_target_metric']} >= {perf['default_target_threshold']} over P0 cases: "
        f"{perf['default_target_status']} (valid_for_target_met={'yes' if perf['valid_for_target_met'] else 'no'})",
        f"user target:    {user['metric'] + ' >= ' + str(user['threshold']) + ': ' + user['status'] if user else 'none'}"
        + unproven_note(user),
        "note: golden_reference_ratio is an ideal reference, NOT a baseline-to-final speed-up.",
        f"slower target cases: {', '.join(perf['slower_target_cases']) or 'none'}",
    ] + attempt_lines(perf)
    return "\n".join(lines) + "\n"
