"""Issue 35's acceptance: honest kernels of classes the repository never shipped reach stage5_check PASS
through ``demo.py --op-dir`` (SKILL.md's own commands), where the verifier once called them cheating:

- a numpy ``cumsum`` (scan, cpu) whose kernels call ``np.cumsum`` (named like the operation) and
  ``np.add.accumulate``, accumulating in float64 (baseline) and float32, float16 I/O included, under an
  ``accum-fp32`` obligation ("at least float32") with the far tails undeclared;
- PyPTO's matmul example (cube, pypto-sim): the op function ``matmul_kernel`` calls ``pypto.matmul``.

Before issue 35 both FAILed with ``P9.reference_call`` (the op name without ``_kernel`` matched the
library call); the operator folders are written by ``honest_ops.py`` and ``honest_matmul.py``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import honest_matmul
import honest_ops
from conftest import assert_one_line_error, run_script

HAVE_PYPTO = importlib.util.find_spec("pypto") is not None


def _demo(op: Path, work: Path) -> tuple[dict, Path]:
    proc = run_script("demo.py", "--op-dir", op, "--workdir", work, "--json", timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    delivered = Path(result["workdir"]) / op.name
    return result, delivered


def _check(delivered: Path) -> dict:
    found = json.loads((delivered / "docs/perf/stage5_check.json").read_text())
    assert (found["verdict"], found["failures"]) == ("PASS", []), found["failures"]
    return found


def test_a_numpy_cumsum_calling_np_cumsum_with_float32_accumulation_passes(tmp_path):
    result, delivered = _demo(honest_ops.write_cumsum(tmp_path), tmp_path / "work")
    assert result["verifier"] == "Stage 5 verification PASSED."
    assert result["outcomes"]["v1_cumsum_fp32"].startswith("accepted")   # np.cumsum(..., dtype=float32) delivered
    assert "np.cumsum(x, axis=1, dtype=np.float32)" in (delivered / "test_cumsum.py").read_text()
    beyond = _check(delivered)["beyond_p0"]
    assert beyond["tails_declared"] is False and beyond["kb_obligations"]["observed"][0]["req_id"] == "accum-fp32"
    assert {c["case"]: c["reductions"]["observed"] for c in beyond["cases"]} == {
        "r64_c1024_fp32": ["add.accumulate:float32"], "r64_c1024_fp16": ["add.accumulate:float32"]}
    run = sorted((delivered / "docs/perf/correctness").glob("c*.json"))[-1]
    assert json.loads(run.read_text())["early"]["findings"] == []   # the early P9 checks ran at step 1 too


def test_pypto_matmul_example_named_matmul_kernel_calling_pypto_matmul_passes_on_pypto_sim(tmp_path):
    op = honest_matmul.write_matmul(tmp_path)
    if not HAVE_PYPTO:   # without the extra the demo stops at the freeze with the install line
        proc = run_script("demo.py", "--op-dir", op, "--workdir", tmp_path / "work")
        assert_one_line_error(proc, 3, "pypto is not installed")
        return
    result, delivered = _demo(op, tmp_path / "work")
    assert result["verifier"] == "Stage 5 verification PASSED." and result["operator"] == "matmul"
    assert "out[:] = pypto.matmul(a, b, a.dtype)" in (delivered / "test_matmul.py").read_text()
    manifest = json.loads((delivered / "PERFORMANCE_CASES.json").read_text())
    assert manifest["protocol"]["backend"] == "pypto-sim" and manifest["protocol"]["op_name"] == "matmul_kernel"
    found = _check(delivered)
    assert found["beyond_p0"]["cases"][0]["tail"]["meets_frozen_gate"] is True
