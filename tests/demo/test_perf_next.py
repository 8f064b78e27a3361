"""perf_next.py drives an operator the repository does not ship (GELU, cpu, two P0 cases) to stage5_check
PASS: the scripted agent runs only the commands perf_next prints, filling only the placeholders it
lists under ``needs`` (its judgement: target, protocol, which item, hypothesis, the code edit,
closing notes), and counts them (#27 Deliver 2, 9). Mechanics only: which version a noisy cpu run
accepts is never asserted."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import SCRIPTS, call_script, run_script
import decided
from test_third_operator import write_gelu

VERSION_OF = {"gm-narrow": "v1_fp32_inplace", "gm-rows": "v2_rowloop"}
JUDGEMENT = {
    "freeze": {"TARGET_IDS": ["all_p0"], "SELECTION_MODE": "all_p0_no_questions", "BACKEND": "cpu",
               "OP_NAME": "gelu_kernel", "WARMUP": "1", "REPEATS": "5", "NOISE_BAND": "0.05"},
    "close_preset": {"STATUS": "already_implemented", "APPLICABILITY": "applicable",
                     "GROUNDS": "the baseline wrapper launches gelu_kernel once", "NOTE": "met by the baseline"},
    "record_baseline": {"COMPLIANCE": "one kernel, one launch"},
    "record": {"COMPLIANCE": "one kernel, one launch"},
    "sweep": {"SCOPE": "both P0 cases; every candidate", "FINDINGS": []},
}


def next_of(op, run=run_script):
    proc = run("perf_next.py", "--op-dir", op, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_printed(argv: list[str], cwd) -> subprocess.CompletedProcess:
    """A printed command as the agent runs it. ``<this python> <plugin>/scripts/<name>.py ...`` (every
    cpu step perf_next prints) runs that script's CLI in this process (``conftest.call_script``: the same
    main, arguments and folder, without an interpreter start); anything else runs as printed."""
    if len(argv) >= 2 and argv[0] == sys.executable and Path(argv[1]).parent == SCRIPTS:
        return call_script(Path(argv[1]).name, *argv[2:], cwd=cwd)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)


def fill(command: str, values: dict) -> list[str]:
    argv = []
    for token in shlex.split(command):
        if token in values:
            value = values[token]
            argv += value if isinstance(value, list) else [value]
        else:
            argv.append(token)
    return argv


def judge(step: dict, tmp) -> dict:
    """The scripted agent's judgement for the placeholders perf_next leaves to it."""
    key, values = step["key"], {}
    values.update(JUDGEMENT.get(key, {}))
    item = step["values"].get("ITEM_ID")
    if key == "hypothesis":
        values.update(HYPOTHESIS=f"{item}: {VERSION_OF[item]} is faster", METRIC="kernel time")
    if key == "record":
        values["VERSION_ID"] = VERSION_OF[item]
    if key == "close_item":
        values["NOTE"] = step["needs"]["NOTE"]
    missing = set(step["needs"]) - set(values) - set(step["values"])   # a filled default is the agent's to keep
    assert not missing, f"{key}: the agent has no judgement for {missing}"
    return values


