#!/usr/bin/env python3
"""Autotune's acceptance figures (issue 39): a pypto-sim search's wall time, and a cpu A/A search's false wins.

pypto-sim: the pypto_softmax example set up by SKILL.md's commands up to its plan's search (complete
correctness, freeze, golden, baseline round, ledger, v000 recorded, ``tune.py declare`` with the
plan's own arguments from ``variants/variants.json``: 12 TILE_BYTES points, grid, seed 0, batch 4),
then ``tune.py run`` timed (wall, one subprocess, its default workers = the cores). Afterwards, in
the same run, the **serial raw simulation** of the same points: each point's code (archived under
``points/t_NNN/``) launched alone, one target case after another, through the backend's own single
launch (one fresh simulator process, ``PyptoSimBackend._launch``, no correctness, no paired base,
no product bookkeeping), timed one at a time. Reported: ``wall ÷ (serial raw ÷ cores)`` (target
<= 1.5), the points by status, and whether the delivered best point is the best by those exact
cycles (the frozen suite aggregation of base ÷ point over the target cases, ties allowed).

cpu A/A: the cpu softmax example (two r64_c4096 target cases) with an unused constant
``AA_COPY`` added, so every point of a search over ``AA_COPY`` runs the same kernel. It is frozen,
measured and recorded as v000 once; each of N runs declares the search on a fresh copy and runs it
(``tune.py run``: correctness + paired quick screen per point, the points side by side). A run has
a **screen winner** when its best point passes the frozen promotion rule; only then the SKILL goes
on, and so does the benchmark: the paired formal round of the point against v000 and
``compare_perf.py formal``, whose ``item_acceptance`` ``accepted`` is a **false win**. ``--burners``
busy loops keep the host loaded; the load average is recorded before, during and after.

usage:
  python benchmarks/tune/bench_tune.py [--out DIR] [--part pypto-sim|cpu|both] [--runs N] [--points P]
      [--burners B] [--smoke]

example:
  nice -n 10 python benchmarks/tune/bench_tune.py --out benchmarks/results   # ~20-40 min on 2 busy cores
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(HERE.parent / "processes")]  # benchmark script, not library

import bench_processes  # noqa: E402

SIM_EXAMPLE = ROOT / "examples" / "pypto_softmax"
SIM_ITEM = "general-13"
TARGET_RATIO = 1.5
AA_CONSTANT = "AA_COPY"


def script(name: str, *args, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *map(str, args)], capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        sys.exit(f"error: {name} {' '.join(map(str, args[:2]))} exited {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return proc


def out_json(name: str, *args) -> dict:
    return json.loads(script(name, *args, "--json").stdout)


def plan_search() -> tuple[list[str], str]:
    """The pypto_softmax plan's search experiment: its tune.py declare arguments and hypothesis."""
    plan = json.loads((SIM_EXAMPLE / "variants" / "variants.json").read_text(encoding="utf-8"))
    exp = next(v for v in plan["variants"] if v.get("item_id") == SIM_ITEM and v.get("search"))
    return list(exp["search"]), exp["hypothesis"]


def setup_sim(root: Path, budget: int | None) -> Path:
    """The example up to its search, by SKILL.md's commands (the arguments the demo passes)."""
    op = root / "pypto_softmax"
    shutil.copytree(SIM_EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    run = out_json("check_correctness.py", "--op-dir", op)["run_id"]
    script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "all_p0", "--selection-mode",
           "all_p0_no_questions", "--backend", "pypto-sim", "--op-name", "pypto_softmax_kernel", "--device", "0",
           "--warmup", "0", "--repeats", "2", "--noise-band", "0.01", "--json")
    script("collect_golden_reference.py", op / "pypto_softmax_golden.py", "--function", "pypto_softmax_golden",
           "--factory", "golden_cases", "--case-manifest", op / "PERFORMANCE_CASES.json", "--output-dir", op,
           "--device", "0", "--warmup", "0", "--repeats", "2", "--seed", "42", "--backend", "pypto-sim", "--json")
    return _record_and_declare(op, run, SIM_ITEM, *plan_search(), budget=budget)


