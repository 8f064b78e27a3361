"""Stage 5 end to end on the msprof backend with the fake msprof and npu-smi (#22 acceptance).

Discovery before freeze, baseline, one accepted and one rejected experiment, the final paired
round with an instruction timeline per P0 case, terminal evidence from profiler data, the report,
then stage5_check PASS; removing the timeline or a metric group makes P8 FAIL naming it.
A one-case operator with trivial tests keeps it small: the fake msprof gives exact durations.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE, ROOT, call_script, run_script
from perftune.measure import evidence

FAKE = ROOT / "tests" / "fixtures" / "msprof"
TARGET = "pypto_softmax_kernel_mix_aic_0"
CASE = "r64_c4096_fp32"
TEST_FILE = "test_softmax.py"
A2 = str(ROOT / "platforms" / "atlas-a2-910b.json")
INDEX = ("| id | title | lifecycle | optimization_eligible | file | anchor | case_scope | expected_metric |\n"
         "|----|-------|-----------|-----------------------|------|--------|------------|-----------------|\n")
# PipeUtilization durations in run order: discovery (1), baseline (3), paired A (B,C / C,B / B,C), final paired (same), timeline
PIPE = [45.0, 50.0, 50.2, 49.8, 50.0, 40.0, 40.1, 50.1, 49.9, 39.9, 50.05, 40.05, 40.15, 50.15, 49.95, 39.95, 40.0]
QUICK = [40.0, 40.1, 39.9, 60.0, 60.1, 59.9]   # task_time: quick A (promoted), quick B (not promoted)


def make_op(root: Path) -> Path:
    """The example softmax with one P0 case (the SPEC marks the other three p0=no) and a small
    ledger source set (two general methods, no KB constraints, no cards or templates)."""
    op = root / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "docs", "sources", "__pycache__",
                                                                "KB_SELECTION.json", "README.md"))
    spec = (op / "SPEC.md").read_text()
    for case in ("r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16"):
        spec = spec.replace(f"| {case} |", f"| {case} |", 1)
        lines = [l.replace("| yes |", "| no |") if l.startswith(f"| {case} |") else l for l in spec.splitlines()]
        spec = "\n".join(lines) + "\n"
    (op / "SPEC.md").write_text(spec)
    (op / "KB_SELECTION.json").write_text(json.dumps({"classes": [], "schema_version": 1}))
    (op / "sources" / "general-methods").mkdir(parents=True)
    rows = "".join(f"| {i} | {t} | active | yes | {i}.md | #{i} | all | kernel time |\n"
                   for i, t in (("general-01", "Double-buffer the row loads"), ("general-02", "Unroll the row loop")))
    (op / "sources/general-methods/INDEX.md").write_text("# General methods\n\n" + INDEX + rows)
    for item in ("general-01", "general-02"):
        (op / f"sources/general-methods/{item}.md").write_text(f"# {item}\n\nA method.\n")
    for folder in ("knowledge-cards", "templates"):
        (op / "sources" / folder).mkdir()
        (op / "sources" / folder / "INDEX.md").write_text(f"# {folder}\n\n{INDEX}")
    text = (op / TEST_FILE).read_text()
    for name, comment in (("vA", "# variant A: double-buffered rows\n"), ("vB", "# variant B: unrolled rows\n")):
        (root / "variants" / name).mkdir(parents=True)
        (root / "variants" / name / TEST_FILE).write_text(comment + text)
    return op


class Flow:
    def __init__(self, op: Path, tmp: Path) -> None:
        self.op = op
        self.env = {"PATH": f"{FAKE / 'bin'}{os.pathsep}{os.environ['PATH']}", "FAKE_MSPROF_PYTHON": sys.executable,
                    "FAKE_MSPROF_TARGET": TARGET, "FAKE_MSPROF_STATE": str(tmp / "state.json"),
                    "FAKE_MSPROF_DURATIONS": ",".join(map(str, PIPE)),
                    "FAKE_MSPROF_TASK_DURATIONS": ",".join(map(str, QUICK))}

    def __call__(self, script: str, *args, ok=(0,), parse=True):
        """One step with the fake msprof on PATH; the pipeline steps in this process
        (``conftest.call_script``, the environment added for the call), the verifier as its own process."""
        call = run_script if script == "stage5_check.py" else call_script
        proc = call(script, *map(str, args), *(["--json"] if parse else []), env=self.env)
        assert proc.returncode in ok, (script, args, proc.stdout[-2000:], proc.stderr[-2000:])
        return json.loads(proc.stdout) if parse and proc.stdout.strip() else proc


@pytest.fixture(scope="module")
def delivered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stage5_msprof")
    op = make_op(tmp)
    run = Flow(op, tmp)
    run("collect_perf.py", "list-op-names", "--op-dir", op, "--case-id", CASE, "--backend", "msprof")
    run("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode",
        "all_p0_no_questions", "--backend", "msprof", "--op-name-from", op / "docs/perf/discovery/discovery_001.json",
        "--op-name", TARGET, "--repeats", "3", "--warmup", "0", "--decision-method", "relative_band",
        "--noise-band", "0.05")
    base_run = run("check_correctness.py", "--op-dir", op)["run_id"]
    run("collect_perf.py", "preflight", "--op-dir", op)
    base = run("collect_perf.py", "formal", "--op-dir", op)
    run("ledger.py", "init", "--op-dir", op, "--actor", "e2e")
    run("select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", Path(base["round"]).name,
        "--correctness", base_run, "--compliance", "baseline")
    # experiment A: quick promoted, paired formal faster -> accepted
    shutil.copyfile(tmp / "variants/vA" / TEST_FILE, op / TEST_FILE)
    a_run = run("check_correctness.py", "--op-dir", op)["run_id"]
    quick = run("collect_perf.py", "quick", "--op-dir", op)
    run("compare_perf.py", "quick", "--op-dir", op, "--baseline", base["collection_id"], "--quick", quick["collection_id"])
    a = run("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v000")
    perf = run("compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(base["round"]).name, "--candidate",
               Path(a["round"]).name, ok=(0, 1))
    run("select_best.py", "record", "--op-dir", op, "--version-id", "vA", "--round", Path(a["round"]).name,
        "--correctness", a_run, "--items", "general-01", "--compliance", "comment only")
    run("ledger.py", "update", "--op-dir", op, "--item", "general-01", "--actor", "e2e", "--status", "accepted",
        "--code-ref", TEST_FILE, "--restore-point", "v000", "--mechanism", "double buffering",
        "--correctness", a_run, "--quick", quick["collection_id"], "--formal", a["collection_id"],
        base["collection_id"], "--note", "faster than v000")
    # experiment B: quick not promoted -> rejected, sources restored
    shutil.copyfile(tmp / "variants/vB" / TEST_FILE, op / TEST_FILE)
    b_run = run("check_correctness.py", "--op-dir", op)["run_id"]
    quick_b = run("collect_perf.py", "quick", "--op-dir", op)
    screen = run("compare_perf.py", "quick", "--op-dir", op, "--baseline", a["collection_id"], "--quick",
                 quick_b["collection_id"])
    assert not screen["promotion"]["promote"]
    shutil.copyfile(tmp / "variants/vA" / TEST_FILE, op / TEST_FILE)
    run("ledger.py", "update", "--op-dir", op, "--item", "general-02", "--actor", "e2e", "--status", "rejected",
        "--reason-code", "quick_not_promoted", "--code-ref", TEST_FILE, "--restore-point", "vA",
        "--mechanism", "unrolling", "--correctness", b_run, "--quick", quick_b["collection_id"],
        "--note", "quick screen slower than vA")
    run("ledger.py", "sweep", "--op-dir", op, "--actor", "e2e", "--scope", "the one P0 case r64_c4096_fp32", "--examined",
        "docs/perf/ledger.json", "docs/perf/candidates.json", f"docs/perf/{Path(base['round']).name}",
        f"docs/perf/{Path(a['round']).name}")
    run("ledger_check.py", "--op-dir", op)
    chosen = run("select_best.py", "choose", "--op-dir", op)["chosen"]
    final = run("collect_perf.py", "formal", "--op-dir", op, "--paired-with", op / "docs/perf/versions/v000")
    run("compare_perf.py", "formal", "--op-dir", op, "--baseline", Path(base["round"]).name, "--candidate",
        Path(final["round"]).name, ok=(0, 1))
    run("select_best.py", "confirm", "--op-dir", op, "--final-round", Path(final["round"]).name, ok=(0, 1))
    run("instruction_timeline.py", "collect", "--op-dir", op, "--round", Path(final["round"]).name)
    run("terminal_evidence.py", "build", "--op-dir", op, "--round", Path(final["round"]).name, "--platform", A2)
    run("perf_report.py", "--op-dir", op)
    return op, run, {"perf": perf, "chosen": chosen}


def check(run: Flow, op: Path):
    return run("stage5_check.py", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode",
               "all_p0_no_questions", ok=(0, 1))


def test_stage5_passes_on_msprof(delivered):
    op, run, facts = delivered
    assert facts["chosen"] == "vA"
    verdict = check(run, op)
    assert verdict["verdict"] == "PASS", json.dumps(verdict["failures"], indent=1)[-3000:]
    # P9 checked what it can without a card: the frozen launcher (not the device Op Name) was wrapped in
    # every timed launch, and the probes called the reference built from the frozen golden factory
    assert json.loads((op / "PERFORMANCE_CASES.json").read_text())["launcher"]["function"] == "softmax_kernel"
    final = sorted(op.glob("docs/perf/round_*"))[-1]
    records = [json.loads(p.read_text()) for p in final.glob("case_*/repeat_*/*/attestation.json")]
    assert len(records) == 6 and all(r["caller"] == "softmax_wrapper" and r["inputs"] for r in records)
    last = sorted((op / "docs/perf/correctness").glob("*.json"))[-1]
    probe = json.loads(last.read_text())["cases"][0]["probe"]
    assert probe["reference_call"]["factory"]["origin"] == "FROZEN_INPUTS.json"
    assert probe["measured"]["meets_frozen_gate"] and all(p["meets_frozen_gate"] for p in probe["probes"])


def test_a_launch_without_attestation_fails_p9_even_resealed(delivered, tmp_path):
    """The msprof seam: a runner that could not wrap the op writes ``unavailable``; P9 counts it missing."""
    op, run, _ = delivered
    copy = tmp_path / "softmax"
    shutil.copytree(op, copy)
    final = sorted(copy.glob("docs/perf/round_*"))[-1]
    target = next(final.glob("case_*/repeat_002/candidate/attestation.json"))
    target.write_text(json.dumps({"unavailable": "no function of the runner is named in the op name"}))
    collection = json.loads((final / "collection.json").read_text())
    collection["evidence_seal"] = evidence.evidence_seal(final)
    (final / "collection.json").write_text(json.dumps(collection, indent=2, sort_keys=True))
    verdict = check(run, copy)
    p9 = [f for f in verdict["failures"] if f.get("gate") == "P9"]
    assert any(f["category"] == "performance_evidence_invalid" and "without an input attestation" in f["message"]
               for f in p9), json.dumps(verdict["failures"], indent=1)[-3000:]


@pytest.mark.parametrize("remove,needle", [("timeline", "instruction timeline"), ("metric", "metric group Memory")])
def test_removing_a_timeline_or_metric_group_fails_p8_naming_it(delivered, tmp_path, remove, needle):
    op, run, _ = delivered
    copy = tmp_path / "softmax"
    shutil.copytree(op, copy)
    if remove == "timeline":
        shutil.rmtree(next(copy.glob("docs/perf/timeline/round_*/case_*")))
    else:
        final = sorted(copy.glob("docs/perf/round_*"))[-1]
        next(final.glob("case_*/repeat_001/candidate/op_summary_Memory.csv")).unlink()
    verdict = check(run, copy)
    assert verdict["verdict"] == "FAIL"
    p8 = [f for f in verdict["failures"] if f.get("gate") == "P8"]
    assert p8 and any(needle in json.dumps(f) for f in p8), json.dumps(verdict["failures"], indent=1)[-3000:]
