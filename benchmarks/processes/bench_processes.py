#!/usr/bin/env python3
"""A/A false verdicts of independent cpu rounds against the number of processes per case (issue 23).

The example operator (``examples/softmax``, its two ``r64_c4096`` cases, the demo's protocol: 10
repeats, 1 warm-up) is measured by the real cpu backend (``CpuBackend.run_case``: fresh
``cpu_runner`` processes, the same code every round) with the repeats spread over P processes, for
every P of ``--processes``. The conditions are interleaved round by round (the order rotates each
round), so the machine's load drifts over all of them alike. Comparison k of a condition compares
its round k with its round k + N (N = ``--comparisons``): independent rounds half a run apart, as a
baseline and a later candidate are ("apart"); the same rounds are also compared as neighbours in
time, round 2k with round 2k + 1 ("adjacent"). On every second round each condition also collects
one paired A/A round (``run_paired_case``: both arms the same code, interleaved inside each of the P
processes), N paired comparisons. Every comparison uses the product's statistics
(``stats.compare_samples`` with Bonferroni over the two target cases, ``stats.suite_score``) at the
default band δ = 1 % and the demo's δ = 5 %, with the process groups (two-level CI) and, for
contrast, without them (one-level CI on the same samples). Reported per condition: the share of
per-case verdicts that are ``faster``/``slower`` (all false: the code is unchanged), the share of
suite CIs that exclude 1, and the median wall time of a round (both cases) as a ratio to P = 1;
``uptime`` load before and after. Raw samples and process indices are kept in the JSON.
Also ``independent, apart, calibrated``: the apart comparisons at the band δ_eff that
``compare_perf.py calibrate`` freezes from two back-to-back baseline rounds (rounds k and k + 1),
their suite CI widened by the calibration's measured noise as ``compare_perf.py formal`` does; and
per row the share of comparisons the SKILL's accept rule takes (a false win).

usage:
  python benchmarks/processes/bench_processes.py [--out DIR] [--processes 1 2 5] [--repeats 10]
      [--warmup 1] [--comparisons 20] [--smoke]
  python benchmarks/processes/bench_processes.py --reanalyse benchmarks/results/processes.json

example:
  python benchmarks/processes/bench_processes.py --out benchmarks/results   # ~17 min on 2 busy cores
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts")]  # benchmark script, not library

from perftune.decide import stats  # noqa: E402
from perftune.measure import collect  # noqa: E402

CASES = ("r64_c4096_fp32", "r64_c4096_fp16")
BANDS = (0.01, 0.05)


def make_op(root: Path, repeats: int, warmup: int, kernel=None) -> Path:
    """A copy of the example with only the two r64_c4096 cases, frozen on the cpu backend;
    ``kernel``: a function that rewrites the test file's text before the freeze."""
    op = root / "softmax"
    shutil.copytree(ROOT / "examples" / "softmax", op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    if kernel is not None:
        test = op / "test_softmax.py"
        test.write_text(kernel(test.read_text(encoding="utf-8")), encoding="utf-8")
    spec = op / "SPEC.md"
    text = spec.read_text(encoding="utf-8")
    for row in ("| r512_c1024_fp32 | [512,1024] | float32 | yes |", "| r1024_c256_fp16 | [1024,256] | fp16 | yes |"):
        text = text.replace(row, row.replace("| yes |", "| no |"))
    spec.write_text(text, encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "freeze_cases.py"), "freeze", "--op-dir", str(op),
                    "--target-case-ids", *CASES, "--selection-mode", "user_selected", "--backend", "cpu",
                    "--op-name", "softmax_kernel", "--repeats", str(repeats), "--warmup", str(warmup)],
                   check=True, capture_output=True)
    return op


def measure_round(ctx, processes: int, scratch: Path, partner: Path | None = None) -> dict:
    """One round of both cases with the repeats over ``processes`` processes: samples, groups, wall
    time; with ``partner`` (a saved copy of the runner) a paired round, the copy as baseline arm."""
    spec = dataclasses.replace(ctx.spec, processes=processes)
    began, cases = time.perf_counter(), {}
    for case in ctx.manifest.cases:
        folder = Path(tempfile.mkdtemp(dir=scratch))
        if partner is None:
            results, base = ctx.backend.run_case(spec, case, folder), None
        else:
            results, base, _order = ctx.backend.run_paired_case(spec, dataclasses.replace(spec, runner=partner),
                                                                case, folder)
        cases[case.id] = {"samples_us": [r.duration_us for r in results], "processes": [r.process for r in results]}
        if base is not None:
            cases[case.id]["baseline_samples_us"] = [r.duration_us for r in base]
        shutil.rmtree(folder)
    return {"wall_s": time.perf_counter() - began, "cases": cases}


