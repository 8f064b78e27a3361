"""Render ``results/SUMMARY.md`` from the three benchmark JSON files (pure text, no measuring)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

RULES = ("ours", "pyperf", "upstream")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def scale_md(d: dict) -> list[str]:
    s = d["summary"]
    out = ["## 1. Scale: evidence processing vs the pandas read floor", "",
           f"Targets: CPU time <= {d['targets']['time_vs_floor']}x the floor; peak RSS increase <= "
           f"{d['targets']['memory_vs_largest_frame']}x the largest parsed frame (judged where that frame is >= "
           f"{s['memory_judged_on_frames_at_least_bytes'] >> 20} MiB); linear in the number of files.", "",
           "| cases x repeats | rows per file | files | floor CPU s | compare (x floor) | select (x floor) | "
           "evidence (x floor) | largest frame MiB | peak RSS +MiB compare / select / evidence |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in d["scenarios"]:
        j = r["jobs"]
        rows = f"{r['rows']:,}" + (f" + one {r['big_rows']:,}" if r["big_rows"] else "")
        mem = " / ".join(f"{j[k]['peak_rss_delta_bytes'] / 2**20:.1f}" for k in ("compare", "select", "evidence"))
        out.append(f"| {r['cases']} x {r['repeats']} | {rows} | {r['files']} | {j['floor']['cpu_s']:.2f} | "
                   + " | ".join(f"{j[k]['cpu_s']:.2f} ({j[k]['cpu_vs_floor']:.2f}x)" for k in ("compare", "select", "evidence"))
                   + f" | {r['largest_frame_bytes'] / 2**20:.1f} | {mem} |")
    fit = d["fit"]["jobs"]
    out += ["", f"Linear fit over the {d['fit']['points']} scenarios with {d['fit']['rows_per_file']} rows per file "
            "(CPU s = a + b x files):", "", "| job | b (ms per file) | b / floor's b | log-log exponent | R² |",
            "|---|---|---|---|---|"]
    for job, f in fit.items():
        ratio = "1" if job == "floor" else f"{s['slope_vs_floor'][job]:.2f}"
        exponent = "n/a" if f["loglog_exponent"] is None else f"{f['loglog_exponent']:.2f}"
        out.append(f"| {job} | {f['ms_per_file']:.2f} | {ratio} | {exponent} | {f['r2']:.4f} |")
    worst_t = ", ".join(f"{k} {v:.2f}x" for k, v in s["worst_cpu_vs_floor"].items())
    worst_m = ", ".join(f"{k} {'n/a' if v is None else f'{v:.2f}x'}" for k, v in s["worst_memory_vs_largest_frame"].items())
    out += ["", f"- Worst time vs floor: {worst_t} — target {'met' if s['time_target_met'] else 'MISSED'}.",
            f"- Worst memory vs largest frame: {worst_m} — target {'met' if s['memory_target_met'] else 'MISSED'}.",
            "", "![time vs files](scale_time_vs_files.png)", "", "![time vs floor](scale_time_vs_floor.png)", ""]
    if any(r["largest_frame_bytes"] >= s["memory_judged_on_frames_at_least_bytes"] for r in d["scenarios"]):
        out += ["![memory vs frame](scale_memory_vs_frame.png)", ""]
    return out


def decisions_md(d: dict) -> list[str]:
    out = ["## 2. Decision quality: our rule vs pyperf compare_to vs the upstream rule", "",
           f"Noise: log-normal, {d['outlier_probability']:.0%} outliers x U{tuple(d['outlier_multiplier'])}; "
           f"our rule = frozen default decision {d['decision']} with aggregation {d['aggregation']}; "
           f"upstream = trimmed mean, band {d['upstream_band']:.0%}. pyperf API vs `python -m pyperf compare_to` "
           f"CLI agreement: {d['pyperf_cli_check']['agree']}/{d['pyperf_cli_check']['total']}.", "",
           "| rule | worst A/A false-positive rate (setting) | A/A settings above 5 % | power at 5 % / 2 % noise / 10 repeats | targets |",
           "|---|---|---|---|---|"]
    for rule, s in d["summary"].items():
        where = f"n={s['worst_aa_setting']['repeats']}, noise {s['worst_aa_setting']['noise']:.0%}"
        above = "; ".join(s["aa_settings_above_target"]) or "none"
        out.append(f"| {rule} | {_pct(s['worst_aa_false_positive'])} ({where}) | {above} | "
                   f"{_pct(s['power_5pct_2pct_10rep'])} | {'met' if s['meets_targets'] else 'missed'} |")
    effects = sorted({r["effect"] for r in d["results"]})
    out += ["", "Share of comparisons called `faster` (effect 0: `faster` or `slower`), ours / pyperf / upstream:", "",
            "| repeats | noise | " + " | ".join(f"true +{e:.0%}" for e in effects) + " |",
            "|---|---|" + "---|" * len(effects)]
    for key in sorted({(r["repeats"], r["noise"]) for r in d["results"]}):
        cells = []
        for e in effects:
            r = next(x for x in d["results"] if (x["repeats"], x["noise"], x["effect"]) == (*key, e))
            field = "any" if e == 0 else "faster"
            cells.append(" / ".join(f"{100 * r['rates'][k][field]:.0f}" for k in RULES))
        out.append(f"| {key[0]} | {key[1]:.0%} | " + " | ".join(cells) + " |")
    return out + ["", "![false positives](decisions_false_positive.png)", "", "![power](decisions_power.png)", ""] \
        + confirm_md(d.get("confirm"))


def confirm_md(c: dict | None) -> list[str]:
    """The confirm rule's end verdicts (power: truths equal; false ``consistent``: the ranked effect is gone)."""
    if not c:
        return []
    out = ["### Confirm rule: reaching `consistent`", "",
           f"`select_best.py confirm` (paired, up to 1 + max_remeasurements = 2 attempts), {c['repeats']} repeats, "
           f"{c['noise']:.0%} noise, {c['cases']} target cases, round-wide load drift 10 %.", "",
           "| δ | ranked effect | confirm rounds' truth | sims | `consistent` | other ends | mean attempts |",
           "|---|---|---|---|---|---|---|"]
    for r in c["results"]:
        other = ", ".join(f"{k} {100 * v:.0f} %" for k, v in r["ends"].items() if k != "consistent") or "-"
        kind = "same (power)" if r["confirm_effect"] == r["ranking_effect"] else f"+{r['confirm_effect']:.0%} (false if consistent)"
        out.append(f"| {r['delta']:.0%} | +{r['ranking_effect']:.0%} | {kind} | {r['sims']} | {_pct(r['consistent'])} | "
                   f"{other} | {r['mean_attempts']:.2f} |")
    return out + [""]


