"""The gate rules on small inline sources through the pure core (stage4.evaluate), no disk.

Each case is a minimal operator `op` whose test file differs from a passing one in one construct.
"""

import textwrap

import pytest

from perftune.errors import primary_category
from perftune.verify import stage4
from perftune.verify.import_probe import ImportProbe

GOLDEN = "import torch\n\n\ndef _get_device():\n    return 'npu'\n"
GOLDEN_CPU = "def op_golden_cpu(x, scale=None):\n    return x\n"
HEAD = """
import torch
import pypto_pro.language as pl
from op_golden import _get_device
from op_golden_cpu import op_golden_cpu
"""
KERNEL = """
@pl.jit
def op_kernel(x, out):
    pl.store_tile(out, [0], pl.load_tile(x, [0]))
"""
WRAPPER = """
def op_wrapper(x, scale=None):
    out = torch.empty_like(x)
    op_kernel(x, out)
    return out
"""
TESTS = "".join(f"""
def test_case{i}():
    x = torch.ones(4, device=_get_device())
    _assert_precision(op_wrapper(x), op_golden_cpu(x))
""" for i in range(4))
OK = ImportProbe(True)


def run(test=None, *, golden=GOLDEN, golden_cpu=GOLDEN_CPU, probe=OK, **parts):
    """Evaluate op with the default parts, any of head/kernel/wrapper/tests replaced."""
    if test is None:
        test = "".join(parts.get(k, d) for k, d in (("head", HEAD), ("kernel", KERNEL),
                                                      ("wrapper", WRAPPER), ("tests", TESTS)))
    files = [stage4.SourceFile(n, textwrap.dedent(t) if t is not None else None) for n, t in
             (("test_op.py", test), ("op_golden.py", golden), ("op_golden_cpu.py", golden_cpu))]
    return stage4.evaluate(stage4.OperatorSources("op", *files), probe)


def status(result):
    return {g.id: g.status for g in result.gates}


def only_failure(result):
    assert result.failed and len(result.failed) == 1, [(g.id, g.status, g.reason) for g in result.gates]
    return result.gate(result.failed[0])


def test_the_minimal_operator_passes_every_gate():
    result = run()
    assert set(status(result).values()) == {"PASS"} and result.passed and result.exit_code == 0
    assert [g.id for g in result.gates] == [spec.id for spec in stage4.GATES]
    assert result.categories == () and result.primary_category is None


@pytest.mark.parametrize("wrapper", [
    "def op_wrapper(x, scale=None):\n    out = torch.empty_like(x)\n    op_kernel[8](x, out)\n    return out\n",
    "def _launch(x, out):\n    op_kernel(x, out)\n\n\ndef op_wrapper(x, scale=None):\n"
    "    out = torch.empty_like(x)\n    _launch(x, out)\n    return out\n",
    "def op_wrapper(x, scale=None):\n    out = torch.empty_like(x)\n    for chunk in [op_kernel(x, out)]:\n"
    "        pass\n    return out\n",
])
def test_one_launch_outside_loops_passes(wrapper):
    """kernel[grid](...), a launch through a helper, and the (once-evaluated) iterable of a for."""
    assert status(run(wrapper=wrapper))["single_launch"] == "PASS"


@pytest.mark.parametrize("body", [
    "    while out.sum() == 0:\n        op_kernel(x, out)\n",
    "    launch = lambda: op_kernel(x, out)\n    launch()\n",
    "    functools.partial(op_kernel, x)(out)\n",
    "    list(map(lambda c: op_kernel(c, out), [x]))\n",
    "    def inner():\n        op_kernel(x, out)\n    inner()\n",
    "    pass\n",
])
def test_unprovable_or_missing_launch_fails(body):
    wrapper = f"def op_wrapper(x, scale=None):\n    out = torch.empty_like(x)\n{body}    return out\n"
    gate = only_failure(run(wrapper=wrapper))
    assert (gate.id, gate.category) == ("single_launch", "cheating")


