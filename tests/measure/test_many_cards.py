"""Many cards on one host (#22.4): cases of one round on several fake cards at once.

The >= 4x acceptance (8 cases on 8 cards) is benchmarks/many_cards/bench_many_cards.py: on this
2-core CI machine the fake's own start-up cost, not the card time, would dominate a fast test.
Here: 2 cases on 2 cards run at the same time (the fake records when each profiled run slept and
on which card), the device environment rule reaches every run, and the round evidence equals the
serial round's apart from timestamps, scratch names and device ids.
"""

from __future__ import annotations

import json
import shutil
import sys

from conftest import ROOT, assert_one_line_error, run_script

sys.path.insert(0, str(ROOT / "benchmarks" / "many_cards"))
import bench_many_cards as bench  # noqa: E402

CASES = ["c0", "c1"]


def test_two_cards_run_at_once_with_the_serial_evidence(tmp_path):
    serial, cards = bench.make_op(tmp_path / "serial", CASES), tmp_path / "cards" / "copyop"
    env = bench.fake_env(tmp_path, 0.3)
    bench.freeze(serial, CASES, env)
    shutil.copytree(serial, cards)   # one frozen manifest for both rounds
    bench.collect(serial, env, None)
    spans = tmp_path / "spans.jsonl"
    _, result = bench.collect(cards, {**env, "FAKE_MSPROF_SPANS": str(spans)}, [5, 2])
    assert result["status"] == "complete" and result["case_devices"] == {"c0": 5, "c1": 2}
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    assert sorted({r["device"] for r in rows}) == ["2", "5"] and all(r["visible"] is None for r in rows)
    assert len([r for r in rows if r["device"] == "5"]) == 8        # 7 metric groups + 1 sample run on card 5
    overlapping = [(a, b) for a in rows for b in rows if a["device"] == "5" and b["device"] == "2"
                   and a["start"] < b["end"] and b["start"] < a["end"]]
    assert overlapping, "the two cards never ran at the same time"
    assert bench.round_files(serial) == bench.round_files(cards)
    collection = json.loads((cards / "docs/perf/round_001/collection.json").read_text())
    assert collection["device_id"] == 0 and collection["case_devices"] == {"c0": 5, "c1": 2}


def test_a_bad_device_list_is_refused(tmp_path):
    op = bench.make_op(tmp_path, CASES)
    bench.freeze(op, CASES, bench.fake_env(tmp_path, 0))
    proc = run_script("collect_perf.py", "formal", "--op-dir", op, "--devices", "0,0", env=bench.fake_env(tmp_path, 0))
    assert_one_line_error(proc, 2, "--devices", "distinct")
