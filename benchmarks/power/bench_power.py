#!/usr/bin/env python3
"""Power on real known changes: how often the product calls a variant that does less work `faster` (issue 23).

The example operator (``examples/softmax``, its two ``r64_c4096`` target cases, 10 repeats, 1
warm-up) is rewritten so that its kernel computes the softmax ``PASSES`` times over the whole
input: the baseline makes 10 passes, variant ``-10%`` 9 and variant ``-30%`` 7, so each variant
does exactly that share less kernel work (the true speed-up also carries the fixed call cost; it
is measured and reported). The real cpu backend measures, per comparison k (all ``--comparisons``
of them, the order of the variant rounds rotating): two back-to-back baseline rounds (the
calibration of ``compare_perf.py calibrate``), one independent round of each variant, and one
round of each variant paired with a copy of the baseline (interleaved inside each process).
Verdicts are the product's (``stats.compare_samples``, Bonferroni over the two target cases,
``stats.suite_score``), reported per effect and protocol as the share of per-case ``faster``
verdicts (power) and of comparisons the SKILL's accept rule takes (a target case ``faster`` and
the suite CI above 1): independent at the frozen band, independent at the calibrated band δ_eff,
and paired at the frozen band; ``uptime`` load before and after; raw samples kept in the JSON.

usage:
  python benchmarks/power/bench_power.py [--out DIR] [--comparisons 20] [--repeats 10] [--warmup 1]
      [--processes 1] [--band 0.01] [--smoke]
  python benchmarks/power/bench_power.py --reanalyse benchmarks/results/power.json

example:
  python benchmarks/power/bench_power.py --out benchmarks/results   # ~10 min on 2 idle cores
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(HERE.parent / "processes")]  # benchmark script, not library

from perftune.decide import calibration, stats  # noqa: E402
from perftune.measure import collect  # noqa: E402
from bench_processes import CASES, calibrated, make_op, measure_round  # noqa: E402

BASE_PASSES = 10
VARIANTS = {"-10%": 9, "-30%": 7}
KERNEL = '''def softmax_kernel(x, out):
    """Benchmark kernel: the softmax computed once per pass over the whole input."""
    for _ in range(PASSES):
        xf = x.astype(np.float64)
        row_max = xf.max(axis=-1, keepdims=True)
        e = np.exp(xf - row_max)
        out[...] = (e / e.sum(axis=-1, keepdims=True)).astype(out.dtype)


'''


def with_passes(text: str, passes: int) -> str:
    """The example test file with its kernel replaced by the PASSES kernel."""
    new, count = re.subn(r"def softmax_kernel\(x, out\):\n.*?\n\n\n", KERNEL.replace("PASSES", str(passes)), text,
                         count=1, flags=re.S)
    if count != 1:
        raise SystemExit("error: bench_power.py: examples/softmax/test_softmax.py: softmax_kernel not found "
                         "(update KERNEL's anchor)")
    return new


def judge(base: dict, cand: dict | None, decision, aggregation: str, round_noise: float | None = None) -> dict:
    """Per-case verdicts, suite CI and the SKILL's accept rule: ``base`` vs ``cand``, or (``cand``
    None) the candidate arm of the paired round ``base`` against its baseline arm."""
    arms = {}
    for c in CASES:
        if cand is None:
            x, y = base["cases"][c]["baseline_samples_us"], base["cases"][c]
            gx = base["cases"][c]["processes"]
        else:
            x, y, gx = base["cases"][c]["samples_us"], cand["cases"][c], base["cases"][c]["processes"]
        arms[c] = (x, y["samples_us"], gx, y["processes"])
    verdicts = [stats.compare_samples(x, y, decision, paired=cand is None, aggregation=aggregation,
                                      family_size=len(CASES), groups_b=gx, groups_c=gy).verdict
                for x, y, gx, gy in arms.values()]
    suite = stats.suite_score(arms, list(CASES), decision, paired=cand is None, aggregation=aggregation)
    ci = calibration.widen(None if suite.ci_low is None else [suite.ci_low, suite.ci_high],
                           None if cand is None else round_noise)   # as compare_perf.py formal does
    above = ci is not None and ci[0] > 1  # None: a case without a usable CI
    return {"verdicts": verdicts, "suite_above_1": above, "accepted": "faster" in verdicts and above,
            "suite": suite.score}


def analyse(data: dict, manifest, band: float) -> list[dict]:
    decision = dataclasses.replace(manifest.protocol.decision, noise_band=band)
    aggregation = manifest.protocol.aggregation
    rows = []
    for name in VARIANTS:
        truth = {c: statistics.median(statistics.median(r["cases"][c]["samples_us"]) for r in data["baseline"])
                 / statistics.median(statistics.median(r["cases"][c]["samples_us"]) for r in data[name])
                 for c in CASES}
        for kind in ("independent", "independent, calibrated", "paired"):
            judged, bands = [], []
            for k, base in enumerate(data["baseline"]):
                if kind == "paired":
                    judged.append(judge(data[f"{name} paired"][k], None, decision, aggregation))
                    bands.append(band)
                    continue
                cal = ({"effective_band": band, "measured_noise": None} if kind == "independent" else
                       calibrated(manifest, band, base, data["second"][k]))
                bands.append(cal["effective_band"])
                judged.append(judge(base, data[name][k], dataclasses.replace(decision, noise_band=cal["effective_band"]),
                                    aggregation, cal["measured_noise"]))
            verdicts = [v for j in judged for v in j["verdicts"]]
            rows.append({"variant": name, "passes": VARIANTS[name], "kind": kind, "band": band,
                         "true_speedup": truth, "comparisons": len(judged), "case_verdicts": len(verdicts),
                         "faster": verdicts.count("faster") / len(verdicts),
                         "slower": verdicts.count("slower") / len(verdicts),
                         "suite_ci_above_1": sum(j["suite_above_1"] for j in judged) / len(judged),
                         "accepted": sum(j["accepted"] for j in judged) / len(judged),
                         "band_median": statistics.median(bands), "band_max": max(bands)})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| variant (true speed-up per case) | rounds | δ (median, max) | case verdicts | `faster` (power) "
           "| wrong `slower` | suite CI above 1 | accepted by the SKILL's rule |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        truth = " / ".join(f"{v:.3f}" for v in r["true_speedup"].values())
        out.append(f"| {r['variant']} ({truth}) | {r['kind']} | {r['band_median']:.1%}, {r['band_max']:.1%} | "
                   f"{r['case_verdicts']} | {r['faster']:.1%} | {r['slower']:.1%} | {r['suite_ci_above_1']:.1%} | "
                   f"{r['accepted']:.1%} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--comparisons", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1, help="processes per case (must divide --repeats)")
    parser.add_argument("--band", type=float, default=0.01, help="the frozen noise band δ (default 1 %%)")
    parser.add_argument("--smoke", action="store_true", help="1 comparison, 5 repeats, no warm-up")
    parser.add_argument("--reanalyse", type=Path, metavar="JSON",
                        help="recompute the rows of an earlier result from its raw rounds (no measuring), in place")
    args = parser.parse_args()
    if args.reanalyse:
        result = json.loads(args.reanalyse.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory(prefix="bench_power_") as tmp:
            manifest = collect.prepare(make_op(Path(tmp), result["repeats"], result["warmup"]),
                                       collect.Overrides()).manifest
        result["rows"] = analyse(result["rounds"], manifest, result["rows"][0]["band"])
        args.reanalyse.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(table(result["rows"]))
        return 0
    if args.smoke:
        args.comparisons, args.repeats, args.warmup = 1, 5, 0
    if args.processes < 1 or args.repeats % args.processes or args.comparisons < 1:
        print(f"error: bench_power.py: --processes {args.processes} must divide --repeats {args.repeats} and "
              "--comparisons be at least 1 (give a divisor)", file=sys.stderr)
        return 2
    load_before, began = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_power_") as tmp:
        ctx = collect.prepare(make_op(Path(tmp), args.repeats, args.warmup, lambda t: with_passes(t, BASE_PASSES)),
                              collect.Overrides())
        spec = dataclasses.replace(ctx.spec, processes=args.processes)
        ctx = dataclasses.replace(ctx, spec=spec)
        partner = Path(tmp) / "v000" / spec.runner.name
        partner.parent.mkdir()
        shutil.copy2(spec.runner, partner)
        runners = {}
        for name, passes in VARIANTS.items():
            path = Path(tmp) / f"passes_{passes}" / spec.runner.name
            path.parent.mkdir()
            path.write_text(with_passes(spec.runner.read_text(encoding="utf-8"), passes), encoding="utf-8")
            runners[name] = path
        data: dict[str, list[dict]] = {"baseline": [], "second": [], **{n: [] for n in VARIANTS},
                                       **{f"{n} paired": [] for n in VARIANTS}}
        for k in range(args.comparisons):
            data["baseline"].append(measure_round(ctx, args.processes, Path(tmp)))
            data["second"].append(measure_round(ctx, args.processes, Path(tmp)))
            jobs = [(n, p) for n in VARIANTS for p in (False, True)]
            for name, paired_job in jobs[k % len(jobs):] + jobs[:k % len(jobs)]:
                variant = dataclasses.replace(ctx, spec=dataclasses.replace(spec, runner=runners[name]))
                data[f"{name} paired" if paired_job else name].append(
                    measure_round(variant, args.processes, Path(tmp), partner if paired_job else None))
            print(f"comparison {k + 1}/{args.comparisons} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        rows = analyse(data, ctx.manifest, args.band)
    result = {"cases": list(CASES), "repeats": args.repeats, "warmup": args.warmup, "processes": args.processes,
              "base_passes": BASE_PASSES, "variants": VARIANTS, "comparisons": args.comparisons,
              "load_before": list(load_before), "load_after": list(os.getloadavg()), "cpu_count": os.cpu_count(),
              "total_s": time.perf_counter() - began, "rows": rows, "rounds": data}
    sys.path.insert(0, str(HERE.parent))
    import verdict_figures
    saved = verdict_figures.save(args.out, "power", result, smoke=args.smoke)
    print(table(rows))
    print(f"load average before {load_before[0]:.1f}, after {result['load_after'][0]:.1f} "
          f"({os.cpu_count()} cores); {result['total_s']:.0f} s; raw rounds in {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