def _record_and_declare(op: Path, run: str, item: str, args: list[str], hypothesis: str, budget: int | None) -> Path:
    script("collect_perf.py", "formal", "--op-dir", op, "--json")
    script("ledger.py", "init", "--op-dir", op, "--json")
    script("select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", "round_001",
           "--correctness", run, "--compliance", "one kernel launch, wrapper unchanged", "--json")
    if item:
        script("tune.py", "declare", "--op-dir", op, "--item", item, *args, *(["--budget", budget] if budget else []),
               "--hypothesis", hypothesis, "--json")
    return op


def timed_run(op: Path, item: str, *extra: str) -> tuple[float, dict]:
    began = time.monotonic()
    out = out_json("tune.py", "run", "--op-dir", op, "--item", item, *extra)
    return time.monotonic() - began, out


def serial_raw(op: Path, points: list[dict], version: str | None = None) -> list[dict]:
    """Each point's code (or a recorded ``version``'s) launched alone on each target case, one launch at
    a time (a fresh simulator process each)."""
    from perftune.measure import collect
    rows = []
    with tempfile.TemporaryDirectory(prefix="raw_") as tmp:
        for p in points:
            work = Path(tmp) / f"t_{p['trial']:03d}" / op.name
            shutil.copytree(op, work, ignore=shutil.ignore_patterns("__pycache__", "search", "quick", "round_*"))
            code = (op / "docs/perf/versions" / version if version else
                    op / "docs/perf/search" / SIM_ITEM / "points" / f"t_{p['trial']:03d}")
            for f in code.glob("test_*.py"):
                shutil.copy2(f, work / f.name)
            ctx = collect.prepare(work, collect.Overrides())
            targets = ctx.manifest.target_case_ids or [c.id for c in ctx.manifest.cases]
            for case in (c for c in ctx.manifest.cases if c.id in targets):
                rows.append(_one_launch(ctx, case, work / "launch" / case.id, p["trial"]))
    return rows


def _one_launch(ctx, case, folder: Path, trial: int) -> dict:
    began = time.monotonic()
    try:
        ctx.backend._launch(ctx.spec, case, folder, mode="time", warmup=0)
        us, error = ctx.backend.read_repeat(folder, ctx.spec.op_name).duration_us, None
    except Exception as exc:  # noqa: BLE001 - a point whose launch fails still took its time
        us, error = None, str(exc).splitlines()[0][:200]
    return {"trial": trial, "case": case.id, "seconds": round(time.monotonic() - began, 3), "duration_us": us,
            "error": error}


def exact_best(raw: list[dict], base: dict[str, float], metric: str) -> tuple[list[int], dict[int, float]]:
    """The points the exact cycles rank first (ties kept): the frozen suite metric of base ÷ point
    over the target cases (mean or geometric mean of the per-case speed-ups); a point with a failed
    launch has none."""
    scores: dict[int, float] = {}
    for trial in sorted({r["trial"] for r in raw}):
        rows = [r for r in raw if r["trial"] == trial]
        if all(r["duration_us"] for r in rows):
            ups = [base[r["case"]] / r["duration_us"] for r in rows]
            scores[trial] = (math.exp(sum(map(math.log, ups)) / len(ups)) if metric == "geomean_speedup"
                             else sum(ups) / len(ups))
    top = max(scores.values()) if scores else None
    return [t for t, s in scores.items() if top is not None and math.isclose(s, top, rel_tol=1e-12)], scores


