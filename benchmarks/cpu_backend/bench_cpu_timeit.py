#!/usr/bin/env python3
"""cpu backend accuracy: the real cpu runner vs ``timeit`` on kernels of known cost, + timer overhead.

The kernel is a pure-Python busy loop ``busy_kernel(n)`` (no sleep, no I/O; cost linear in n). Its
cost per iteration is calibrated with ``timeit`` first, then one case per target cost
(1 us, 10 us, 100 us, 1 ms, 10 ms, 100 ms) is written into a generated operator dir
(``test_busyop.py`` + a v2 manifest, cpu backend, op name ``busy_kernel``). The real pipeline
measures it: ``scripts/collect_perf.py formal`` (selector preflight, one ``cpu_runner`` process per
case, GC off inside the timed call, ``perf_counter_ns`` around it). The same function with the same
argument is timed by ``timeit`` in this process (``autorange`` loop count, ``--repeats`` repeats,
per-call time: "hot"), and once more one call per repeat right after ``gc.collect()`` ("cold": what
the runner did before every sample until that was found to inflate µs kernels ~30x; kept as a
reference). Reported per kernel: medians, ratio cpu-runner / timeit (hot and cold).
``timer_overhead.py`` (the no-op through the runner's timing shim) gives the per-sample overhead.

usage:
  python benchmarks/cpu_backend/bench_cpu_timeit.py [--out DIR] [--repeats N] [--smoke]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "scripts")]  # benchmark script, not library

from perftune.measure import evidence  # noqa: E402
from perftune import fsio
from perftune.contract import protocol
from perftune.contract.manifest import make_protocol, parse_manifest  # noqa: E402

KERNEL = "def busy_kernel(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
TARGETS_US = (1, 10, 100, 1000, 10000, 100000)


def per_iteration_ns() -> float:
    namespace: dict = {}
    exec(KERNEL, namespace)
    timer = timeit.Timer("k(20000)", globals={"k": namespace["busy_kernel"]})
    number, _ = timer.autorange()
    return min(timer.repeat(5, number)) / number / 20000 * 1e9


def write_op(root: Path, sizes: dict[str, int], repeats: int, warmup: int) -> Path:
    op = root / "busyop"
    op.mkdir(parents=True)
    tests = "".join(f"\n\ndef test_{cid}():\n    busy_kernel({n})\n" for cid, n in sizes.items())
    fsio.write_text(op / "busyop_kernel.py", KERNEL)
    fsio.write_text(op / "test_busyop.py", "from busyop_kernel import busy_kernel\n" + tests)
    proto = make_protocol(backend="cpu", device_id=0, warmup=warmup, repeats=repeats, op_name="busy_kernel")
    ids = list(sizes)
    obj = {"schema_version": protocol.MANIFEST_SCHEMA_VERSION,
           "cases": [{"id": c, "shape": f"[{n}]", "dtype": "int64", "p0": True, "test_function": f"test_{c}"}
                     for c, n in sizes.items()],
           "optimization_target": {"case_ids": ids, "selection_mode": "all_p0_no_questions"},
           "protocol": proto.as_dict()}
    parse_manifest(obj)
    fsio.write_json(op / protocol.MANIFEST_NAME, obj)
    return op


def timeit_us(op: Path, n: int, repeats: int) -> tuple[list[float], list[float]]:
    """Per-call times (us): hot (``autorange`` loop, the timeit default) and cold (one call per
    repeat right after ``gc.collect()``)."""
    sys.path.insert(0, str(op))
    from busyop_kernel import busy_kernel
    timer = timeit.Timer("k(n)", globals={"k": busy_kernel, "n": n})
    number, _ = timer.autorange()
    hot = [t / number * 1e6 for t in timer.repeat(repeats, number)]
    cold = timeit.Timer("k(n)", setup="gc.collect()", globals={"k": busy_kernel, "n": n, "gc": gc})
    return hot, [t * 1e6 for t in cold.repeat(repeats, 1)]


def run(repeats: int, warmup: int, targets: tuple[int, ...], overhead_samples: int) -> dict:
    ns = per_iteration_ns()
    sizes = {f"t{t}us": max(1, round(t * 1000 / ns)) for t in targets}
    with tempfile.TemporaryDirectory(prefix="cpu_bench_") as tmp:
        op = write_op(Path(tmp), sizes, repeats, warmup)
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "collect_perf.py"), "formal", "--op-dir",
                               str(op), "--json"], capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"error: collect_perf.py formal failed: {proc.stderr.strip()[-300:]}")
        cases = evidence.load_round(op, "round_001").cases
        rows = []
        for cid, n in sizes.items():
            runner, (reference, cold) = cases[cid].samples_us, timeit_us(op, n, repeats)
            rows.append({"case": cid, "target_us": int(cid[1:-2]), "loop_iterations": n,
                         "cpu_runner_median_us": statistics.median(runner), "cpu_runner_min_us": min(runner),
                         "timeit_median_us": statistics.median(reference), "timeit_min_us": min(reference),
                         "timeit_cold_median_us": statistics.median(cold),
                         "ratio_median": statistics.median(runner) / statistics.median(reference),
                         "ratio_min": min(runner) / min(reference),
                         "ratio_cold_median": statistics.median(runner) / statistics.median(cold),
                         "cpu_runner_samples_us": runner, "timeit_samples_us": reference,
                         "timeit_cold_samples_us": cold})
    overhead = subprocess.run([sys.executable, str(HERE / "timer_overhead.py"), "--json", "--samples",
                               str(overhead_samples)], capture_output=True, text=True, timeout=600, check=True)
    return {"benchmark": "cpu_backend", "loop_ns_per_iteration": ns, "repeats": repeats, "warmup": warmup,
            "kernels": rows, "timer_overhead": json.loads(overhead.stdout)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results", help="results folder")
    parser.add_argument("--repeats", type=int, default=20, help="samples per kernel on each side")
    parser.add_argument("--smoke", action="store_true", help="one 10 us kernel, 5 repeats (CI smoke run)")
    args = parser.parse_args()
    result = run(5, 1, (10,), 2000) if args.smoke else run(args.repeats, 3, TARGETS_US, 20000)
    result["smoke"] = args.smoke
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_backend.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    from figures import cpu_figure
    cpu_figure(result, args.out / "cpu_backend_vs_timeit.png")
    for row in result["kernels"]:
        print(f"cpu {row['case']}: runner {row['cpu_runner_median_us']:.2f} us, timeit {row['timeit_median_us']:.2f} us, "
              f"ratio {row['ratio_median']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
