"""The environment fingerprint: recorded in every round, and compare refuses two environments."""

from __future__ import annotations

import json

from conftest import assert_one_line_error, freeze_example, run_script


def test_compare_refuses_a_baseline_and_final_from_different_environments(op_dir):
    freeze_example(op_dir, repeats=2, warmup=0)
    for _ in range(2):
        proc = run_script("collect_perf.py", "formal", "--op-dir", op_dir, "--json")
        assert proc.returncode == 0, proc.stderr
    path = op_dir / "docs/perf/round_002/collection.json"
    collection = json.loads(path.read_text())
    assert collection["environment"]["backend"] == "cpu" and collection["environment"]["cpu_count"] >= 1
    collection["environment"]["cpu_model"] = "another machine"   # collection.json is outside the seal
    path.write_text(json.dumps(collection, indent=2, sort_keys=True))
    proc = run_script("compare_perf.py", "formal", "--op-dir", op_dir, "--baseline", "round_001",
                      "--candidate", "round_002", "--json")
    assert_one_line_error(proc, 2, "environment.cpu_model")
