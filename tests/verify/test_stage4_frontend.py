"""Stage 4 gates on a PyPI pypto frontend operator (pypto-sim backend), through the pure core.

PyPTO-Pro is not on PyPI; a pypto-sim operator imports ``pypto`` and builds one
``@pypto.frontend.jit`` kernel inside its module-level launcher ``op_kernel``.
"""

from test_stage4_rules import TESTS, WRAPPER, run, status

HEAD = """
import torch
import pypto
from op_golden import _get_device
from op_golden_cpu import op_golden_cpu
"""
KERNEL = """
def op_kernel(x, out):
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def kernel(a: pypto.Tensor((4,), pypto.DT_FP32), b: pypto.Tensor((4,), pypto.DT_FP32)):
        b[:] = a
    kernel(x, out)
"""


def test_a_frontend_operator_passes_with_the_pro_import_gate_not_applicable():
    result = run(head=HEAD, kernel=KERNEL, wrapper=WRAPPER, tests=TESTS)
    gates = status(result)
    assert gates["pro_import"] == "not_applicable" and "frontend" in result.gate("pro_import").reason
    assert gates["single_jit"] == "PASS" and gates["single_launch"] == "PASS" and not result.failed


def test_two_frontend_kernels_fail_single_jit():
    second = KERNEL.replace("    kernel(x, out)\n", "    kernel(x, out)\n\n\n@pypto.frontend.jit\ndef other(a):\n    pass\n")
    assert status(run(head=HEAD, kernel=second))["single_jit"] == "FAIL"


def test_pypto_next_to_pypto_pro_is_still_a_pro_operator_and_fails_the_import_gate():
    head = HEAD + "import pypto_pro.language as pl\n"
    assert status(run(head=head, kernel=KERNEL))["pro_import"] == "FAIL"


def test_without_pypto_installed_the_delivery_import_is_blocked_not_failed():
    from perftune.verify.import_probe import ImportProbe
    probe = ImportProbe(False, "ModuleNotFoundError", "pypto", "No module named 'pypto'")
    result = run(head=HEAD, kernel=KERNEL, probe=probe)
    assert status(result)["delivery_import"] == "blocked" and not result.failed
