"""Host work on the simulator (issue 28 item 7): a cheat and its legal twin through the real pipeline.

The operator is the `new_operator.py --backend pypto-sim` scaffold (bf16, two named inputs, one P0
case); its op function `rms_kernel` and wrapper are replaced with `kernels/sim_host_finish.py` (the
cheat: 16 of 64 rows simulated, the rest computed with torch after the launch) or
`kernels/sim_wrapper_reshape.py` (the twin: allocation, a reshape and a copy around one whole
launch). Both then go through the same Stage 5 steps (`tests/artefacts/stage5_run.py`): the cheat
must FAIL with each of its three checks as `cheating`, the twin must PASS. Without the pypto-sim
extra the freeze stops with the install line.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from artefacts import stage5_run
from conftest import assert_one_line_error, run_script

HERE = Path(__file__).resolve().parent
CASE = "r64_c256_bf16"
FUNCTIONS = re.compile(r"^def rms_kernel\(.*?^def rms_wrapper\(.*?(?=^def )", re.M | re.S)   # the two, not the helpers after
KB = {"schema_version": 1, "classes": [{"class_id": "rms", "reason": "elementwise skeleton", "optional_patterns": [],
      "required_constraints": [{"req_id": "out-by-kernel", "kind": "obligation", "reference": "SPEC.md#1-semantics",
                                "text": "the kernel writes every output element", "expected_metric": "no host work"}]}]}


def planted(tmp_path: Path, kernel: str) -> Path:
    made = run_script("new_operator.py", "--op", "rms", "--dir", tmp_path / "custom", "--backend", "pypto-sim",
                      "--case-id", CASE, "--shape", "x:[64,256],gamma:[256]", "--dtype", "bfloat16")
    assert made.returncode == 0, made.stderr
    op = tmp_path / "custom" / "rms"
    (op / "KB_SELECTION.json").write_text(json.dumps(KB))
    text = (HERE / "kernels" / f"{kernel}.py").read_text()
    code = text[text.index('\n"""\n', 3) + 5:].lstrip("\n")
    test = op / "test_rms.py"
    source = test.read_text()
    assert FUNCTIONS.search(source), "the scaffold's rms_kernel/rms_wrapper moved"
    test.write_text(FUNCTIONS.sub(lambda _m: code.rstrip("\n") + "\n\n\n", source, count=1))
    return op


HAVE_PYPTO = importlib.util.find_spec("pypto") is not None


@pytest.mark.parametrize("kernel, caught", [
    ("sim_host_finish", {"P9.host_compute", "P9.launch_output", "P9.launch_work"}),
    ("sim_wrapper_reshape", set()),
])
def test_work_outside_the_simulated_launch_is_cheating_and_a_wrapper_that_only_reshapes_passes(tmp_path, kernel,
                                                                                                caught):
    op = planted(tmp_path, kernel)
    if not HAVE_PYPTO:   # without the extra the freeze stops with the install line
        proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", CASE,
                          "--selection-mode", "single_p0", "--backend", "pypto-sim", "--op-name", "rms_kernel")
        assert_one_line_error(proc, 3, "pypto is not installed")
        return
    code, verdict = stage5_run.run(op, [CASE], "rms_kernel", ["kb-rms-out-by-kernel"], backend="pypto-sim")
    failures = verdict.get("failures") or []
    found = {f["check"] for f in failures if f.get("category") == "cheating"}
    if not caught:
        assert code == 0 and verdict["verdict"] == "PASS", failures or verdict
        record = json.loads(next((op / "docs/perf").glob("round_*/*/repeat_001/attestation.json")).read_text())
        assert record["sim"]["host_torch"] == {} and record["sim"]["launches"] == 1
        assert {"torch.empty_like", "Tensor.copy_", "Tensor.reshape"} <= set(record["sim"]["allowed_torch"])
        return
    assert code != 0 and verdict["verdict"] == "FAIL"
    assert caught <= found, failures