def cpu_md(d: dict) -> list[str]:
    o = d["timer_overhead"]
    out = ["## 3. cpu backend: timer overhead and agreement with timeit", "",
           f"Timer overhead per sample (no-op through the runner's timing shim): median {o['shim_noop_sample']['median_ns']:.0f} ns "
           f"(p95 {o['shim_noop_sample']['p95_ns']} ns); bare `perf_counter_ns` pair {o['bare_counter_pair']['median_ns']:.0f} ns.", "",
           "| kernel | loop iterations | cpu runner median us | timeit median us (hot loop) | ratio (median) | ratio (min) "
           "| timeit cold median us (1 call after gc.collect) | ratio to cold |",
           "|---|---|---|---|---|---|---|---|"]
    for r in d["kernels"]:
        out.append(f"| {r['case']} | {r['loop_iterations']:,} | {r['cpu_runner_median_us']:.3f} | {r['timeit_median_us']:.3f} | "
                   f"{r['ratio_median']:.3f} | {r['ratio_min']:.3f} | {r['timeit_cold_median_us']:.3f} | "
                   f"{r['ratio_cold_median']:.3f} |")
    return out + ["", "![cpu vs timeit](cpu_backend_vs_timeit.png)", ""]


def aa_md(d: dict) -> list[str]:
    lo, hi = d["load_during_min_max"]
    return ["## 4. Real cpu A/A under load: false directional verdicts of the product's compare", "",
            f"`benchmarks/aa/bench_aa.py`: unchanged softmax, {d['comparisons']} comparisons per mode, {d['repeats']} "
            f"repeats over {d['processes']} process(es), frozen δ {d['frozen_band']:.0%}, {d['burners']} busy-loop "
            f"burner(s); load average {d['load_before'][0]:.1f} before, {lo:.1f}–{hi:.1f} during, "
            f"{d['load_after'][0]:.1f} after on {d['cpu_count']} cores ({d['total_s']:.0f} s). Target ≤ "
            f"{d['target']:.0%} per case and per suite.", "", _load("aa", "bench_aa").table(d["rows"]), ""]


