#!/usr/bin/env python3
"""Decision-quality benchmark: false-positive rate (A/A) and power of three verdict rules.

Grid: repeats 3/5/10/30 x log-normal noise 1/2/5 % (+3 % outliers) x true speed-up 0/1/2/5/10 %;
each setting simulated ``--sims`` times (A/A: twice as many), the same samples judged by our
rule, pyperf's compare_to test and the upstream trimmed-mean + 1 % band rule (``simulate.py``).
Targets (issue 9): our A/A false-positive rate <= 5 % at every setting, our power at 5 % effect /
2 % noise / 10 repeats >= 90 %. A few sample pairs are also written as pyperf JSON suites and run
through the real ``python -m pyperf compare_to`` CLI to check that the API call agrees with it.
pyperf must be importable (``run_all.py`` installs it). Settings run in parallel processes.
Between-process grid (#23): 10 repeats, noise 2 %, process noise 5 %, 1 process (all repeats in
one process: what a cpu round did) and 5 processes × 2 repeats (two-level CI), effects 0/10/30 %;
reported as ``process_level`` with the A/A false-verdict and power of every rule.
Confirm rule (#27): ``select_best.py confirm``'s paired equivalence and stated end
(``simulate.confirm_end``: up to 1 + max_remeasurements attempts) at 10 repeats, 2 % noise, 2 target
cases, δ 1 % and 5 %: the share of ``consistent`` when the confirm round's truth equals the ranking's
(effects 0–30 %: power) and when the ranked effect (5–30 %) is gone in the confirm rounds (a false
``consistent``); reported as ``confirm``.

usage:
  python benchmarks/decisions/bench_decisions.py [--out DIR] [--sims N] [--jobs N] [--smoke | --confirm-only]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "scripts"), str(HERE)]  # benchmark script, not library

import simulate  # noqa: E402
from simulate import Setting  # noqa: E402

REPEATS, NOISES, EFFECTS = (3, 5, 10, 30), (0.01, 0.02, 0.05), (0.0, 0.01, 0.02, 0.05, 0.10)
FP_TARGET, POWER_TARGET, POWER_AT = 0.05, 0.90, Setting(10, 0.02, 0.05)


def _run(args: tuple[Setting, int]) -> dict:
    setting, sims = args
    return simulate.rates(setting, sims)


def cli_agreement(pairs: int = 6) -> dict:
    """Run ``python -m pyperf compare_to`` on saved suites; count agreement with the API verdict."""
    agree, rows = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for k, setting in enumerate([Setting(10, 0.02, e) for e in (0.0, 0.02, 0.05)] * (pairs // 3)):
            b, c = (x[k % 4] for x in simulate.samples(setting, 4, seed=1000 + k))
            ref, chg = Path(tmp) / "ref.json", Path(tmp) / "changed.json"
            simulate._bench(b).dump(str(ref), replace=True)
            simulate._bench(c).dump(str(chg), replace=True)
            out = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", str(ref), str(chg)],
                                 capture_output=True, text=True, timeout=120).stdout
            cli = "same" if "not significant" in out else ("faster" if "faster" in out else "slower")
            api = simulate.pyperf_rule(b, c)
            agree += cli == api
            rows.append({"effect": setting.effect, "cli": cli, "api": api, "cli_output": out.strip()})
    return {"agree": agree, "total": len(rows), "rows": rows}


PROCESS_GRID = [Setting(10, 0.02, e, 0.05, p) for p in (1, 5) for e in (0.0, 0.10, 0.30)]
CONFIRM_GRID = [(e, e, d) for d in (0.01, 0.05) for e in (0.0, 0.02, 0.05, 0.10, 0.30)] + \
    [(e, 0.0, d) for d in (0.01, 0.05) for e in (0.05, 0.10, 0.30)]


def _confirm(args: tuple[float, float, float, int]) -> dict:
    ranking, confirm, delta, sims = args
    return simulate.confirm_end(ranking, confirm, 0.02, 10, delta, sims)


def process_summary(results: list[dict]) -> list[dict]:
    return [{"processes": r["processes"], "process_noise": r["process_noise"], "effect": r["effect"],
             **{rule: r["rates"][rule]["any" if r["effect"] == 0.0 else "faster"] for rule in simulate.RULES}}
            for r in results]


def summary(results: list[dict]) -> dict:
    out = {}
    for rule in simulate.RULES:
        aa = [r for r in results if r["effect"] == 0.0]
        worst = max(aa, key=lambda r: r["rates"][rule]["any"])
        fails = [f"n={r['repeats']} noise={r['noise']:.0%}: {r['rates'][rule]['any']:.1%}" for r in aa
                 if r["rates"][rule]["any"] > FP_TARGET]
        power = next(r for r in results if (r["repeats"], r["noise"], r["effect"]) ==
                     (POWER_AT.repeats, POWER_AT.noise, POWER_AT.effect))["rates"][rule]["faster"]
        out[rule] = {"worst_aa_false_positive": worst["rates"][rule]["any"],
                     "worst_aa_setting": {"repeats": worst["repeats"], "noise": worst["noise"]},
                     "aa_settings_above_target": fails, "power_5pct_2pct_10rep": power,
                     "meets_targets": not fails and power >= POWER_TARGET}
    return out


def confirm_only(args) -> int:
    path = args.out / "decisions.json"
    result = json.loads(path.read_text())
    with Pool(args.jobs) as pool:
        rows = pool.map(_confirm, [(*g, args.sims) for g in CONFIRM_GRID], chunksize=1)
    result["confirm"] = {"noise": 0.02, "repeats": 10, "cases": len(simulate.CONFIRM_CASES), "results": rows}
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    for row in rows:
        print(f"confirm δ {row['delta']:.0%} ranked +{row['ranking_effect']:.0%} confirmed +{row['confirm_effect']:.0%}: "
              f"consistent {row['consistent']:.1%} (" + ", ".join(f"{k} {v:.1%}" for k, v in row["ends"].items()) + ")")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results", help="results folder")
    parser.add_argument("--sims", type=int, default=200, help="simulations per setting (A/A: 2x)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel worker processes")
    parser.add_argument("--smoke", action="store_true", help="tiny grid (CI smoke run)")
    parser.add_argument("--confirm-only", action="store_true",
                        help="run only the confirm grid and replace the `confirm` key of an existing decisions.json")
    args = parser.parse_args()
    if args.confirm_only:
        return confirm_only(args)
    repeats, noises, effects = ((5, 10), (0.02,), (0.0, 0.05)) if args.smoke else (REPEATS, NOISES, EFFECTS)
    sims = 10 if args.smoke else args.sims
    grid = [(Setting(n, s, e), sims * (2 if e == 0.0 else 1)) for n in repeats for s in noises for e in effects]
    process_grid = [(s, sims * (2 if s.effect == 0.0 else 1)) for s in (PROCESS_GRID[:2] if args.smoke else PROCESS_GRID)]
    with Pool(args.jobs) as pool:
        results = pool.map(_run, grid, chunksize=1)
        process_results = pool.map(_run, process_grid, chunksize=1)
        confirm_grid = CONFIRM_GRID[::4] if args.smoke else CONFIRM_GRID
        confirm_results = pool.map(_confirm, [(*g, sims) for g in confirm_grid], chunksize=1)
    result = {"benchmark": "decisions", "smoke": args.smoke, "outlier_probability": simulate.OUTLIER_P,
              "outlier_multiplier": list(simulate.OUTLIER_RANGE), "decision": vars(simulate.DECISION),
              "aggregation": simulate.AGGREGATION, "upstream_band": simulate.UPSTREAM_BAND,
              "targets": {"aa_false_positive_max": FP_TARGET, "power_min": POWER_TARGET,
                          "power_setting": vars(POWER_AT)},
              "results": results, "summary": summary(results),
              "process_level": {"results": process_results, "summary": process_summary(process_results)},
              "confirm": {"noise": 0.02, "repeats": 10, "cases": len(simulate.CONFIRM_CASES), "results": confirm_results}, "pyperf_cli_check": cli_agreement(3 if args.smoke else 6)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decisions.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    from figures import decision_figures
    decision_figures(result, args.out)
    for rule, row in result["summary"].items():
        print(f"decisions {rule}: worst A/A {row['worst_aa_false_positive']:.1%}, power(5%,2%,10) "
              f"{row['power_5pct_2pct_10rep']:.1%}, targets met: {row['meets_targets']}")
    for row in result["process_level"]["summary"]:
        print(f"process-level P={row['processes']} effect {row['effect']:.0%}: "
              + ", ".join(f"{rule} {row[rule]:.1%}" for rule in simulate.RULES))
    for row in confirm_results:
        print(f"confirm δ {row['delta']:.0%} ranked +{row['ranking_effect']:.0%} confirmed +{row['confirm_effect']:.0%}: "
              f"consistent {row['consistent']:.1%} (" + ", ".join(f"{k} {v:.1%}" for k, v in row["ends"].items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
