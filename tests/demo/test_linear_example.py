"""The second bundled example through the SKILL's steps (`demo.py --example linear`), to PASS."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_script
import decided
import step_order
from perftune.demo import steps


def test_linear_reaches_pass_with_a_helping_and_a_useless_variant(tmp_path):
    proc = run_script("demo.py", "--example", "linear", "--workdir", tmp_path, "--json", timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["verifier"] == "Stage 5 verification PASSED." and result["operator"] == "linear"
    assert [c["case"] for c in result["cases"]] == ["m64_k256_n256_relu_fp32", "m128_k128_n512_fp16"]
    assert result["outcomes"]["v1_hoist"].startswith("accepted")
    assert result["outcomes"]["v2_matmul"].startswith("accepted")
    assert result["outcomes"]["v3_row_blocks"].startswith("rejected")
    # the frozen selection rule picks from the accepted versions (the smallest evaluation order in the
    # tie set: under heavy load the CIs are wide enough to tie v1_hoist with v2_matmul)
    assert result["chosen_version"] in ("v1_hoist", "v2_matmul") and result["chosen_reason"]
    assert all(c["verdict"] == "faster" for c in result["cases"])
    ran = result["steps_run"]
    assert set(ran) - set(step_order.WHEN_NEEDED) == set(steps.ORDER) - set(step_order.WHEN_NEEDED) - {"bottleneck_profile", "derived_add"}  # no derived item
    assert step_order.order_problems(ran) == []
    op = Path(result["workdir"]) / "linear"
    ledger = json.loads((op / "docs/perf/ledger.json").read_text())
    statuses = {i["item_id"]: i["status"] for i in ledger["items"]}
    assert statuses["general-18"] == statuses["card-mm-01"] == "accepted"
    assert decided.problems(op) == []   # delivered what its compares decided
    correctness = sorted((op / "docs/perf/correctness").glob("*.json"))[-1]
    kinds = {c["id"]: c["p0"] for c in json.loads(correctness.read_text())["cases"]}
    assert kinds == {"m64_k256_n256_relu_fp32": True, "m128_k128_n512_fp16": True,
                     "m3_k5_n7_relu_fp32": False, "m1_k64_n3_fp16": False}
