"""Shared parts of the stress scripts: a small real operator, running scripts, the JSON audit.

Not a library module: benchmark helpers only (the scripts dir is put on sys.path by the callers).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from perftune.measure import evidence
from perftune import fsio
from perftune.contract import schemas
from perftune.errors import PerftuneError

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
EXAMPLE = ROOT / "examples" / "softmax"
ACTOR = ("--actor", "pypto-pro-op-orchestrator")
TARGET = "r64_c4096_fp32"
OTHER_P0_ROWS = ("| r512_c1024_fp32 | [512,1024] | float32 | yes |", "| r64_c4096_fp16 | [64,4096] | fp16 | yes |",
                 "| r1024_c256_fp16 | [1024,256] | fp16 | yes |")
SCHEMA_OF = {"collection.json": "collection", "measurement.json": "measurement",
             "evidence_status.json": "evidence_status", "ledger.json": "ledger",
             ".orchestrator_state.json": "orchestrator_state", "performance.json": "performance",
             "PERFORMANCE_CASES.json": "performance_cases", "GOLDEN_PERF_REPORT.json": "golden_perf_report",
             "candidates.json": "candidates", "selection.json": "selection",
             "quick_performance.json": "quick_performance", "stage5_check.json": "stage5_check"}


def command(script: str, *args) -> list[str]:
    return [sys.executable, str(SCRIPTS / script), *map(str, args)]


def run(script: str, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command(script, *args), capture_output=True, text=True, timeout=timeout)


def must(script: str, *args) -> str:
    proc = run(script, *args)
    if proc.returncode != 0:
        raise SystemExit(f"setup failed: {script} {' '.join(map(str, args))}: {proc.stderr.strip()}")
    return proc.stdout


def one_case_operator(work: Path) -> Path:
    """The example reduced to one P0 case, frozen (cpu, repeats 3, warmup 0), ledger and state initialised."""
    op = work / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs"))
    spec = op / "SPEC.md"
    text = spec.read_text(encoding="utf-8")
    for row in OTHER_P0_ROWS:
        if row not in text:
            raise SystemExit(f"example SPEC.md changed: row {row!r} not found")
        text = text.replace(row, row.replace("| yes |", "| no |"))
    spec.write_text(text, encoding="utf-8")
    must("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", TARGET, "--selection-mode",
         "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel", "--repeats", "3", "--warmup", "0")
    must("ledger.py", "init", "--op-dir", op)
    must("orchestrator_state.py", "init", "--op-dir", op, *ACTOR)
    return op


def audit_json(op: Path) -> tuple[int, list[str]]:
    """Parse every JSON file under ``op`` and validate the known ones; (files checked, problems)."""
    problems, count = [], 0
    for path in sorted(op.rglob("*.json")):
        if path.name.endswith(".tmp") or path.is_symlink():
            continue
        count += 1
        try:
            obj = fsio.read_json(path)
            name = SCHEMA_OF.get(path.name) or ("correctness" if path.parent.name == "correctness" else None)
            if name:
                schemas.validate(obj, name, path)
        except PerftuneError as exc:
            problems.append(exc.line())
    return count, problems


def audit_rounds(op: Path) -> tuple[dict[str, int], list[str]]:
    """Every round is labelled; a ``complete`` one must load with its seal and recomputed samples."""
    counts: dict[str, int] = {}
    problems = []
    for row in evidence.list_rounds(op):
        status = row["status"] or "unlabelled"
        counts[status] = counts.get(status, 0) + 1
        if status == "unlabelled" and any(row["path"].iterdir()):
            problems.append(f"{row['name']}: evidence without a readable collection.json")
        if status == "complete":
            try:
                evidence.load_round(op, row["name"])
            except PerftuneError as exc:
                problems.append(f"{row['name']}: complete but not loadable: {exc.line()}")
    return counts, problems


def leftover_temp_files(op: Path) -> int:
    """Temp files of atomic writes interrupted before their rename (harmless, never read)."""
    return sum(1 for p in op.rglob(".*.tmp"))
