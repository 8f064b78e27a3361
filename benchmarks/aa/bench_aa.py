#!/usr/bin/env python3
"""Real cpu A/A under load: false directional verdicts of the product's compare (#27 items 8, 10).

Unchanged code: the shipped softmax (``examples/softmax``, its two ``r64_c4096`` target cases) and a
byte-identical copy of its runner as the paired partner, measured by the real cpu backend
(``CpuBackend.run_case`` / ``run_paired_case``: fresh ``cpu_runner`` processes). ``--burners`` busy-loop
processes run alongside the whole benchmark, so the host is loaded even when idle; the load average is
recorded before, after and after every round. 2N independent rounds and N paired rounds, interleaved.
Every verdict is the product's: ``compare.build_performance`` (per-case verdicts at the frozen band,
Bonferroni over the targets, suite verdict, ``item_acceptance``) on the measured samples, in three modes:

- ``independent, not calibrated``: round k vs round k + N, no calibration (the rule: no sized verdict);
- ``independent, calibrated``: the same pairs after ``calibration.measure`` on rounds k, k + 1 (two
  back-to-back baseline rounds): δ_eff and the widened suite CI, as ``compare_perf.py`` then does;
- ``paired``: the two arms of paired round k (the SKILL's formal rounds and quick screens).

Plus, for contrast, ``independent, before the rule``: the uncalibrated pairs judged as they were before
this rule (frozen band, no widening). Counted per mode: per-case ``faster``/``slower`` (all false), suite
verdicts ``faster``/``slower`` (a suite CI excluding 1 that the product reports as a direction), the raw
suite CI excluding 1, and ``item_acceptance`` ``accepted`` (a false win). Target: ≤ 5 % each.

usage:
  python benchmarks/aa/bench_aa.py [--out DIR] [--comparisons N] [--repeats R] [--processes P]
      [--burners B] [--quick | --smoke]

example:
  python benchmarks/aa/bench_aa.py --out benchmarks/results   # ~10-20 min on 2 busy cores
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(HERE.parent / "processes")]  # benchmark script, not library

import bench_processes  # noqa: E402
from perftune.decide import calibration, compare  # noqa: E402
from perftune.measure import collect  # noqa: E402

TARGET = 0.05
MODES = ("independent, before the rule", "independent, not calibrated", "independent, calibrated", "paired")
RECORD = {"path": "PERFORMANCE_CASES.json", "sha256": "0" * 64, "size_bytes": 1, "schema_version": 2}


def as_round(rnd: dict, name: str, ctx, paired: bool) -> SimpleNamespace:
    """A measured round in the shape ``compare.build_performance`` reads (what ``evidence.load_round`` gives)."""
    proto = ctx.protocol
    collection = {"collection_id": name, "backend": "cpu", "device_id": proto.device_id, "seed": proto.seed,
                  "warmup": proto.warmup, "repeats": proto.repeats, "target_op_name": proto.op_name,
                  "selector": {}, "protocol": {"processes": rnd["processes"]}}
    if paired:
        collection["paired"] = {"baseline_version": "v000"}
    cases = {c: SimpleNamespace(samples_us=v["samples_us"], processes=v["processes"], repeats=(),
                                baseline_samples_us=v.get("baseline_samples_us") if paired else None)
             for c, v in rnd["cases"].items()}
    return SimpleNamespace(collection=collection, cases=cases, partner=None)


def decide(ctx, base, cand, manifest=None, round_noise=None) -> dict:
    perf = compare.build_performance(task="aa", manifest=manifest or ctx.manifest, manifest_record=RECORD,
                                     baseline=base, candidate=cand, golden_us=None, round_noise=round_noise)
    targets = [r for r in perf["per_case"] if r["target"]]
    ci = perf["suite"]["ci"]
    return {"verdicts": [r["verdict"] for r in targets], "suite_verdict": perf["suite"]["verdict"],
            "suite_ci_excludes_1": ci is not None and (ci[0] > 1 or ci[1] < 1),
            "accepted": perf["item_acceptance"]["status"] == "accepted",
            "band": perf["protocol"]["decision"]["noise_band"]}


def with_band(manifest, band: float):
    decision = dataclasses.replace(manifest.protocol.decision, noise_band=band)
    return dataclasses.replace(manifest, protocol=dataclasses.replace(manifest.protocol, decision=decision))


def analyse(ctx, rounds: list[dict], paired: list[dict], n: int) -> list[dict]:
    """One row per mode: the shares of false directional verdicts over the n comparisons."""
    indep = [as_round(r, f"round_{i:03d}", ctx, False) for i, r in enumerate(rounds)]
    judged: dict[str, list[dict]] = {m: [] for m in MODES}
    for k in range(n):
        judged[MODES[0]].append(decide(ctx, indep[k], indep[k + n], round_noise=0.0))   # as before the rule
        judged[MODES[1]].append(decide(ctx, indep[k], indep[k + n]))
        pick = lambda rnd, key: {c: rnd["cases"][c][key] for c in ctx.manifest.target_case_ids}  # noqa: E731
        cal = calibration.measure([pick(rounds[k], "samples_us"), pick(rounds[k + 1], "samples_us")], ctx.manifest,
                                  [pick(rounds[k], "processes"), pick(rounds[k + 1], "processes")])
        judged[MODES[2]].append(decide(ctx, indep[k], indep[k + n], with_band(ctx.manifest, cal["effective_band"]),
                                       cal["measured_noise"]))
        judged[MODES[3]].append(decide(ctx, indep[k], as_round(paired[k], f"paired_{k:03d}", ctx, True)))
    rows = []
    for mode, items in judged.items():
        verdicts = [v for j in items for v in j["verdicts"]]
        directional = sum(v in ("faster", "slower") for v in verdicts) / len(verdicts)
        suite = sum(j["suite_verdict"] in ("faster", "slower") for j in items) / n
        rows.append({"mode": mode, "comparisons": n, "case_verdicts": len(verdicts),
                     "false_faster": verdicts.count("faster") / len(verdicts),
                     "false_slower": verdicts.count("slower") / len(verdicts),
                     "false_directional": directional, "inconclusive": verdicts.count("inconclusive") / len(verdicts),
                     "suite_directional": suite,
                     "suite_ci_excludes_1": sum(j["suite_ci_excludes_1"] for j in items) / n,
                     "false_accept": sum(j["accepted"] for j in items) / n,
                     "band_median": sorted(j["band"] for j in items)[n // 2],
                     "meets_target": directional <= TARGET and suite <= TARGET})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| mode | comparisons (case verdicts) | band δ (median) | false `faster` + `slower` per case | "
           "suite verdict `faster`/`slower` | suite CI excludes 1 (raw) | `accepted` (false win) | ≤ 5 % |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['mode']} | {r['comparisons']} ({r['case_verdicts']}) | {r['band_median']:.1%} | "
                   f"{r['false_directional']:.1%} | {r['suite_directional']:.1%} | {r['suite_ci_excludes_1']:.1%} | "
                   f"{r['false_accept']:.1%} | {'yes' if r['meets_target'] else 'no'} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--comparisons", type=int, default=20, help="A/A comparisons per mode")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="processes per case (divides --repeats)")
    parser.add_argument("--burners", type=int, default=1, help="busy-loop processes loading the host meanwhile")
    parser.add_argument("--quick", "--smoke", dest="quick", action="store_true",
                        help="2 comparisons, 6 repeats, 1 process (the smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.comparisons, args.repeats, args.processes = 2, 6, 1
    if args.comparisons < 2 or args.processes < 1 or args.repeats % args.processes:
        print("error: bench_aa.py: --comparisons/--processes: need >= 2 comparisons and processes dividing "
              f"--repeats {args.repeats} (give divisors)", file=sys.stderr)
        return 2
    load_before, began, loads = os.getloadavg(), time.perf_counter(), []
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    try:
        with tempfile.TemporaryDirectory(prefix="bench_aa_") as tmp:
            ctx = collect.prepare(bench_processes.make_op(Path(tmp), args.repeats, 1), collect.Overrides())
            partner = Path(tmp) / "v000" / ctx.spec.runner.name
            partner.parent.mkdir()
            shutil.copy2(ctx.spec.runner, partner)   # the same kernel, a second copy (A/A)
            rounds, paired = [], []
            for index in range(2 * args.comparisons):
                rounds.append({**bench_processes.measure_round(ctx, args.processes, Path(tmp)),
                               "processes": args.processes})
                if index % 2:
                    paired.append({**bench_processes.measure_round(ctx, args.processes, Path(tmp), partner),
                                   "processes": args.processes})
                loads.append(os.getloadavg()[0])
                print(f"round {index + 1}/{2 * args.comparisons}, load {loads[-1]:.1f}", file=sys.stderr)
    finally:
        for proc in burners:
            proc.terminate()
            proc.wait()
    rows = analyse(ctx, rounds, paired, args.comparisons)
    result = {"smoke": args.quick, "cases": list(ctx.manifest.target_case_ids), "repeats": args.repeats,
              "processes": args.processes, "warmup": 1, "aggregation": ctx.protocol.aggregation,
              "frozen_band": ctx.manifest.protocol.decision.noise_band, "comparisons": args.comparisons,
              "burners": args.burners, "cpu_count": os.cpu_count(), "load_before": list(load_before),
              "load_after": list(os.getloadavg()), "load_during_min_max": [min(loads), max(loads)],
              "total_s": time.perf_counter() - began, "target": TARGET, "rows": rows,
              "rounds": rounds, "paired_rounds": paired}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "aa.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(table(rows))
    print(f"load average {load_before[0]:.1f} before, {min(loads):.1f}-{max(loads):.1f} during, "
          f"{result['load_after'][0]:.1f} after ({os.cpu_count()} cores, {args.burners} burner(s)); "
          f"{result['total_s']:.0f} s; {args.out / 'aa.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
