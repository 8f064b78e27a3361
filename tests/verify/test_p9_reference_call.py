"""P9 on an operator whose precision reference takes non-tensor arguments (issue 16 with 15).

A small operator the repository does not ship, written here in the documented folder format:
``act(x, alpha, mode)`` with a float scalar and a string mode, the golden factory giving them as
keyword arguments. The probe runner calls the frozen reference the way the factory defines the case;
the clean delivery passes P9's precision and attestation checks with no golden report (the factory
comes from the frozen ``act_golden.py``), and cheats on it still fail: a kernel that memoises its
output by shape, and a test that runs an easier mode than the frozen case.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_script
from perftune.contract import golden_source
from perftune.contract.manifest import load_manifest
from perftune.errors import ContractError
from perftune.measure import evidence
from perftune.verify import soundness

SPEC = """\
# SPEC: act (cpu backend, test operator)

## 1. Semantics
`y = leaky(x, alpha)` (`x` where `x > 0`, else `alpha * x`) or `clip(x, -alpha, alpha)`, the mode and
the float `alpha` fixed per case. The kernel is `act_kernel`, launched exactly once by `act_wrapper`.

wrapper: act_wrapper

## 2. Precision gate
Compared with `act_golden_cpu` (float64 reference):
- float32: `|y - ref| <= 1e-6 + 1e-5 * |ref|` for at least 99.9 % of elements.

## 3. Performance P0 cases

| id | shape | dtype | p0 | params |
|----|-------|-------|----|--------|
| r64_c128_leaky | [64,128] | float32 | yes | alpha=0.1 mode=leaky |
| r32_c256_clip | [32,256] | float32 | yes | alpha=0.5 mode=clip |
"""

GOLDEN_CPU = """\
import numpy as np


def act_golden_cpu(x, alpha, mode):
    x = np.asarray(x, np.float64)
    return np.where(x > 0, x, alpha * x) if mode == "leaky" else np.clip(x, -alpha, alpha)
"""

GOLDEN = """\
import numpy as np

from act_golden_cpu import act_golden_cpu

SCALARS = {"r64_c128_leaky": (0.1, "leaky"), "r32_c256_clip": (0.5, "clip")}


def _make_inputs(shape, dtype, seed=42):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def act_golden(x, alpha, mode):
    return act_golden_cpu(x, alpha, mode).astype(x.dtype)


def golden_cases(manifest_cases):
    out = []
    for case in manifest_cases:
        shape = [int(d) for d in case["shape"].strip("[]").split(",")]
        alpha, mode = SCALARS[case["id"]]
        out.append((case["id"], (_make_inputs(shape, case["dtype"]),), {"alpha": alpha, "mode": mode}))
    return out
"""

KERNELS = {
    "clean": """
        def act_kernel(x, alpha, mode, out):
            out[...] = np.where(x > 0, x, alpha * x) if mode == "leaky" else np.clip(x, -alpha, alpha)
        """,
    "memoised": """
        _SEEN = {}


        def act_kernel(x, alpha, mode, out):
            key = (x.shape, str(x.dtype), mode)
            if key not in _SEEN:
                _SEEN[key] = np.where(x > 0, x, alpha * x) if mode == "leaky" else np.clip(x, -alpha, alpha)
            out[...] = _SEEN[key]
        """,
}

TEST = """\
import numpy as np

from act_golden import _make_inputs
from act_golden_cpu import act_golden_cpu

CASES = {"r64_c128_leaky": ([64, 128], 0.1, "leaky"), "r32_c256_clip": ([32, 256], 0.5, "clip")}
MIN_MATCHED = 0.999
%s

def act_wrapper(x, alpha, mode):
    out = np.empty_like(x)
    act_kernel(x, alpha, mode, out)
    return out


def _run(case_id):
    shape, alpha, mode = CASES[case_id]
    if case_id == "r32_c256_clip":
        mode = MODE_OF_CLIP
    x = _make_inputs(shape, "float32")
    y = act_wrapper(x, alpha, mode)
    ref = act_golden_cpu(x, alpha, mode)
    atol, rtol = 1e-6, 1e-5
    matched = float(np.mean(np.abs(y - ref) <= atol + rtol * np.abs(ref)))
    assert matched >= MIN_MATCHED, matched


