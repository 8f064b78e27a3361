"""After a stage5_check FAIL, perf_next prints the way forward (issue 35 Deliver 3, decide/way_forward.py):
the delivered experiment at fault is rejected by its item and the version before it restored, and
following perf_next from there ends at PASS, nothing deleted by hand.

The small softmax of cheat_pipeline.py, the shared honest prefix to v000, then experiment v001 =
``probe_aware_wrong`` (correct at step 1, wrong on every timed call: only stage5_check's
P9.sampled_values sees it); from there the scripted agent runs only what perf_next prints, filling
only what it lists under ``needs``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import cheat_pipeline as pipeline
from conftest import SCRIPTS, call_script

JUDGEMENT = {"sweep": {"SCOPE": "the P0 case; every candidate", "FINDINGS": []}}


def _next(op: Path) -> dict:
    proc = call_script("perf_next.py", "--op-dir", op, "--json", cwd=op)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _run(step: dict, op: Path) -> int:
    values = JUDGEMENT.get(step["key"], {})
    assert step["command"], (step["key"], step["why"])
    assert set(step["needs"]) <= set(values) | set(step["values"]), (step["key"], step["needs"])
    argv = []
    for token in shlex.split(step["command"]):
        value = values.get(token, token)
        argv += value if isinstance(value, list) else [value]
    assert argv[0] == sys.executable and Path(argv[1]).parent == SCRIPTS, argv
    proc = call_script(Path(argv[1]).name, *argv[2:], cwd=op)
    assert proc.returncode in (0, 1), f"{step['key']}: {argv}\n{proc.stderr[-1500:]}"
    return proc.returncode


def _follow(op: Path, until: str, limit: int = 30) -> tuple[dict, list[str]]:
    """Run what perf_next prints until its first step is ``until``; the keys run, in order."""
    ran = []
    for _ in range(limit):
        out = _next(op)
        if out["steps"][0]["key"] == until:
            return out, ran
        steps = [next(s for s in out["steps"] if s["key"] == "sweep")] if out["mode"] == "choice" else out["steps"]
        for step in steps:
            ran.append(step["key"])
            _run(step, op)
    raise AssertionError(f"no {until} after {limit} perf_next calls: {ran[-8:]}")


def test_a_fail_rejects_the_delivered_item_restores_the_version_before_it_and_the_rerun_passes(tmp_path):
    op = pipeline.small_softmax(tmp_path)
    state = pipeline.prepared(op, {})
    pipeline._experiment(op, "probe_aware_wrong", state["base"], state)
    out, ran = _follow(op, "failed")
    assert ran[-1] == "verify" and "choose" in ran and "final_formal" in ran
    found = json.loads((op / "docs/perf/stage5_check.json").read_text())
    assert found["verdict"] == "FAIL" and "P9.sampled_values" in {f["check"] for f in found["failures"]}
    steps = out["steps"]
    assert [s["key"] for s in steps] == ["failed", "reopen", "close_item", "restore"]
    assert steps[1]["values"]["ITEM_ID"] == steps[2]["values"]["ITEM_ID"] == "bn-kernel"
    assert "P9.sampled_values" in steps[1]["values"]["NOTE"] and steps[1]["needs"] == {}
    assert (steps[2]["values"]["STATUS"], steps[2]["values"]["REASON_CODE"]) == ("rejected", "contract_violation")
    assert steps[3]["values"] == {"VERSION_ID": "v000"}
    for step in steps[1:]:
        _run(step, op)
    out, ran = _follow(op, "done")
    assert ran[:3] == ["sweep", "ledger_check", "choose"] and ran[-1] == "verify"   # the ledger changed: swept again
    found = json.loads((op / "docs/perf/stage5_check.json").read_text())
    assert (found["verdict"], found["failures"]) == ("PASS", []), found["failures"]
    assert json.loads((op / "docs/perf/selection.json").read_text())["chosen"] == "v000"
    item = next(i for i in json.loads((op / "docs/perf/ledger.json").read_text())["items"] if i["item_id"] == "bn-kernel")
    assert [h["action"] for h in item["history"]][-2:] == ["reopen", "update"]   # the history kept
    assert (item["status"], item["reason_code"]) == ("rejected", "contract_violation")
    assert (op / "docs/perf/versions/v001").is_dir()   # the tried code stays on disk