def judge(a: dict, b: dict | None, decision, aggregation: str, grouped: bool, round_noise: float | None = None) -> dict:
    """Per-case verdicts and whether the suite CI excludes 1: baseline round ``a`` vs candidate ``b``,
    or (``b`` None) the two arms of the paired round ``a``; ``round_noise``: a calibration's measured
    noise, which widens an independent suite CI as ``compare_perf.py formal`` does."""
    def arms_of(c: str) -> tuple:
        x, y = (a["cases"][c]["baseline_samples_us"], a["cases"][c]) if b is None else (a["cases"][c]["samples_us"],
                                                                                        b["cases"][c])
        gx = a["cases"][c]["processes"] if grouped else None
        return x, y["samples_us"], gx, y["processes"] if grouped else None
    arms = {c: arms_of(c) for c in CASES}
    verdicts = [stats.compare_samples(x, y, decision, paired=b is None, aggregation=aggregation,
                                      family_size=len(CASES), groups_b=gx, groups_c=gy).verdict
                for x, y, gx, gy in arms.values()]
    suite = stats.suite_score(arms, list(CASES), decision, paired=b is None, aggregation=aggregation)
    from perftune.decide import calibration
    ci = calibration.widen(None if suite.ci_low is None else [suite.ci_low, suite.ci_high],
                           None if b is None else round_noise)
    excludes = ci is not None and (ci[0] > 1 or ci[1] < 1)
    # the SKILL's accept rule (step 18): a target case `faster` and the suite CI entirely above 1
    return {"verdicts": verdicts, "suite_excludes_1": excludes, "accepted": "faster" in verdicts and ci is not None
            and ci[0] > 1}


KINDS = {"independent, apart": lambda s, k, n: (s[k], s[k + n]),
         "independent, adjacent": lambda s, k, n: (s[2 * k], s[2 * k + 1])}
CALIBRATED = "independent, apart, calibrated"


def calibrated(manifest, delta: float, first: dict, second: dict) -> dict:
    """What ``compare_perf.py calibrate`` freezes from two back-to-back baseline rounds (the product's
    code): ``effective_band`` (δ_eff) and ``measured_noise`` (which widens independent suite CIs)."""
    from perftune.decide import calibration
    rule = dataclasses.replace(manifest.protocol.decision, noise_band=delta)
    man = dataclasses.replace(manifest, protocol=dataclasses.replace(manifest.protocol, decision=rule))
    pick = lambda rnd, key: {c: rnd["cases"][c][key] for c in CASES}  # noqa: E731
    return calibration.measure([pick(first, "samples_us"), pick(second, "samples_us")], man,
                               [pick(first, "processes"), pick(second, "processes")])


def analyse(rounds: dict[int, list[dict]], paired: dict[int, list[dict]], n: int, manifest) -> list[dict]:
    """``independent, apart, calibrated``: comparison k (round k vs k + n) at the δ_eff that a calibration
    on rounds k and k + 1 (two back-to-back baseline rounds) freezes."""
    rows, decision, aggregation = [], manifest.protocol.decision, manifest.protocol.aggregation
    base_wall = statistics.median(r["wall_s"] for r in rounds[min(rounds)])
    for processes, series in rounds.items():
        for kind in list(KINDS) + [CALIBRATED, "paired"]:
            walls = [r["wall_s"] for r in (paired[processes] if kind == "paired" else series)]
            for delta, grouped in ((d, g) for d in BANDS for g in (True, False)):
                if grouped is False and (processes == 1 or kind == CALIBRATED):
                    continue  # one process: the two CIs are the same; calibration always uses the groups
                rule = dataclasses.replace(decision, noise_band=delta)
                cals = [calibrated(manifest, delta, series[k], series[k + 1]) if kind == CALIBRATED else
                        {"effective_band": delta, "measured_noise": None} for k in range(n)]
                bands = [c["effective_band"] for c in cals]
                judged = [judge(paired[processes][k], None, rule, aggregation, grouped) if kind == "paired" else
                          judge(series[k], series[k + n], dataclasses.replace(rule, noise_band=bands[k]),
                                aggregation, grouped, cals[k]["measured_noise"]) if kind == CALIBRATED else
                          judge(*KINDS[kind](series, k, n), rule, aggregation, grouped) for k in range(n)]
                verdicts = [v for j in judged for v in j["verdicts"]]
                rows.append({
                    "processes": processes, "kind": kind, "delta": delta,
                    "ci": "two_level" if grouped and processes > 1 else "one_level",
                    "comparisons": n, "case_verdicts": len(verdicts),
                    "false_faster": verdicts.count("faster") / len(verdicts),
                    "false_slower": verdicts.count("slower") / len(verdicts),
                    "equivalent": verdicts.count("equivalent") / len(verdicts),
                    "suite_ci_excludes_1": sum(j["suite_excludes_1"] for j in judged) / n,
                    "false_accept": sum(j["accepted"] for j in judged) / n,
                    "band_median": statistics.median(bands), "band_max": max(bands),
                    "median_round_wall_s": statistics.median(walls),
                    "wall_vs_min_processes": statistics.median(walls) / base_wall})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| rounds | processes × repeats | δ (δ_eff median, max) | CI | case verdicts | false `faster` | false `slower` "
           "| suite CI excludes 1 | accepted (false win) | round wall s (× independent P=1) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        band = f"{r['delta']:.0%}" + (f" ({r['band_median']:.1%}, {r['band_max']:.1%})" if r["kind"] == CALIBRATED else "")
        out.append(f"| {r['kind']} | {r['processes']} × {r['repeats_per_process']} | {band} | {r['ci']} | "
                   f"{r['case_verdicts']} | "
                   f"{r['false_faster']:.1%} | {r['false_slower']:.1%} | {r['suite_ci_excludes_1']:.1%} | {r['false_accept']:.1%} | "
                   f"{r['median_round_wall_s']:.1f} ({r['wall_vs_min_processes']:.2f}×) |")
    return "\n".join(out)