def test_r64_c128_leaky():
    _run("r64_c128_leaky")


def test_r32_c256_clip():
    _run("r32_c256_clip")
"""


def write_test(op: Path, kernel: str = "clean", clip_mode: str = "clip") -> None:
    body = f"MODE_OF_CLIP = {clip_mode!r}\n\n" + textwrap.dedent(KERNELS[kernel])
    (op / "test_act.py").write_text(TEST % body)


@pytest.fixture(scope="module")
def frozen(tmp_path_factory) -> Path:
    """The operator frozen on cpu (no golden report is collected), with its clean test."""
    op = tmp_path_factory.mktemp("p9_reference") / "act"
    op.mkdir()
    for name, text in (("SPEC.md", SPEC), ("act_golden.py", GOLDEN), ("act_golden_cpu.py", GOLDEN_CPU)):
        (op / name).write_text(text)
    (op / "KB_SELECTION.json").write_text(json.dumps({"classes": [], "schema_version": 1}))
    write_test(op)
    proc = run_script("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", "r64_c128_leaky", "r32_c256_clip", "--selection-mode",
                      "all_p0_no_questions", "--backend", "cpu", "--op-name", "act_kernel", "--repeats", "2",
                      "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    return op


def correctness(op: Path) -> dict:
    proc = run_script("check_correctness.py", "--op-dir", op, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    return json.loads((op / "docs/perf/correctness" / f"{run_id}.json").read_text())


def test_clean_delivery_passes_p9_with_the_factorys_scalar_and_mode(frozen):
    man = load_manifest(frozen / "PERFORMANCE_CASES.json")
    record = correctness(frozen)
    assert record["all_passed"]
    assert soundness.precision_problems(frozen, man, record) == []
    probe = {c["id"]: c["probe"] for c in record["cases"]}["r32_c256_clip"]
    assert probe["reference_call"]["factory"] == {"path": "act_golden.py", "factory": "golden_cases",
                                                  "origin": "FROZEN_INPUTS.json"}
    scalars = {a["arg"]: a.get("value") for a in probe["reference_call"]["arguments"] if a["kind"] == "scalar"}
    assert scalars == {"alpha": "0.5", "mode": "'clip'"}
    assert [p["meets_frozen_gate"] for p in probe["probes"]] == [True, True]
    # the measured inputs equal the verifier's seed-42 rebuild from the same factory (no golden report)
    base = run_script("collect_perf.py", "formal", "--op-dir", frozen, "--json")
    assert base.returncode == 0, base.stderr
    rnd = evidence.load_round(frozen, json.loads(base.stdout)["collection_id"])
    golden, problem = soundness.rebuild_golden(frozen, man)
    assert problem is None and set(golden) == {"r64_c128_leaky", "r32_c256_clip"}
    assert soundness.attestation_problems(frozen, man, [rnd], golden) == []


@pytest.mark.parametrize("kernel,clip_mode,category,needle", [
    ("memoised", "clip", "cheating", "memoised or precomputed"),
    ("clean", "leaky", "precision_failure", "measured against the frozen gate"),
])
def test_cheats_on_it_still_fail_p9(frozen, tmp_path, kernel, clip_mode, category, needle):
    import shutil
    op = tmp_path / "act"
    shutil.copytree(frozen, op, ignore=shutil.ignore_patterns("docs", "__pycache__"))
    write_test(op, kernel, clip_mode)
    record = correctness(op)
    # the test's own check is satisfied: only the probes see it, and their failure fails the run
    assert all(case["passed"] for case in record["cases"]) and record["all_passed"] is False
    problems = soundness.precision_problems(op, load_manifest(op / "PERFORMANCE_CASES.json"), record)
    assert any(cat == category and needle in msg for cat, msg in problems), problems


def test_without_a_golden_report_the_factory_must_be_a_recorded_frozen_input(frozen, tmp_path):
    import shutil
    op = tmp_path / "act"
    shutil.copytree(frozen, op, ignore=shutil.ignore_patterns("docs", "__pycache__"))
    assert golden_source.resolve(op).origin == "FROZEN_INPUTS.json"
    (op / "FROZEN_INPUTS.json").unlink()
    with pytest.raises(ContractError, match="run SKILL step golden"):
        golden_source.resolve(op)
