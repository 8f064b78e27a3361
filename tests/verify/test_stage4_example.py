"""The bundled cpu example operator passes the Stage 4 gates that apply to it (exit 0)."""

import json

from conftest import run_script, tree_digest

PYPTO_ONLY = ("pro_import", "single_jit")


def test_example_softmax_passes_with_pypto_gates_not_applicable(op_dir):
    before = tree_digest(op_dir)
    proc = run_script("stage4_gates.py", "--op-dir", op_dir, "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = json.loads(proc.stdout)
    assert out["operator"] == "softmax" and out["status"] == "PASS" and out["exit_code"] == 0
    for gate in out["gates"]:
        if gate["id"] in PYPTO_ONLY:
            assert gate["status"] == "not_applicable"
            assert gate["reason"] == "cpu backend operator (no pypto_pro import)"
        else:
            assert gate["status"] == "PASS", gate
    assert len(out["gates"]) == 13 and out["categories"] == [] and out["primary_failure_category"] is None
    launch = next(g for g in out["gates"] if g["id"] == "single_launch")
    assert launch["reason"] == "softmax_wrapper launches softmax_kernel exactly once"
    assert tree_digest(op_dir) == before


def test_example_text_verdict(op_dir):
    proc = run_script("stage4_gates.py", "--op-dir", op_dir, "--op", "softmax")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-1] == "Stage 4 static gates PASSED (11 PASS, 2 not_applicable)."