def test_helper_passed_as_a_value_counts_as_repeated():
    wrapper = ("def _launch(c):\n    op_kernel(c, c)\n\n\ndef op_wrapper(x, scale=None):\n"
               "    list(map(_launch, x.split(2)))\n    return x\n")
    gate = only_failure(run(wrapper=wrapper))
    assert gate.id == "single_launch" and [e.text for e in gate.evidence] == ["op_kernel(c, c)"]


def test_jit_by_call_counts_as_a_second_kernel():
    kernel = KERNEL + "\n\ndef _body(x, out):\n    pass\n\n\nop_kernel_fast = pl.jit(_body)\n"
    gate = only_failure(run(kernel=kernel))
    assert gate.id == "single_jit" and [e.text for e in gate.evidence] == [
        "@pl.jit -> op_kernel", "op_kernel_fast = pl.jit(_body) -> op_kernel_fast"]


def test_pro_import_forms():
    alt = HEAD.replace("import pypto_pro.language as pl", "from pypto_pro import language as pl")
    assert status(run(head=alt))["pro_import"] == "PASS"
    bad = HEAD + "from pypto.frontend import jit\n"
    gate = only_failure(run(head=bad))
    assert (gate.id, gate.category, gate.evidence[0].line) == ("pro_import", "import_violation", 6)
    lazy = HEAD + "import importlib\nFRONT = importlib.import_module('pypto.frontend')\n"
    assert only_failure(run(head=lazy)).id == "pro_import"


def test_missing_pro_import_with_a_pl_decorator_is_a_pypto_operator():
    head = HEAD.replace("import pypto_pro.language as pl\n", "")
    result = run(head=head)
    assert result.failed == ("pro_import", "single_jit")
    assert result.gate("pro_import").evidence[0].text == "no `import pypto_pro.language as pl`"


def test_test_reaching_the_kernel_through_a_helper_fails():
    tests = TESTS + "\n\ndef _raw(x):\n    op_kernel(x, x)\n    return x\n\n\ndef test_raw():\n" \
                    "    x = torch.ones(4, device=_get_device())\n    _assert_precision(op_wrapper(_raw(x)), x)\n"
    gate = only_failure(run(tests=tests))
    assert (gate.id, gate.category) == ("tests_call_wrapper", "signature_mismatch")


def test_test_that_never_reaches_the_wrapper_fails():
    tests = TESTS + "\n\ndef test_shape():\n    _assert_precision(torch.ones(2), torch.ones(2))\n"
    gate = only_failure(run(tests=tests))
    assert gate.id == "tests_call_wrapper" and "test_shape never reaches op_wrapper" in gate.evidence[0].text


def test_precision_names_in_comments_and_strings_are_not_uses():
    tests = TESTS + "\n# never use assert_close or atol_override here\nNOTE = 'assert_close is banned'\n"
    assert status(run(tests=tests))["precision_standard"] == "PASS"
    gate = only_failure(run(tests=TESTS + "\ndef _x(**kw):\n    return kw\n\n\n_x(atol_override=1)\n"))
    assert gate.id == "precision_standard"


@pytest.mark.parametrize("line", [
    "DEVICE = 'npu:3'", "torch.npu.set_device(0)", "x = torch.ones(2, device=1)",
    "d = torch.device('npu', 0)", "y = torch.ones(2).npu(1)", "import os\nos.environ['TILE_FWK_DEVICE_ID'] = '1'",
])
def test_hard_coded_devices_fail(line):
    gate = only_failure(run(tests=TESTS + "\n" + line + "\n"))
    assert (gate.id, gate.category) == ("device", "incomplete_structure")


def test_device_via_module_attribute_is_accepted():
    head = HEAD.replace("from op_golden import _get_device", "import op_golden as golden")
    tests = TESTS.replace("_get_device()", "golden._get_device()")
    assert status(run(head=head, tests=tests))["device"] == "PASS"


def test_golden_purity_sees_lazy_imports_and_the_implementation():
    gate = only_failure(run(golden=GOLDEN + "import importlib\npl = importlib.import_module('pypto_pro.language')\n"))
    assert (gate.id, gate.category, gate.evidence[0].file) == ("golden_purity", "golden_failure", "op_golden.py")
    gate = only_failure(run(golden_cpu="from test_op import op_wrapper\n\n\n" + GOLDEN_CPU))
    assert gate.id == "golden_purity" and gate.evidence[0].line == 1


