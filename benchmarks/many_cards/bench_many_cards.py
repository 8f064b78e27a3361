#!/usr/bin/env python3
"""Many cards (#22.4): 8 cases of one round on 8 fake cards against the serial round.

Runs the real ``collect_perf.py formal`` twice on a tiny 8-case operator with the fake msprof on
PATH (``FAKE_MSPROF_SLEEP`` per profiled run stands for the card's time): once serially, once with
``--devices 0,...,7``; reports the wall times, the speed-up and whether the round evidence is the
same apart from timestamps, scratch names and device ids. Writes ``results/many_cards.json``.

Beside the wall times, for each round: the CPU time of all its processes (the CLI, the profiler, the
case adapter; ``RUSAGE_CHILDREN``) per profiled run, and the load average before and after (the
machine may be shared). The round's fixed part (CLI start-up, selector preflight, environment probe:
everything outside the profiled runs, from the fake's recorded spans) does not parallelise; its
Amdahl bound ``serial / (fixed + (serial - fixed) / cards)`` says how much speed-up the benchmark's
own design allows at this sleep.

usage: bench_many_cards.py [--sleep S] [--cases N] [--output FILE]

example: python3 benchmarks/many_cards/bench_many_cards.py --sleep 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fixtures" / "msprof"
TARGET = "copy_kernel_0"


def make_op(root: Path, cases: list[str]) -> Path:
    """A tiny operator whose P0 tests only launch a no-op kernel through its wrapper (the fake msprof
    stands for the card; freeze resolves the launcher ``copy_kernel`` of ``copy_kernel_0``)."""
    op = root / "copyop"
    op.mkdir(parents=True)
    rows = "\n".join(f"| {c} | [8,{16 * (i + 1)}] | float32 | yes | test_{c} |" for i, c in enumerate(cases))
    (op / "SPEC.md").write_text("# SPEC: copyop\n\n## 3. Performance P0 cases\n\n| id | shape | dtype | p0 | "
                                f"test_function |\n|----|-------|-------|----|---------------|\n{rows}\n")
    (op / "test_copyop.py").write_text("def copy_kernel(x):\n    return x\n\n\ndef copy_wrapper(x):\n    return "
                                       "copy_kernel(x)\n\n\n" + "".join(f"def test_{c}():\n    copy_wrapper(0)\n\n\n"
                                                                           for c in cases))
    return op


def fake_env(tmp: Path, sleep: float, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "FAKE_MSPROF_PYTHON": sys.executable, "FAKE_MSPROF_TARGET": TARGET, "FAKE_MSPROF_SLEEP": str(sleep),
            "PERFTUNE_DEVICE_LOCK_DIR": str(tmp / "locks"), **extra}


def script(name: str, *args, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / name), *map(str, args)], env=env,
                          capture_output=True, text=True)


def freeze(op: Path, cases: list[str], env: dict[str, str]) -> None:
    proc = script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", *cases, "--selection-mode",
                  "all_p0_no_questions", "--backend", "msprof", "--op-name", TARGET, "--repeats", "1", "--warmup", "0",
                  env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)


def round_files(op: Path) -> dict[str, str]:
    """round_001 with timestamps, collection ids, scratch names, seals and device ids normalised."""
    out = {}
    for path in sorted((op / "docs/perf/round_001").rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            text = re.sub(r"\d{8}T\d{6}Z|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\.msprof_\w+", "<X>", text)
            text = text.replace(str(op.parent), "<OP>")
            text = re.sub(r'("n_files": \d+,\s*"sha256": )"[0-9a-f]{64}"', r'\1"<X>"', text)  # seal over the logs
            text = re.sub(r',?\s*"case_devices": \{[^}]*\}', "", text)
            out[path.relative_to(op).as_posix()] = text
    return out


def collect(op: Path, env: dict[str, str], devices: list[int] | None) -> tuple[float, dict]:
    start = time.monotonic()
    proc = script("collect_perf.py", "formal", "--op-dir", op, "--json",
                  *(["--devices", ",".join(map(str, devices))] if devices else []), env=env)
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return took, json.loads(proc.stdout)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured_round(op: Path, env: dict[str, str], devices: list[int] | None, spans: Path) -> dict:
    """One formal round: wall and CPU time, profiled runs, its result, and its fixed part (before the
    first profiled run starts and after the last one ends: CLI start-up, preflight, probe, summary)."""
    cpu, began = children_cpu(), time.time()
    wall, result = collect(op, {**env, "FAKE_MSPROF_SPANS": str(spans)}, devices)
    cpu, rows = children_cpu() - cpu, [json.loads(line) for line in spans.read_text().splitlines()]
    fixed = (min(r["start"] for r in rows) - began) + (began + wall - max(r["end"] for r in rows))
    return {"wall_s": wall, "cpu_s": cpu, "runs": len(rows), "result": result, "fixed_s": fixed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds per profiled run (default 2.0)")
    parser.add_argument("--cases", type=int, default=8, help="cases = cards (default 8)")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "many_cards.json")
    args = parser.parse_args(argv)
    cases = [f"c{i}" for i in range(args.cases)]
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="many_cards_") as tmp:
        tmp = Path(tmp)
        env = fake_env(tmp, args.sleep)
        ops = {"serial": make_op(tmp / "serial", cases)}
        freeze(ops["serial"], cases, env)
        ops["cards"] = (tmp / "cards" / "copyop")
        shutil.copytree(ops["serial"], ops["cards"])   # one frozen manifest, byte for byte
        serial = measured_round(ops["serial"], env, None, tmp / "serial_spans.jsonl")
        cards = measured_round(ops["cards"], env, list(range(args.cases)), tmp / "cards_spans.jsonl")
        same = round_files(ops["serial"]) == round_files(ops["cards"])
    fixed = serial["fixed_s"]
    row = {"cases": args.cases, "cards": args.cases, "sleep_s": args.sleep, "serial_s": round(serial["wall_s"], 2),
           "cards_s": round(cards["wall_s"], 2), "speedup": round(serial["wall_s"] / cards["wall_s"], 2),
           "same_evidence": same, "case_devices": cards["result"]["case_devices"], "profiled_runs": serial["runs"],
           "cpu_per_run_s": {k: round(r["cpu_s"] / r["runs"], 3) for k, r in (("serial", serial), ("cards", cards))},
           "fixed_s": {"serial": round(fixed, 2), "cards": round(cards["fixed_s"], 2)},
           "amdahl_bound": round(serial["wall_s"] / (fixed + (serial["wall_s"] - fixed) / args.cases), 2),
           "cpu_count": os.cpu_count(), "load_average_before": load_before,
           "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(row, indent=2, sort_keys=True) + "\n")
    print(json.dumps(row, sort_keys=True))
    return 0 if same and row["speedup"] >= 4.0 else 1


if __name__ == "__main__":
    sys.exit(main())