def _load(folder: str, module: str):
    sys.path[:0] = [str(HERE / folder), str(HERE)]
    return __import__(module)


def real_backend_md(results: Path) -> list[str]:
    """Sections of the real-backend verdict benchmarks (run on their own, not by run_all.py)."""
    out = []
    path = results / "processes.json"
    if path.exists():
        d = json.loads(path.read_text())
        rows = [r for r in d["rows"] if r["delta"] == 0.01]
        out += ["## 5. Unchanged code on the real cpu backend (A/A): false verdicts and false wins", "",
                f"`benchmarks/processes/bench_processes.py` (run on its own, {d['total_s']:.0f} s): "
                f"{d['comparisons']} comparisons per row, {d['repeats']} repeats, δ = 1 %, load average "
                f"{d['load_before'][0]:.1f} before and {d['load_after'][0]:.1f} after on {d['cpu_count']} cores.", "",
                _load("processes", "bench_processes").table(rows), "", "![A/A](verdicts_aa.png)", ""]
    path = results / "power.json"
    if path.exists():
        d = json.loads(path.read_text())
        out += ["## 6. Power on real known changes (kernel doing 10 % and 30 % less work)", "",
                f"`benchmarks/power/bench_power.py` (run on its own, {d['total_s']:.0f} s): {d['comparisons']} "
                f"comparisons, {d['repeats']} repeats, {d['processes']} process(es) per case, load average "
                f"{d['load_before'][0]:.1f} before and {d['load_after'][0]:.1f} after.", "",
                _load("power", "bench_power").table(d["rows"]), "", "![power](verdicts_power.png)", ""]
    path = results / "demo_runs.json"
    if path.exists():
        d = json.loads(path.read_text())
        out += [f"## 7. {len(d['runs'])} demo runs: does each run's suite CI hold the others?", "",
                f"`benchmarks/demo_runs/bench_demo_runs.py` (run on its own), example `{d['example']}`.", "",
                _load("demo_runs", "bench_demo_runs").table(d), "", "![demo runs](demo_runs.png)", ""]
    runs = sorted(results.glob("pypto_sim*.json"))   # the example, then each --op-dir operator
    if runs:
        bench = _load("pypto_sim", "bench_pypto_sim")
        out += ["## 8. The pypto-sim loop: product time and launches vs the distinct simulations", "",
                "`benchmarks/pypto_sim/bench_pypto_sim.py` (run on its own; `--op-dir` for any operator folder); "
                "targets ≤ 2 launches per distinct launch the protocol needs ((version, case) questions, the "
                "tests outside the P0 cases, P10's re-simulations) and wall ≤ 2× their raw simulation (idle "
                "machine). A launch belongs to the demo step whose window holds its start; new distinct = "
                "questions no earlier step asked; raw = their count × the median timed launch.", ""]
        for path in runs:
            d = json.loads(path.read_text())
            what = "`demo.py --example pypto_softmax`" if path.stem == "pypto_sim" else \
                f"`demo.py --op-dir` on `{path.stem.removeprefix('pypto_sim_')}`"
            v = d.get("verdicts") or {}
            out += [f"**{what}** on {d['cpu_count']} cores, {d.get('conditions') or 'load %.1f' % d['load'][0]}"
                    + (f"; verdict: {str(v.get('verifier')).rstrip('.')}, chosen `{v.get('chosen_version')}`, suite mean speed-up "
                       f"{v.get('suite_mean_speedup'):.3f}" if v.get("suite_mean_speedup") is not None else "") + ".",
                    "", bench.table(d), ""]
    return out


def render(results: Path, seconds: float | None = None) -> str:
    lines = ["# Benchmark results", "", "Produced by `python benchmarks/run_all.py`; methods and discussion in "
             "[docs/benchmarks.md](../../docs/benchmarks.md)." + (f" Total run time {seconds:.0f} s." if seconds else ""), ""]
    for name, part in (("scale", scale_md), ("decisions", decisions_md), ("cpu_backend", cpu_md), ("aa", aa_md)):
        path = results / f"{name}.json"
        if path.exists():
            lines += part(json.loads(path.read_text()))
    lines += real_backend_md(results)
    return "\n".join(lines) + "\n"
