"""new_operator.py --backend pypto-sim for signatures of several classes (issue 36 Deliver 2): n inputs of
their own shapes and dtypes, small cases valid for every input, outputs sized by the golden, and a
precision gate scaled by the reduction length (docs/spec-format.md, "Reduction length")."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import assert_one_line_error, run_script
from perftune.artefacts import signature

SIGNATURES = {   # op: (case id, --shape, --dims, --dtype, --reduction)
    "ew": ("r64_c256_fp32", "x:[64,256],y:[64,256]", "", "float32", "1"),
    "mm": ("m64_k512_n128_fp16", "x:[M,K],w:[K,N]", "M=64,K=512,N=128", "float16", "K"),
    "rowsum": ("r32_c512_bf16", "x:[R,C]", "R=32,C=512", "bfloat16", "C"),
    "gat": ("v128_d64_b8_bf16", "table:[V,D],idx:[B]", "V=128,D=64,B=8", "table:bfloat16,idx:int32", "1"),
}
CASES = {   # the P0 case and the three small cases, written out by hand
    "ew": ["x:[64,256],y:[64,256]", "x:[16,256],y:[16,256]", "x:[24,256],y:[24,256]", "x:[40,256],y:[40,256]"],
    "mm": ["x:[64,512],w:[512,128]", "x:[16,512],w:[512,128]", "x:[24,512],w:[512,128]", "x:[40,512],w:[512,128]"],
    "rowsum": ["x:[32,512]", "x:[16,512]", "x:[24,512]", "x:[40,512]"],
    "gat": ["table:[128,64],idx:[8]", "table:[16,64],idx:[8]", "table:[24,64],idx:[8]", "table:[40,64],idx:[8]"],
}
GATES = {"ew": {"float32": (1e-6, 1e-5)}, "mm": {"float16": (0.0226, 1e-3)},   # 1e-3 * sqrt(512)
         "rowsum": {"bfloat16": (0.226, 1e-2)}, "gat": {"bfloat16": (1e-2, 1e-2)}}


def scaffold(parent, op):
    case_id, shape, dims, dtype, reduction = SIGNATURES[op]
    return run_script("new_operator.py", "--op", op, "--dir", parent, "--backend", "pypto-sim", "--case-id", case_id,
                      "--shape", shape, "--dims", dims, "--dtype", dtype, "--reduction", reduction, "--json")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    parent = tmp_path_factory.mktemp("signatures")
    for op in SIGNATURES:
        proc = scaffold(parent, op)
        assert proc.returncode == 0, proc.stderr
    return parent


def frozen(op_dir, op):
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op_dir, "--target-case-ids", "all_p0",
                      "--selection-mode", "all_p0_no_questions", "--backend", "pypto-sim", "--op-name", f"{op}_kernel")
    assert proc.returncode == 0, proc.stderr
    return json.loads((op_dir / "PERFORMANCE_CASES.json").read_text())


@pytest.mark.parametrize("op", sorted(SIGNATURES))
def test_every_class_freezes_with_small_cases_valid_for_every_input_and_its_scaled_gate(made, op):
    op_dir = made / op
    test = (op_dir / f"test_{op}.py").read_text()
    cases = ast.literal_eval(test.split("CASES = ", 1)[1].split("\n", 1)[0])
    assert [shape for shape, _dtype in cases.values()] == CASES[op]
    man = frozen(op_dir, op)
    assert [c["shape"] for c in man["cases"]] == CASES[op][:1]          # only the P0 case enters the manifest
    gate = {k: (v["atol"], v["rtol"]) for k, v in man["precision_gate"]["dtypes"].items()}
    assert gate == GATES[op]
    assert (man["protocol"]["warmup"], man["protocol"]["repeats"]) == (0, 2)   # pypto-sim's own defaults
    support = {d["dim"]: (d["positions"], d["min"], d["max"]) for d in man["support_range"]["dims"]}
    if op == "mm":   # one dimension K in two tensors; only M varies
        assert support == {"M": (["x[0]"], 16, 64), "K": (["x[1]", "w[0]"], 512, 512), "N": (["w[1]"], 128, 128)}
    if op == "ew":   # sizes: every axis of one size is one dimension
        assert support["d64"] == (["x[0]", "y[0]"], 16, 64) and support["d256"] == (["x[1]", "y[1]"], 256, 256)


def test_the_signature_flags_refuse_what_the_scaffold_cannot_write(tmp_path):
    for flags, field in ((("--shape", "x:[M,K]"), "--shape"),                       # M and K not in --dims
                         (("--shape", "idx:[8],x:[4,4]", "--dtype", "idx:int32,x:float32"), "--shape"),  # int first
                         (("--dtype", "x:float32,w:float32"), "--dtype"),              # names are not the inputs
                         (("--dims", "M=0"), "--dims"), (("--reduction", "K"), "--reduction")):
        proc = run_script("new_operator.py", "--op", "bad", "--dir", tmp_path, "--backend", "pypto-sim", *flags)
        assert_one_line_error(proc, 2, field)
    assert not (tmp_path / "bad").exists()


def test_the_scaled_gate_is_what_a_real_fp32_reduction_of_512_terms_needs():
    """The rule against numbers: a float32 [64,512] x [512,128] product (numpy, pairwise) vs float64."""
    rng = np.random.default_rng(42)
    x, w = rng.standard_normal((64, 512)).astype(np.float32), rng.standard_normal((512, 128)).astype(np.float32)
    ref = x.astype(np.float64) @ w.astype(np.float64)
    err = np.abs(x @ w - ref)

    def matched(atol, rtol):
        return float(np.mean(err <= atol + rtol * np.abs(ref)))
    assert matched(1e-6, 1e-5) < 0.999                 # the element-wise gate the scaffold used to write
    assert signature.gate("float32", 512) == (2.26e-05, 1e-05) and matched(2.26e-05, 1e-05) >= 0.999
    assert signature.gate("float32", 1) == (1e-6, 1e-5)


def run_tests(op_dir, op):
    return subprocess.run([sys.executable, f"test_{op}.py"], cwd=op_dir, capture_output=True, text=True, timeout=600)


def test_two_inputs_and_an_index_input_run_as_written(made):
    for op in ("ew", "gat"):
        proc = run_tests(made / op, op)
        assert proc.returncode == 0 and proc.stdout.count("PASS") == 4, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_a_matmul_needs_only_its_golden_and_kernel_body_the_wrapper_sizes_the_output_from_the_golden(made):
    op_dir = made / "mm"
    edits = {"mm_golden.py": ("return (x.astype(np.float32) * 2.0).astype(x.dtype)",
                              "return (x.astype(np.float32) @ w.astype(np.float32)).astype(x.dtype)"),
             "mm_golden_cpu.py": ("return np.asarray(x, dtype=np.float64) * 2.0",
                                  "return np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64)"),
             "test_mm.py": ("pypto.set_vec_tile_shapes(min(rows, 16), cols)   # whole-tensor body; pypto.loop tiles "
                            "work too\n        out[:] = x * 2.0", "pypto.set_cube_tile_shapes([32, 32], [64, 64], "
                            "[64, 64])\n        out[:] = pypto.matmul(x, w, odt[0])")}
    for name, (old, new) in edits.items():
        text = (op_dir / name).read_text()
        assert old in text, name
        (op_dir / name).write_text(text.replace(old, new))
    proc = run_tests(op_dir, "mm")
    assert proc.returncode == 0 and proc.stdout.count("PASS") == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
