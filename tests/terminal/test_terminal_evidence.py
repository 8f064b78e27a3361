"""terminal_evidence.py: probe and build through the real script on a real formal cpu round."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLE, ROOT, assert_one_line_error, freeze_example, run_script
from perftune.contract import protocol, schemas
from perftune.terminal.records import scalar_block



@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The v2 kernel frozen and measured once (formal round_001) plus a probed platform file."""
    op = tmp_path_factory.mktemp("te") / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("variants", "__pycache__", "docs"))
    shutil.copy(EXAMPLE / "variants" / "v2_inplace" / "test_softmax.py", op / "test_softmax.py")
    freeze_example(op, repeats=5, warmup=1)
    proc = run_script("collect_perf.py", "formal", "--op-dir", op)
    assert proc.returncode == 0, proc.stderr
    proc = run_script("terminal_evidence.py", "probe", "--output", op / "docs/perf/platform_cpu.json", "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["summary"]) == {
        "arithmetic_ops_per_s", "memory_bytes_per_s", "transcendental_ops_per_s"}
    return op


def test_probe_writes_a_measured_platform_file(measured):
    obj = json.loads((measured / "docs/perf/platform_cpu.json").read_text())
    schemas.validate(obj, "platform")
    assert obj["backend"] == "cpu"
    assert {p["status"] for p in obj["peaks"].values()} == {"measured"}
    assert all(p["value"] > 1e6 for p in obj["peaks"].values())


def test_build_writes_valid_evidence_for_every_p0_case(measured):
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    doc = json.loads((measured / "docs/perf/terminal_evidence.json").read_text())
    assert out["content"] == doc
    schemas.validate(doc, "terminal_evidence")
    manifest = json.loads((measured / protocol.MANIFEST_NAME).read_text())
    assert [c["case"] for c in doc["cases"]] == [c["id"] for c in manifest["cases"]]
    assert doc["round"]["path"] == "docs/perf/round_001" and doc["work_model"]["model"] == manifest["work_model"]
    for case in doc["cases"]:
        roof, scalar = case["roofline_terminal"], case["scalar_evidence"]
        assert roof["status"] in protocol.ROOFLINE_IDEAL + protocol.ROOFLINE_RESIDUAL, roof
        assert roof["reason"] and roof["platform"]["file"]["path"] == "docs/perf/platform_cpu.json"
        assert case["pipeline_evidence"]["status"] == "not_applicable_with_dag"
        assert len(case["pipeline_evidence"]["grounds"]) == 2
        assert scalar["dominant"] in (True, False) and len(scalar["grounds"]) == 2
        assert 0 < scalar["fixed_overhead_us"] < scalar["case_time_us"]
        assert roof["measured_us"] == pytest.approx(scalar["case_time_us"], rel=1e-5)
        assert roof["attained_fraction"] == pytest.approx(roof["roof_us"] / roof["measured_us"], rel=1e-5)
    fp16 = next(c for c in doc["cases"] if c["case"] == "r64_c4096_fp16")["roofline_terminal"]
    assert fp16["necessary_bytes"] == 2 * 64 * 4096 * 2 and fp16["transcendental_ops"] == 64 * 4096


def test_build_refuses_sources_that_differ_from_the_round(measured, tmp_path):
    op = tmp_path / "softmax"
    shutil.copytree(measured, op)
    shutil.copy(EXAMPLE / "test_softmax.py", op / "test_softmax.py")
    before = (op / "docs/perf/terminal_evidence.json").read_bytes() if (op / "docs/perf/terminal_evidence.json").exists() else None
    proc = run_script("terminal_evidence.py", "build", "--op-dir", op, "--round", "round_001")
    assert_one_line_error(proc, 2, "executable_sha256", "not the code this round measured")
    after = (op / "docs/perf/terminal_evidence.json").read_bytes() if before is not None else None
    assert before == after


def test_build_refuses_a_platform_of_another_backend(measured):
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001",
                      "--platform", ROOT / "platforms" / "atlas-a2-910b.json")
    assert_one_line_error(proc, 2, "platform is for msprof")


def test_build_refuses_an_unknown_round_and_a_missing_platform(measured, tmp_path):
    assert_one_line_error(run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_009"), 2)
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001",
                      "--platform", tmp_path / "none.json")
    assert_one_line_error(proc, 2, "platform file is missing")


def test_build_refuses_a_corrupt_platform_file(measured, tmp_path):
    bad = tmp_path / "p.json"
    obj = json.loads((measured / "docs/perf/platform_cpu.json").read_text())
    obj["peaks"]["memory_bytes_per_s"]["value"] = -1
    bad.write_text(json.dumps(obj))
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001", "--platform", bad)
    assert_one_line_error(proc, 2, "schema platform")


def test_usage_errors_are_one_line():
    assert_one_line_error(run_script("terminal_evidence.py", "build", "--op-dir", "x"), 2, "--round")
    assert_one_line_error(run_script("terminal_evidence.py"), 2)


def test_scalar_block_rules_and_unknown():
    row = {"fixed_overhead_us": 30.0, "tiny_shapes": [[1, 1], [1, 1]], "calls": 101}
    assert scalar_block(row, 50.0)["dominant"] is True and scalar_block(row, 50.0)["share"] == 0.6
    assert scalar_block(row, 60.0)["dominant"] is False
    missing = scalar_block({"fixed_overhead_us": None, "problem": "kernel refused"}, 60.0)
    assert missing["dominant"] == "unknown" and missing["share"] is None and "kernel refused" in missing["grounds"][0]


def test_build_output_goes_inside_the_op_dir_only(measured, tmp_path):
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001",
                      "--output", "docs/perf/bottleneck/snapshot.json")
    assert proc.returncode == 0, proc.stderr
    schemas.validate(json.loads((measured / "docs/perf/bottleneck/snapshot.json").read_text()), "terminal_evidence")
    proc = run_script("terminal_evidence.py", "build", "--op-dir", measured, "--round", "round_001",
                      "--output", "../escape.json")
    assert_one_line_error(proc, 2, "--output", "escapes")
    assert not (measured.parent / "escape.json").exists()
