"""``PERFORMANCE_REPORT.md``: the Stage 5 delivery report (pure rendering of gathered evidence).

:func:`render` takes the :class:`FinalInputs` gathered by :mod:`perftune.report.final_report` (every
number already recomputed by the decision modules) and returns markdown. Nothing is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contract import protocol
from .text import MISSING, attempt_lines, fmt, fmt_ci, unproven_note


@dataclass(frozen=True)
class FinalInputs:
    task: str
    manifest: dict[str, Any]            # raw manifest content
    manifest_record: dict[str, Any]
    performance: dict[str, Any]         # recomputed compare of baseline vs final
    ledger: dict[str, Any] | None
    selection: dict[str, Any] | None    # recomputed ranking
    terminal: dict[str, Any] | None
    evidence_paths: list[str]
    figures: dict[str, str]             # caption -> relative path
    searches: tuple[dict[str, Any], ...] = ()   # search.json records (docs/ledger.md "Searches")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
           ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _contract(inp: FinalInputs) -> list[str]:
    proto, target = inp.manifest["protocol"], inp.manifest["optimization_target"]
    d = proto["decision"]
    rows = [[c["id"], c["shape"], c["dtype"], c.get("test_function", MISSING),
             "yes" if c["id"] in target["case_ids"] else "no"] for c in inp.manifest["cases"]]
    return ["## 1. Frozen contract", "",
            f"- Manifest `{inp.manifest_record['path']}` sha256 `{inp.manifest_record['sha256']}`",
            f"- Target cases ({target['selection_mode']}): {', '.join(target['case_ids'])}",
            f"- Protocol: backend `{proto['backend']}`, device {proto['device_id']}, seed {proto['seed']}, "
            f"warm-up {proto['warmup']}, repeats {proto['repeats']}, op name `{proto['op_name']}`, timing scope "
            f"`{proto['timing_scope']}`, aggregation `{proto['aggregation']}`",
            f"- Decision rule: `{d['method']}` at {d['confidence']:.0%} confidence, noise band {d['noise_band']}, "
            f"{d['resamples']} resamples (rng_seed {d['rng_seed']}), min_repeats {d['min_repeats']}; promotion: "
            f"quick speed-up ≥ {proto['promotion']['quick_min_speedup']}; aggregate `{proto['aggregate_metric']}`; "
            f"tie break `{proto['tie_break']}`", ""] + \
        _table(["case", "shape", "dtype", "test", "target"], rows)


def _results(inp: FinalInputs) -> list[str]:
    perf = inp.performance
    rows = []
    for r in perf["per_case"]:
        rows.append([r["case"], fmt(r["baseline_us"], ",.1f"), fmt(r["final_us"], ",.1f"), fmt(r["speedup"], ".3f"),
                     fmt_ci(r["speedup_ci"]), r["verdict"], fmt(r.get("golden_reference_ratio"), ".3f"),
                     "yes" if r["target"] else "no"])
    suite = perf["suite"]
    target = f"default target ({perf['default_target_metric']} ≥ {perf['default_target_threshold']}): " \
             f"**{perf['default_target_status']}**"
    user = perf.get("user_target")
    if user:
        target += (f"; user target ({user['metric']} ≥ {user['threshold']}): **{user['status']}**{unproven_note(user)} "
                   "(takes precedence)")
    return ["## 2. Baseline vs final", "",
            f"Baseline round `{perf['baseline_collection_id']}`, final round `{perf['final_collection_id']}`"
            f"{' (paired, interleaved with the baseline snapshot)' if perf['paired'] else ''}.", ""] + \
        _table(["case", "baseline µs", "final µs", "speed-up", "CI", "verdict", "golden ratio", "target"], rows) + \
        [f"Suite (target cases): mean per-case speed-up **{fmt(suite['mean_case_speedup'], '.3f')}** "
         f"CI {fmt_ci(suite['ci'])}, geometric mean {fmt(suite['geomean_speedup'], '.3f')}.", "",
         *attempt_lines(perf, "- "), *[""] * bool(attempt_lines(perf)),
         f"Target: {target}. The golden ratio is an ideal reference, not a speed-up and never a gate.", ""]


def _cell(text: str) -> str:
    """A whole text as one table cell: never cut, pipes escaped, line breaks joined."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _reason(item: dict[str, Any]) -> str:
    """Why the item ended where it did: its reason code, else its applicability grounds, else the
    note of its last status change."""
    if item.get("reason_code"):
        return item["reason_code"]
    state = (item.get("applicability") or {}).get("state")
    grounds = (item.get("applicability") or {}).get("grounds")
    if state and grounds:
        return f"{state}: {grounds}"
    notes = [h.get("note") for h in item.get("history") or [] if h.get("note")]
    return notes[-1] if notes else MISSING


