"""Delivery import safety (gate delivery_import) through the real CLI on copies of the cpu example.

The delivery is test_<op>.py + <op>_golden.py + <op>_golden_cpu.py alone in an empty folder:
anything else the test needs at import time makes the gate FAIL (delivery_import_unsafe); only a
missing pypto_pro / torch_npu / torch is the environment (blocked, env_error, exit 3).
"""

import json

from conftest import run_script


def prepend(path, text):
    path.write_text(text + path.read_text())


def delivery_gate(op_dir, *extra, env=None):
    proc = run_script("stage4_gates.py", "--op-dir", op_dir, "--json", *extra, env=env)
    out = json.loads(proc.stdout)
    return proc.returncode, out, next(g for g in out["gates"] if g["id"] == "delivery_import")


def test_a_helper_module_left_in_the_op_dir_is_not_part_of_the_delivery(op_dir):
    (op_dir / "softmax_tiling.py").write_text("ROWS_PER_TILE = 8\n")
    prepend(op_dir / "test_softmax.py", "from softmax_tiling import ROWS_PER_TILE\n")
    code, out, gate = delivery_gate(op_dir, env={"PYTHONPATH": str(op_dir)})    # no leak via PYTHONPATH
    assert code == 1 and out["failed_gates"] == ["delivery_import"]
    assert gate["category"] == "delivery_import_unsafe" and "softmax_tiling" in gate["reason"]
    assert gate["evidence"] == [{"file": "test_softmax.py", "line": 1,
                                 "text": "from softmax_tiling import ROWS_PER_TILE"}]


def test_module_level_work_that_needs_undelivered_files_fails(op_dir):
    prepend(op_dir / "test_softmax.py", "REFERENCE = open('reference_outputs.txt').read()\n")
    code, _, gate = delivery_gate(op_dir)
    assert code == 1 and gate["status"] == "FAIL" and gate["reason"].startswith(
        "importing the delivery alone fails (FileNotFoundError:")


def test_a_hanging_import_fails_after_the_timeout(op_dir):
    prepend(op_dir / "test_softmax.py", "import time\ntime.sleep(30)\n")
    code, _, gate = delivery_gate(op_dir, "--import-timeout", "1")
    assert code == 1 and gate["category"] == "delivery_import_unsafe"
    assert "import did not finish: no result after 1 s" in gate["reason"]


def test_a_missing_third_party_module_is_the_environment_not_a_failure(op_dir):
    prepend(op_dir / "softmax_golden.py", "import torch_npu\n")   # the Ascend adapter: absent without a card
    code, out, gate = delivery_gate(op_dir)
    assert code == 3 and out["failed_gates"] == [] and out["status"] == "blocked"
    assert gate["status"] == "blocked" and gate["category"] == "env_error"
    assert gate["evidence"][-1] == {"file": "softmax_golden.py", "line": 1, "text": "import torch_npu"}
    assert out["categories"] == ["env_error"] and out["primary_failure_category"] == "env_error"


def test_a_missing_golden_fails_the_import_too(op_dir):
    (op_dir / "softmax_golden.py").unlink()
    code, out, gate = delivery_gate(op_dir)
    assert code == 1 and out["failed_gates"] == ["files", "delivery_import"]
    assert "No module named 'softmax_golden'" in gate["reason"]