def part_sim(tmp: Path, budget: int | None) -> dict:
    load_before, began = os.getloadavg(), time.monotonic()
    op = setup_sim(tmp, budget)
    setup_s = time.monotonic() - began
    wall, out = timed_run(op, SIM_ITEM)
    load_search = os.getloadavg()
    points = out["points"]
    raw = serial_raw(op, points)
    base_rows = serial_raw(op, [{"trial": -1}], version="v000")
    base = {r["case"]: r["duration_us"] for r in base_rows}
    manifest = json.loads((op / "PERFORMANCE_CASES.json").read_text(encoding="utf-8"))
    metric = manifest["protocol"]["decision"].get("aggregate_metric", "mean_case_speedup")
    best, scores = exact_best(raw, base, metric)
    raw_s, cores = sum(r["seconds"] for r in raw), os.cpu_count() or 1
    screened = {(p["trial"], c["case"]): c["quick_us"] for p in points for c in p.get("cases") or []}
    same = all(screened[(r["trial"], r["case"])] in (r["duration_us"], [r["duration_us"]])
               or _median(screened[(r["trial"], r["case"])]) == r["duration_us"]
               for r in raw if (r["trial"], r["case"]) in screened)
    delivered = (out.get("best") or {}).get("trial")
    return {"points": len(points), "workers": out["workers"], "engine": out["engine"], "slots": out.get("slots"),
            "slot_use": out.get("slot_use"),
            "statuses": {s: sum(p["status"] == s for p in points) for s in sorted({p["status"] for p in points})},
            "setup_s": round(setup_s, 1), "search_wall_s": round(wall, 1), "serial_raw_s": round(raw_s, 1),
            "raw_launches": len(raw), "cores": cores, "wall_per_raw_over_cores": round(wall / (raw_s / cores), 2),
            "target": TARGET_RATIO, "meets_target": wall <= TARGET_RATIO * raw_s / cores,
            "delivered_best": {"trial": delivered, "values": (out.get("best") or {}).get("values")},
            "exact_best_trials": best, "delivered_is_exact_best": delivered in best if best else delivered is None, "metric": metric,
            "exact_scores": {str(t): round(s, 6) for t, s in scores.items()},
            "screen_cycles_equal_raw": same, "base_us": base, "raw_launch_rows": raw,
            "point_rows": [{k: p.get(k) for k in ("trial", "values", "status", "objective", "failure")} for p in points],
            "load_before": _load(load_before), "load_after_search": _load(load_search), "load_after": _load(os.getloadavg())}


def _median(v):
    v = sorted(v) if isinstance(v, list) else [v]
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def _load(avg) -> list[float]:
    return [round(x, 2) for x in avg]


def setup_aa(tmp: Path, points: int) -> tuple[Path, str, list[str]]:
    """The cpu softmax with an unused constant, frozen, measured and recorded once; the search item."""
    insert = lambda text: text.replace("\n\ndef softmax_kernel", f"\n{AA_CONSTANT} = 0\n\n\ndef softmax_kernel", 1)  # noqa: E731
    op = bench_processes.make_op(tmp, 10, 1, kernel=insert)
    run = out_json("check_correctness.py", "--op-dir", op)["run_id"]
    _record_and_declare(op, run, "", [], "", None)
    ledger = json.loads((op / "docs/perf/ledger.json").read_text(encoding="utf-8"))
    item = next(i["item_id"] for i in ledger["items"] if i["source_kind"] == "general_method")
    return op, item, ["--param", f"{AA_CONSTANT}={','.join(map(str, range(points)))}", "--batch", str(points)]


def aa_run(prepared: Path, tmp: Path, index: int, item: str, args: list[str]) -> dict:
    op = tmp / f"run_{index:03d}" / prepared.name
    shutil.copytree(prepared, op, symlinks=True)
    script("tune.py", "declare", "--op-dir", op, "--item", item, *args, "--hypothesis",
           "A/A: every point runs the same kernel; no point may win", "--json")
    wall, out = timed_run(op, item)
    ranked = [p for p in out["points"] if p["status"] == "measured"]
    best = next((p for p in ranked if p["trial"] == (out.get("best") or {}).get("trial")), None)
    row = {"run": index, "search_s": round(wall, 1), "statuses": [p["status"] for p in out["points"]],
           "objectives": [p.get("objective") for p in out["points"]], "best_trial": best and best["trial"],
           "screen_winner": bool(best and best.get("promote")), "formal": None, "accepted": False,
           "load": round(os.getloadavg()[0], 2)}
    if row["screen_winner"]:   # the SKILL's next steps for a promoted point: paired formal round, compare
        rnd = out_json("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v000")
        name = Path(rnd["round"]).name
        cmp = script("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_001", "--candidate", name,
                     "--json", check=False)
        decision = json.loads(cmp.stdout)["item_acceptance"]
        row.update(formal=name, acceptance=decision.get("status"), accepted=decision.get("status") == "accepted")
    shutil.rmtree(op.parent, ignore_errors=True)
    return row