def reanalyse(path: Path) -> int:
    """Rows of ``path`` recomputed by today's analysis from the raw rounds it kept."""
    result = json.loads(path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="bench_processes_") as tmp:
        manifest = collect.prepare(make_op(Path(tmp), result["repeats"], result["warmup"]), collect.Overrides()).manifest
    rows = analyse({int(k): v for k, v in result["rounds"].items()},
                   {int(k): v for k, v in result["paired_rounds"].items()}, result["comparisons"], manifest)
    for row in rows:
        row["repeats_per_process"] = result["repeats"] // row["processes"]
    result["rows"] = rows
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(table(rows))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 5])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--comparisons", type=int, default=20, help="A/A comparisons per condition")
    parser.add_argument("--smoke", action="store_true", help="2 comparisons, processes 1 and 2")
    parser.add_argument("--reanalyse", type=Path, metavar="JSON",
                        help="recompute the rows of an earlier result from its raw rounds (no measuring), in place")
    args = parser.parse_args()
    if args.reanalyse:
        return reanalyse(args.reanalyse)
    if args.smoke:
        args.processes, args.comparisons = [1, 2], 2
    bad = [p for p in args.processes if p < 1 or args.repeats % p]
    if bad:
        print(f"error: bench_processes.py: --processes: {bad} do not divide --repeats {args.repeats} "
              "(give divisors)", file=sys.stderr)
        return 2
    load_before, began = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_processes_") as tmp:
        ctx = collect.prepare(make_op(Path(tmp), args.repeats, args.warmup), collect.Overrides())
        partner = Path(tmp) / "v000" / ctx.spec.runner.name
        partner.parent.mkdir()
        shutil.copy2(ctx.spec.runner, partner)  # the same code as the baseline arm (A/A)
        rounds: dict[int, list[dict]] = {p: [] for p in sorted(args.processes)}
        paired: dict[int, list[dict]] = {p: [] for p in sorted(args.processes)}
        conditions = sorted(args.processes)
        for index in range(2 * args.comparisons):
            shift = index % len(conditions)
            for processes in conditions[shift:] + conditions[:shift]:
                rounds[processes].append(measure_round(ctx, processes, Path(tmp)))
                if index % 2:
                    paired[processes].append(measure_round(ctx, processes, Path(tmp), partner))
            print(f"round {index + 1}/{2 * args.comparisons} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows = analyse(rounds, paired, args.comparisons, ctx.manifest)
    for row in rows:
        row["repeats_per_process"] = args.repeats // row["processes"]
    result = {"cases": list(CASES), "repeats": args.repeats, "warmup": args.warmup, "aggregation": ctx.manifest.protocol.aggregation,
              "comparisons": args.comparisons, "load_before": list(load_before), "load_after": list(os.getloadavg()),
              "cpu_count": os.cpu_count(), "total_s": time.perf_counter() - began, "rows": rows,
              "rounds": {str(p): r for p, r in rounds.items()},
              "paired_rounds": {str(p): r for p, r in paired.items()}}
    sys.path.insert(0, str(HERE.parent))
    import verdict_figures
    saved = verdict_figures.save(args.out, "processes", result, smoke=args.smoke)
    print(table(rows))
    print(f"load average before {load_before[0]:.1f}, after {result['load_after'][0]:.1f} "
          f"({os.cpu_count()} cores); {result['total_s']:.0f} s; raw rounds in {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