def _ledger(inp: FinalInputs) -> list[str]:
    if not inp.ledger:
        return ["## 3. Optimisation ledger", "", "No ledger found.", ""]
    rows = []
    for item in inp.ledger["items"]:
        ev = item.get("evidence") or {}
        formal = ", ".join(ev.get("formal") or []) or MISSING
        rows.append([item["item_id"], item["source_kind"], item["status"], _cell(_reason(item)),
                     formal, _cell(ev.get("mechanism") or MISSING)])
    sweep = inp.ledger.get("sweep") or {}
    return ["## 3. Optimisation ledger", ""] + \
        _table(["item", "source", "status", "reason", "formal evidence", "mechanism"], rows) + \
        [f"Final candidate sweep: {sweep.get('scope', MISSING)}; {len(sweep.get('findings') or [])} finding(s) "
         "mapped to closed items, the frozen contract or capability limits.", ""]


def _searches(inp: FinalInputs) -> list[str]:
    """Every point of every search, in trial order (the figures show the space)."""
    out = []
    for rec in inp.searches:
        names = [p["name"] for p in rec["search"]["parameters"]]
        best = (rec.get("best") or {}).get("trial")
        rows = [[f"t_{p['trial']:03d}"] + [str(p["values"][n]) for n in names] +
                [p["status"] + (f" of t_{p['repeat_of']:03d}" if p.get("repeat_of") is not None else ""),
                 fmt(p.get("objective"), ".4f"), (p.get("code_sha256") or MISSING)[:12], "yes" if p["trial"] == best else ""]
                for p in rec["points"]]
        block = rec["search"]
        out += [f"### Search of {rec['item_id']} (`docs/perf/search/{rec['item_id']}/search.json`)", "",
                f"{block['sampler']} sampler, seed {block['seed']}, budget {block['budget']}, batch {block['batch']}, "
                f"frozen sha256 {block['sha256'][:12]}; base {block['base']['version']}; objective: "
                f"{block['objective']['statistic']}.", ""] + \
            _table(["trial", *names, "status", "objective", "code sha256", "best"], rows)
    return (["## 3b. Searches", ""] + out) if out else []


def _selection(inp: FinalInputs) -> list[str]:
    sel = inp.selection
    if not sel:
        return ["## 4. Candidates and selection", "", "No selection recorded.", ""]
    rows = [[c["version_id"], str(c["evaluation_order"]), fmt(c.get("score"), ".3f"), fmt_ci(c.get("ci")),
             c.get("protocol") or MISSING, "yes" if c.get("in_tie_set") else "no",
             "yes" if c.get("eligible") else c.get("ineligible_reason") or "no"]
            for c in sel["candidates"]]
    return ["## 4. Candidates and selection", ""] + \
        _table(["version", "evaluation order", "score", "CI", "score from", "tie set", "eligible"], rows) + \
        [f"Chosen: **{sel.get('chosen')}**. {sel.get('reason', '')}", ""] + _confirm(sel.get("confirm"))