def part_aa(tmp: Path, runs: int, points: int, burners: int) -> dict:
    load_before, began = os.getloadavg(), time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
    rows = []
    try:
        prepared, item, args = setup_aa(tmp / "prepared", points)
        for index in range(runs):
            rows.append(aa_run(prepared, tmp, index, item, args))
            print(f"A/A run {index + 1}/{runs}: winner {rows[-1]['screen_winner']}, accepted {rows[-1]['accepted']}, "
                  f"load {rows[-1]['load']}", file=sys.stderr)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    loads = [r["load"] for r in rows]
    return {"runs": runs, "points_per_search": points, "item": item, "burners": burners,
            "screen_winners": sum(r["screen_winner"] for r in rows), "accepted": sum(r["accepted"] for r in rows),
            "target_accepted": 0, "meets_target": not any(r["accepted"] for r in rows),
            "load_before": _load(load_before), "load_during_min_max": [min(loads), max(loads)] if loads else None,
            "load_after": _load(os.getloadavg()), "total_s": round(time.monotonic() - began, 1), "rows": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--part", choices=("pypto-sim", "cpu", "both"), default="both")
    parser.add_argument("--runs", type=int, default=20, help="cpu A/A searches (default 20)")
    parser.add_argument("--points", type=int, default=2, help="points per A/A search, all the same code (default 2)")
    parser.add_argument("--burners", type=int, default=1, help="busy-loop processes during the A/A part")
    parser.add_argument("--smoke", action="store_true", help="a 2-point pypto-sim search (budget 2), 1 A/A run")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.points < 2:
        print("error: bench_tune.py: --runs/--points: need >= 1 run and >= 2 points (give larger values)",
              file=sys.stderr)
        return 2
    if args.smoke:
        args.runs = 1
    result = {"smoke": args.smoke, "cpu_count": os.cpu_count(), "started_load": _load(os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="bench_tune_") as tmp:
        if args.part in ("pypto-sim", "both"):
            result["pypto_sim"] = part_sim(Path(tmp) / "sim", 2 if args.smoke else None)
            print(f"pypto-sim: {json.dumps({k: v for k, v in result['pypto_sim'].items() if 'rows' not in k})}",
                  file=sys.stderr)
        if args.part in ("cpu", "both"):
            result["cpu_aa"] = part_aa(Path(tmp) / "aa", args.runs, args.points, args.burners)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "tune" + ("" if args.part == "both" else "_" + args.part.replace("-", "_"))
    path = args.out / f"{name}{'_smoke' if args.smoke else ''}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(summary(result))
    print(path)
    return 0


def summary(result: dict) -> str:
    lines = []
    if "pypto_sim" in result:
        s = result["pypto_sim"]
        lines.append(f"pypto-sim search: {s['points']} points {s['statuses']}, wall {s['search_wall_s']} s, serial raw "
                     f"{s['serial_raw_s']} s / {s['cores']} cores -> ratio {s['wall_per_raw_over_cores']} (target <= "
                     f"{s['target']}); slot use {s.get('slot_use')}; delivered best t_{s['delivered_best']['trial']} exact best "
                     f"{s['exact_best_trials']}: {s['delivered_is_exact_best']}; load {s['load_before']} -> {s['load_after']}")
    if "cpu_aa" in result:
        a = result["cpu_aa"]
        lines.append(f"cpu A/A: {a['accepted']} accepted, {a['screen_winners']} screen winners in {a['runs']} runs of "
                     f"{a['points_per_search']} points; load {a['load_before']} before, {a['load_during_min_max']} "
                     f"during ({a['burners']} burner(s))")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
