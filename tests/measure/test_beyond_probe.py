"""The beyond-P0 probe (``python -m perftune.measure.beyond_probe``) on kernels the tests plant: tail
inputs, drawn shapes and traced accumulation dtypes, each judged by the frozen gate (exact outcomes:
the planted kernels are deterministic)."""

import json
import sys

import pytest

from conftest import freeze_example, run_script  # noqa: F401 (run_script: the repo's scripts on sys.path)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "cheats"))
import cheat_pipeline  # noqa: E402

SHAPES = [["[14,3]", "float32"], ["[300,17]", "float32"]]


def probe(op, tmp_path, case="r64_c4096_fp32", shapes=SHAPES, seed=5):
    import subprocess
    out = tmp_path / "beyond.json"
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "perftune.measure.beyond_probe", "--op-dir", op,
                           "--runner", op / "test_softmax.py", "--manifest", op / "PERFORMANCE_CASES.json",
                           "--case-id", case, "--op-name", "softmax_kernel", "--output", out, "--seed", str(seed),
                           "--shapes", json.dumps(shapes)], cwd=op, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("kernel, tail, shapes, reductions", [   # the example's strict gate
    (None, True, [True, True], ["add.reduce:float64"]),
    ("p0_shape_fast_path", True, [False, False], ["add.reduce:float32"]),
    ("dropped_stabilisation", False, [True, True], ["add.reduce:float32"]),
    ("precision_downcast", False, [False, False], ["add.reduce:float16", "add.reduce:float32"]),
    ("logsumexp", True, [True, True], ["add.reduce:float32"]),
])
def test_tails_shapes_and_accumulation_dtypes_of_planted_kernels(op_dir, tmp_path, kernel, tail, shapes,
                                                                 reductions):
    freeze_example(op_dir)
    if kernel:
        cheat_pipeline.plant_kernel(op_dir, kernel)
    result = probe(op_dir, tmp_path)
    assert result["called"] == "softmax_wrapper" and result["tail_sigmas"] == 30.0
    assert result["tail"]["meets_frozen_gate"] is tail, result["tail"]
    assert [s["meets_frozen_gate"] for s in result["shapes"]] == shapes
    assert [s["shape"] for s in result["shapes"]] == ["[14,3]", "[300,17]"]
    assert result["reductions"]["observed"] == reductions


def test_tail_inputs_hold_two_percent_of_each_row_beyond_thirty_sigma():
    import numpy as np
    from perftune.measure import fresh_data
    x = (np.random.default_rng(42).standard_normal((8, 200)) * 3.0).astype(np.float16)
    tail = fresh_data.tail_like(x, 7, 30.0)
    far = np.abs(tail.astype(np.float64) - x.astype(np.float64).mean()) >= 30 * x.astype(np.float64).std() * 0.999
    assert tail.dtype == np.float16 and tail.shape == x.shape and far.sum(axis=1).tolist() == [4] * 8
    assert (tail.astype(np.float64).max(axis=1) > 88).all() and (tail.astype(np.float64).min(axis=1) < -88).all()