def test_perf_next_takes_an_unseen_operator_to_pass(tmp_path):
    op = write_gelu(tmp_path)
    variants = op / "variants"
    shutil.move(variants, tmp_path / "variants")      # the agent's own drafts, not part of the folder
    commands, edits, calls, keys = 0, 0, 0, []
    for _ in range(80):
        out = next_of(op, call_script)
        calls += 1
        steps = out["steps"]
        if out["mode"] == "choice":   # the agent's choice: an experiment for a planned item, else the sweep
            steps = [next(s for s in steps if s["key"] in ("hypothesis", "sweep"))]
        if steps[0]["key"] == "done":
            break
        for step in steps:
            keys.append(step["key"])
            if step["key"] == "edit":
                item = step["values"]["ITEM_ID"]
                shutil.copyfile(tmp_path / "variants" / VERSION_OF[item] / "test_gelu.py", op / "test_gelu.py")
                edits += 1
                continue
            assert step["command"], step
            argv = fill(step["command"], judge(step, tmp_path))
            proc = run_printed(argv, op)
            commands += 1
            assert proc.returncode in (0, 1), f"{step['key']}: {argv}\n{proc.stderr[-2000:]}"
            if proc.returncode == 1:   # exit 1 is a result the next perf_next reads from the evidence
                assert step["key"] in ("correctness", "formal_compare", "confirm", "final_compare", "verify"), \
                    f"{step['key']} exited 1: {proc.stderr[-1000:]}"
    else:
        raise AssertionError(f"no end after 80 perf_next calls: {keys[-10:]}")
    check = json.loads((op / "docs/perf/stage5_check.json").read_text())
    assert out["steps"][0]["key"] == "done" and "PASS" in out["steps"][0]["why"], check.get("failures")
    assert check.get("verdict", check.get("status")) == "PASS"
    led = json.loads((op / "docs/perf/ledger.json").read_text())
    assert all(i["status"] not in ("pending", "unknown") for i in led["items"])
    assert decided.problems(op) == []
    # the counts the closing note reports (today by hand: 137 commands, 50 of them boilerplate closes)
    closes = keys.count("close_preset")
    print(f"perf_next: {commands} commands, {calls} perf_next calls, {edits} code edits, {closes} preset closes")
    print(keys)
    assert edits == 2 and commands <= 45
    # every tried version keeps its code: each experiment item cites a folder that restores to what it tried
    for item in (i for i in led["items"] if i["item_id"] in VERSION_OF):
        ref = item["evidence"]["code_ref"]
        assert ref.startswith("docs/perf/versions/") and (op / ref).is_dir(), item
        proc = run_script("select_best.py", "restore", "--op-dir", op, "--version", op / ref, "--json")
        assert proc.returncode == 0, proc.stderr
        tried = (tmp_path / "variants" / VERSION_OF[item["item_id"]] / "test_gelu.py").read_bytes()
        assert (op / "test_gelu.py").read_bytes() == tried


def test_a_fresh_folder_starts_with_correctness_and_bad_input_is_one_line(tmp_path):
    from conftest import assert_one_line_error
    op = write_gelu(tmp_path)
    out = next_of(op)
    assert out["next"] == "correctness" and "check_correctness.py --op-dir" in out["steps"][0]["command"]
    assert_one_line_error(run_script("perf_next.py", "--op-dir", tmp_path / "missing"), 2, "--op-dir", "not a directory")
    assert "perf_next.py --op-dir" in run_script("perf_next.py", "--help").stdout


def test_failing_gates_come_before_any_judgement(op_dir):
    """With the plugin's references on cpu, the next step is one close-gated command naming the items."""
    from conftest import ROOT, freeze_example
    from perftune.contract import manifest, protocol
    from perftune.decide import ledger as ledger_mod, next_step
    freeze_example(op_dir)
    refs = ROOT / "skills" / "pypto-pro-op-perf-tune" / "references"
    assert run_script("ledger.py", "init", "--op-dir", op_dir, "--sources-dir", refs).returncode == 0
    st = next_step.State(op_dir, man=manifest.load_manifest(op_dir / protocol.MANIFEST_NAME), code_sha="s",
                         rounds=[{"name": "round_001", "id": "c1", "sha": "s", "partner": None}],
                         ledger=ledger_mod.load_ledger(op_dir / "docs/perf/ledger.json"),
                         files={protocol.GOLDEN_REPORT_NAME: 1.0, "docs/perf/platform_cpu.json": 1.0})
    steps = next_step.prepare(st)
    assert [s["key"] for s in steps] == ["close_gated"] and "gate:platform" in steps[0]["why"]
    st.ledger = json.loads(run_script("ledger.py", "close-gated", "--op-dir", op_dir, "--json").stdout)
    after = next_step.prepare(st)
    assert after[0]["key"] == "close_preset" and "STATUS" in after[0]["needs"]   # a kb item: judgement


def test_the_freeze_offers_the_band_each_backend_can_confirm(tmp_path):
    """#38 Deliver 5: the printed default band is the backend's, and cpu's is the measured confirm reach
    (benchmarks/results/confirm_band.json: the smallest band that confirms a paired A/A confirm)."""
    from conftest import ROOT
    op = write_gelu(tmp_path)
    assert call_script("check_correctness.py", "--op-dir", op, "--json", cwd=op).returncode == 0
    out = next_of(op, call_script)
    assert out["next"] == "freeze"
    band = out["steps"][0]["needs"]["NOISE_BAND"]
    assert "cpu 0.8, pypto-sim 0.01, msprof 0.01" in band and "default 0.01" not in band
    figures = json.loads((ROOT / "benchmarks/results/confirm_band.json").read_text())
    assert figures["confirm_reach_min"] <= 0.8 <= figures["confirm_reach_median"] + 0.05
