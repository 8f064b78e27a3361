"""demo.py end to end (the main job): the real scripts on a copy of the example, verified PASS."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE
import decided
import step_order
from perftune.demo import driver, steps
from perftune.contract import protocol, schemas
from perftune.errors import ContractError


CASES = ("r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16")
SCHEMA_OF = {"ledger.json": "ledger", "candidates.json": "candidates", "selection.json": "selection",
             "stage5_check.json": "stage5_check", "terminal_evidence.json": "terminal_evidence",
             "platform_cpu.json": "platform"}


@pytest.fixture(scope="module")
def demo_run(demo_delivery):
    """The session's single demo run (tests/conftest.py), shared with the adversarial corpus."""
    op, summary = demo_delivery
    return op.parent.parent, summary


def test_demo_passes_the_verifier_and_prints_the_summary(demo_run):
    _, result = demo_run
    assert result["verifier"] == "Stage 5 verification PASSED."
    assert [c["case"] for c in result["cases"]] == list(CASES)
    for case in result["cases"]:
        low, high = case["speedup_ci"]
        assert low <= case["speedup"] <= high and case["verdict"] in protocol.VERDICTS
        assert case["baseline_us"] > 0 and case["final_us"] > 0
    assert result["chosen_version"] and result["chosen_reason"]
    assert Path(result["report"]).is_file() and Path(result["report"]).name == "PERFORMANCE_REPORT.md"
    assert set(result["outcomes"]) == {"v1_fp32_accum", "v2_inplace", "v3_row_blocks", "v4_rowloop"}
    lines = [line for line in result["_stderr"].splitlines() if line.startswith("[")]
    assert lines[0].startswith("[ 1] correctness        check_correctness.py") and "stage5_check.py" in lines[-1]
    # the demo ran every step of the SKILL, only steps of the SKILL, and in the SKILL's order
    ran = result["steps_run"]
    assert set(ran) - set(step_order.WHEN_NEEDED) == set(steps.ORDER) - set(step_order.WHEN_NEEDED) and step_order.order_problems(ran) == []
    assert step_order.order_problems(["freeze", "correctness", "baseline", "close_item", "hypothesis", "quick"]) == []
    assert step_order.order_problems(["baseline", "freeze", "nope"]) == ["unknown step nope", "out of order: baseline -> freeze"]


def test_demo_evidence_validates_and_the_ledger_agrees_with_the_choice(demo_run):
    workdir, result = demo_run
    op = Path(result["workdir"]) / "softmax"
    assert op.parent.parent == workdir
    perf = op / protocol.PERF_DIR
    for name, schema in SCHEMA_OF.items():
        schemas.validate(json.loads((perf / name).read_text()), schema, name)
    schemas.validate(json.loads((op / "performance.json").read_text()), "performance")
    ledger = json.loads((perf / "ledger.json").read_text())
    statuses = {i["item_id"]: i["status"] for i in ledger["items"]}
    terminal = protocol.KB_TERMINAL_STATUSES + protocol.OTHER_TERMINAL_STATUSES
    assert all(s in terminal for s in statuses.values()), statuses
    assert statuses["general-07"] == "not_applicable" and statuses["card-vec-01"] == "unsupported"
    assert statuses["template-row-block"] == statuses["general-13"]
    assert "bd-row-locality" in statuses and ledger.get("sweep")
    selection = json.loads((perf / "selection.json").read_text())
    candidates = json.loads((perf / "candidates.json").read_text())["candidates"]
    chosen = next(c for c in candidates if c["version_id"] == selection["chosen"])
    assert all(statuses[item] == "accepted" for item in chosen["items"])
    assert (op / "test_softmax.py").read_bytes() == (op / chosen["saved_copy"] / "test_softmax.py").read_bytes()
    assert list((perf / "figures").glob("*.png"))
    # what the compares decided is what was delivered (ledger, candidates, selection, report)
    assert decided.problems(op) == []
    logs = sorted((op.parent / "demo_logs").glob("*.log"))
    assert logs and "returncode: 0" in logs[0].read_text()


def test_a_step_the_skill_does_not_have_or_a_missing_script_stops_the_demo(tmp_path):
    from perftune.demo import skill
    text = "```bash step=ledger_check\npython ${CLAUDE_PLUGIN_ROOT}/scripts/not_delivered.py --op-dir DIR\n```\n"
    runner = driver.Driver(tmp_path, tmp_path / "logs", progress=lambda line: None,
                           skill=skill.parse(text, tmp_path / "SKILL.md"))
    with pytest.raises(ContractError, match="runs not_delivered.py, the step list says ledger_check.py") as info:
        runner.run("ledger_check")
    assert info.value.exit_code == 2
    with pytest.raises(ContractError, match="step choose: has no 'bash step=' command block"):
        runner.run("choose")


def test_prune_removes_only_earlier_marked_demo_runs(tmp_path):
    marked, current, foreign = tmp_path / "run_001", tmp_path / "run_002", tmp_path / "run_003"
    for folder in (marked, current, foreign):
        folder.mkdir()
    for folder in (marked, current):
        (folder / driver.MARKER).write_text("x")
    assert driver.prune(tmp_path, current) == ["run_001"]
    assert not marked.exists() and current.is_dir() and foreign.is_dir()


def test_prepare_copies_the_example_without_variants_into_a_new_run(tmp_path):
    run1, op1 = driver.prepare(tmp_path, EXAMPLE)
    run2, _ = driver.prepare(tmp_path, EXAMPLE)
    assert (run1.name, run2.name) == ("run_001", "run_002")
    assert (op1 / "test_softmax.py").is_file() and not (op1 / "variants").exists()
    assert not (op1 / "docs").exists()


def test_run_streaming_hands_over_stderr_lines_live_and_keeps_both_streams(tmp_path):
    code = ("import sys, time\n"
            "print('{\"ok\": 1}')\n"
            "for c in ('r64_c4096_fp32', 'r512_c1024_fp32'):\n"
            "    print(f'  {c}: trimmed_mean 1.0 us', file=sys.stderr, flush=True); time.sleep(0.05)\n"
            "sys.exit(3)\n")
    seen = []
    proc = driver.run_streaming([sys.executable, "-c", code], tmp_path, seen.append)
    assert proc.returncode == 3 and json.loads(proc.stdout) == {"ok": 1}
    assert seen == proc.stderr.splitlines(keepends=True) and len(seen) == 2


def test_run_streaming_kills_a_step_that_outlives_its_timeout(tmp_path):
    proc = driver.run_streaming([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path,
                              lambda _line: None, timeout=0.5)
    assert proc.returncode != 0 and "step timeout" in proc.stderr


def test_case_bar_counts_finished_cases_only_and_erases_itself():
    stream = io.StringIO()
    bar = driver.CaseBar(stream, CASES)
    for line in ("round_002: compare_x (4 cases, 10 repeats, backend cpu)\n",
                 "  r64_c4096_fp32: trimmed_mean 1398.353 us over 10 repeats\n",
                 "  not_a_case: 1 us\n", "  r64_c4096_fp16: quick median 2.0 us over 10 repeats\n"):
        bar.update(line)
    frames = stream.getvalue().split("\r")[1:]
    assert bar.done == 2 and len(frames) == 2
    assert "1/4 cases  r64_c4096_fp32" in frames[0] and "[############............] 2/4" in frames[1]
    bar.close()
    assert stream.getvalue().endswith("\r" + " " * 79 + "\r")