def test_wrapper_signature_rules():
    gate = only_failure(run(golden_cpu="def op_golden_cpu(x):\n    return x\n"))
    assert gate.id == "wrapper_signature" and "!= op_golden_cpu parameters ['x']" in gate.evidence[0].text
    gate = only_failure(run(wrapper=WRAPPER.replace("scale=None", "scale=1.0")))
    assert "must default to None: ['scale']" in gate.evidence[0].text
    gate = only_failure(run(golden_cpu="def reference(x, scale=None):\n    return x\n"))
    assert gate.id == "wrapper_signature" and gate.evidence[0].text == "no def op_golden_cpu"


def test_cpu_operator_uses_op_kernel_and_skips_pypto_gates():
    head = HEAD.replace("import pypto_pro.language as pl\n", "import numpy as np\n")
    kernel = "\ndef op_kernel(x, out):\n    out[...] = x\n"
    result = run(head=head, kernel=kernel)
    assert status(result)["pro_import"] == status(result)["single_jit"] == "not_applicable"
    assert result.gate("pro_import").reason == "cpu backend operator (no pypto_pro import)"
    assert result.passed
    gate = only_failure(run(head=head, kernel="\ndef op_compute(x, out):\n    out[...] = x\n",
                            wrapper=WRAPPER.replace("op_kernel", "op_compute")))
    assert (gate.id, gate.category) == ("single_launch", "signature_mismatch")


def test_delivery_probe_outcomes_map_to_blocked_or_fail():
    blocked = run(probe=ImportProbe(False, "ModuleNotFoundError", "torch_npu.contrib", "No module named 'torch_npu'"))
    assert blocked.status == "blocked" and blocked.exit_code == 3 and blocked.categories == ("env_error",)
    other = run(probe=ImportProbe(False, "ModuleNotFoundError", "op_tiling", "No module named 'op_tiling'"))
    gate = only_failure(other)
    assert (gate.id, gate.category) == ("delivery_import", "delivery_import_unsafe")
    assert gate.evidence[0].text == "ModuleNotFoundError: No module named 'op_tiling'"
    hung = only_failure(run(probe=ImportProbe(False, "TimeoutExpired", message="no result", timed_out=True)))
    assert hung.reason == "importing the delivery alone fails (import did not finish: no result)"


def test_result_rows_for_stage5_check():
    result = run(tests=TESTS.replace("_assert_precision", "check", 1),
                 probe=ImportProbe(False, "ModuleNotFoundError", "pypto_pro", "No module named 'pypto_pro'"))
    rows = result.gate_rows()
    assert rows[0] == {"id": "files", "name": "deliverable files present and parseable", "status": "PASS",
                       "detail": "test, golden and golden_cpu files exist and parse"}
    findings = result.findings()
    assert [(f["gate"], f["category"]) for f in findings] == [
        ("precision_standard", "incomplete_structure"), ("delivery_import", "env_error")]
    assert findings[0]["evidence"] == ["test_op.py:16: test_case0 never calls _assert_precision"]
    assert result.exit_code == 1 and result.primary_category == primary_category(result.categories)
    assert result.primary_category == "incomplete_structure"


def test_unreadable_test_file_leaves_only_file_level_gates():
    files = [stage4.SourceFile("test_op.py", None, "not UTF-8 (byte 3)"),
             stage4.SourceFile("op_golden.py", GOLDEN), stage4.SourceFile("op_golden_cpu.py", GOLDEN_CPU)]
    result = stage4.evaluate(stage4.OperatorSources("op", *files), OK)
    assert result.failed == ("files",) and result.gate("files").category == "runtime_failure"
    assert result.gate("files").evidence[0].text == "not UTF-8 (byte 3)"
    assert status(result)["golden_purity"] == "PASS"
    assert status(result)["single_jit"] == "not_applicable"
