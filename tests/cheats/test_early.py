"""A check fails where it first can (issue 35 Deliver 2): the probes that decide P9 run at
``check_correctness.py`` and again at ``ledger.py update --status accepted`` (verify/early.py), so an
experiment stage5_check would FAIL is rejected then, naming the check id; its legal twins pass.

One honest prefix of the corpus's small softmax (cheat_pipeline: Stage 4 check to v000, shared), then each
kernel planted as an experiment and its correctness run read by check id, never by message text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cheat_pipeline as pipeline
from conftest import assert_one_line_error, call_script

EARLY = {   # kernel -> check ids its correctness run must name (empty: a legal twin, no finding, exit 0)
    "dropped_stabilisation": {"P9.tail_inputs"},      # the example SPEC declares 30 sigma tails
    "p0_shape_fast_path": {"P9.support_shapes"},
    "golden_alias": {"P9.reference_call"},
    "memoise_by_shape": {"P9.precision_gate"},
    "scipy_softmax": set(), "matmul_rowsum": set(), "logsumexp": set(), "shape_plan": set(),
}


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    op = pipeline.small_softmax(tmp_path_factory.mktemp("early"))
    pipeline.prepared(op, {})
    return op


def _planted(prefix: Path, tmp_path: Path, kernel: str) -> Path:
    op = tmp_path / "softmax"
    shutil.copytree(prefix, op, symlinks=True)
    pipeline.run(op, "ledger.py", "add", "--op-dir", op, "--actor", "test", "--item-id", "bn-kernel", "--title",
                 f"kernel {kernel}", "--evidence-file", f"docs/perf/{pipeline.rounds(op)[0]}/collection.json",
                 "--expected-metric", "speedup > 1.05", "--hypothesis", "fewer passes; risk: precision; stop: slower")
    pipeline.plant_kernel(op, kernel)
    return op


@pytest.mark.parametrize("kernel", sorted(EARLY))
def test_the_correctness_run_fails_what_stage5_check_would_fail_naming_the_check(prefix, tmp_path, kernel):
    op = _planted(prefix, tmp_path, kernel)
    record = pipeline.run(op, "check_correctness.py", "--op-dir", op, ok=(0, 1))
    early = record["early"]
    found = {f["check"] for f in early["findings"]}
    assert EARLY[kernel] <= found and bool(found) is bool(EARLY[kernel]), early
    assert record["all_passed"] is (not EARLY[kernel]) and early["baseline"] == "v000"
    assert all(f["category"] == "cheating" for f in early["findings"])


def test_acceptance_is_refused_naming_the_check_and_nothing_is_written(prefix, tmp_path):
    op = _planted(prefix, tmp_path, "dropped_stabilisation")
    run_id = pipeline.run(op, "check_correctness.py", "--op-dir", op, ok=(1,))["run_id"]
    ledger = (op / "docs/perf/ledger.json").read_bytes()
    base = pipeline.rounds(op)[0]
    proc = call_script("ledger.py", "update", "--op-dir", op, "--item", "bn-kernel", "--status", "accepted",
                       "--correctness", run_id, "--formal", base, base, "--code-ref", pipeline.TEST,
                       "--note", "faster", cwd=op)
    assert_one_line_error(proc, 2, "bn-kernel.status: accepted refused: P9.tail_inputs (cheating)")
    assert (op / "docs/perf/ledger.json").read_bytes() == ledger


def test_tails_the_spec_does_not_declare_are_a_limit_at_step_1_too(prefix, tmp_path):
    """The same probe results judged under a manifest without ``tails:`` (a pure call of the early rule)."""
    from perftune.contract.manifest import load_manifest
    from perftune.verify import early
    op = _planted(prefix, tmp_path, "dropped_stabilisation")
    run = pipeline.run(op, "check_correctness.py", "--op-dir", op, ok=(1,))
    man = load_manifest(op / "PERFORMANCE_CASES.json")
    assert man.raw["support_range"].pop("tail_sigmas") == 30.0
    judged = early.judge(op, man, run["cases"], run["early"]["seed"])
    assert judged["findings"] == [] and len(judged["limits"]) == 1 and "declares no tails" in judged["limits"][0]


def test_a_float16_row_sum_under_a_loosened_gate_is_refused_at_step_1(tmp_path):
    """precision_downcast.yaml's plants (SPEC and test loosened to 1e-2 before Stage 4) with the plain kernel:
    the gate accepts its output, the traced reductions break accum-fp32 (the corpus times its after_step1 variant)."""
    import yaml
    plants = yaml.safe_load((pipeline.HERE / "precision_downcast.yaml").read_text())["cheat"]["plants"]
    op = pipeline.small_softmax(tmp_path)
    pipeline.prepared(op, plants)
    pipeline.plant_kernel(op, "precision_downcast")
    record = pipeline.run(op, "check_correctness.py", "--op-dir", op, ok=(1,))
    assert [(f["check"], f["category"]) for f in record["early"]["findings"]] == [("P9.kb_obligation", "cheating")]
