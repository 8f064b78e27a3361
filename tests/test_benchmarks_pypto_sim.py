"""benchmarks/pypto_sim: launches and wall vs the distinct (code, case) questions of a kept demo run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)


def test_counts_launches_and_distinct_questions_of_a_kept_run(tmp_path):
    op = tmp_path / "work" / "run_001" / "op"
    write(op / "PERFORMANCE_CASES.json", {})
    write(op / "docs/perf/round_001/collection.json", {"executable_sha256": "a", "expected_cases": ["c1", "c2"]})
    write(op / "docs/perf/round_002/collection.json", {"executable_sha256": "b", "expected_cases": ["c1", "c2"],
                                                       "paired": {"baseline_executable_sha256": "a"}})
    write(op / "docs/perf/quick/quick_001/quick_performance.json", {"executable_sha256": "b",
                                                                    "expected_cases": ["c1", "c2"]})
    write(op / "docs/perf/correctness/c001-x.json", {"cases": [{"id": "c1", "probe": {}}, {"id": "t"}]})
    lines = [{"module": "perftune.measure.backends.cpu_runner", "args": [], "returncode": 0, "seconds": s}
             for s in (10.0, 12.0, 14.0, 11.0, 13.0, 12.0)]
    lines += [{"module": "perftune.measure.backends.case_adapter", "args": [], "returncode": 0, "seconds": 3.0}] * 3
    log = tmp_path / "launches.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/pypto_sim/bench_pypto_sim.py"), "--workdir",
                           str(tmp_path / "work"), "--launch-log", str(log), "--wall", "96", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "pypto_sim.json").read_text())
    assert result["distinct_questions"] == 4          # (a|b) x (c1|c2)
    assert result["launches"] == {"timed": 6, "preflight": 3, "correctness_tests": 2, "correctness_probes": 1,
                                  "total": 12}
    assert result["median_launch_s"] == 12.0 and result["raw_simulation_s"] == 48.0
    assert result["wall_per_raw"] == 2.0 and result["launches_per_distinct"] == 3.0
    assert "| 96.0 | 48.0 | 2.0 |" in proc.stdout