def _confirm(conf: dict[str, Any] | None) -> list[str]:
    if not conf:
        return ["Confirm: not run.", ""]
    verdict = "REFUTED: the confirm round proves it slower than its reference" if conf["refuted"] else \
        "the choice holds"
    return [f"Confirm (attempt {conf.get('attempt')} of {conf.get('limit')}, {conf['round_kind']} round vs "
            f"{conf.get('partner') or 'the baseline round'}): score {fmt(conf['final_score'], '.3f')} "
            f"{fmt_ci(conf.get('final_score_ci'))} vs ranking {fmt(conf['ranking_score'], '.3f')}; ratio "
            f"{fmt(conf['ratio'], '.3f')} {fmt_ci(conf.get('ratio_ci'))}, band {fmt_ci(conf['band'])}: "
            f"**{conf['status']}**; {verdict}.", ""]


def _terminal(inp: FinalInputs) -> list[str]:
    if not inp.terminal:
        return ["## 5. Terminal evidence per P0 case", "", "No terminal evidence found.", ""]
    rows, residual = [], []
    for c in inp.terminal["cases"]:
        roof, pipe, scalar = c["roofline_terminal"], c["pipeline_evidence"], c["scalar_evidence"]
        rows.append([c["case"], roof["status"], fmt(roof.get("attained_fraction"), ".3f"), roof["binding_roof"],
                     pipe["status"], str(scalar["dominant"]).lower()])
        if roof["status"] in protocol.ROOFLINE_RESIDUAL or scalar["dominant"] is True:
            residual.append(f"- {c['case']}: {roof['reason']}")
    return ["## 5. Terminal evidence per P0 case", ""] + \
        _table(["case", "roofline", "fraction of roof", "binding roof", "pipeline", "scalar dominant"], rows) + \
        _roof_sources(inp.terminal) + \
        ["### Residual bottlenecks", ""] + (residual or ["- none beyond the binding roof"]) + [""] + \
        _hotspots(inp.terminal)


def _hotspots(terminal: dict[str, Any]) -> list[str]:
    """Code-level hotspots per case (pypto-sim: cycles per tile op; terminal/sim_evidence.py)."""
    rows, spreads = [], []
    for c in terminal["cases"]:
        profile = c.get("hotspots")
        if not profile:
            continue
        ops = profile["tile_ops"]
        rows += [[c["case"], t["name"], str(t["cycles"]), fmt(t["share"], ".1%"), str(t["count"]),
                  ", ".join(t["pipes"])] for t in ops["top"]]
        spread = profile.get("core_spread")
        if spread:
            spreads.append(f"- {c['case']}: per-core work spread {spread['spread']:.1%} over {spread['blocks']} "
                           f"{spread['side']} cores (`{spread['source']}`)")
    if not rows:
        return []
    return ["### Code-level hotspots", "", "Cycles per tile op over every core (`_simulate.pipe.swim.json`; "
            "pypto records no source line there).", ""] + \
        _table(["case", "tile op", "cycles", "share", "spans", "pipes"], rows) + spreads + [""]


def _roof_sources(terminal: dict[str, Any]) -> list[str]:
    """Where each roof comes from: the platform file, each peak's status and its recorded source."""
    plat = terminal["cases"][0]["roofline_terminal"].get("platform") or {}
    status, source = plat.get("peak_status") or {}, plat.get("peak_source") or {}
    path = (plat.get("file") or {}).get("path", MISSING)
    return [f"Roof sources (platform `{plat.get('platform_id', MISSING)}`, file `{path}`):", ""] + \
        [f"- `{key}`: {status[key]}; {_cell(source.get(key) or 'source not recorded')}" for key in sorted(status)] + [""]


def render(inp: FinalInputs) -> str:
    lines = [f"# PERFORMANCE_REPORT: {inp.task}", "",
             "Every number below is recomputed from raw evidence by the scripts; stage5_check.py verifies it.", ""]
    lines += _contract(inp) + _results(inp) + _ledger(inp) + _searches(inp) + _selection(inp) + _terminal(inp)
    lines += ["## 6. Figures", ""] + [f"![{cap}]({path})" for cap, path in sorted(inp.figures.items())] + [""]
    lines += ["## 7. Evidence paths", ""] + [f"- `{p}`" for p in inp.evidence_paths] + [""]
    return "\n".join(lines)
