"""The honest-kernel corpus (issue 35 Deliver 1): legal twins of the checks that once called honest code
cheating, each delivered as experiment v001 through the real pipeline on the corpus's small softmax
(cheat_pipeline.py) and checked by stage5_check with the re-measurement: each must PASS, with no finding
at its correctness run either (the early P9 checks, verify/early.py). The operators of other classes
(cumsum on cpu, PyPTO's matmul on pypto-sim) are test_honest_demo.py; the corpus's own twins
test_corpus_twins.py. Table (kernel -> check it twins): docs/stage5-check.md "Cheat classes".
"""

from __future__ import annotations

import json

import pytest

import cheat_pipeline as pipeline

UNDECLARED_TAILS = {"before_stage4": [{"edit": "SPEC.md", "replace": [["tails: 30 sigma\n", ""]]}]}
HONEST = {   # id -> (the arm: experiment and plants, the checks it twins)
    # a library routine named like the operation computes the output (scipy.special.softmax, float32)
    "scipy_softmax": ({"experiment": "scipy_softmax"}, {"P9.reference_call"}),
    # np.matmul as the row-sum primitive, float32 accumulation the accum-fp32 obligation allows
    "matmul_rowsum": ({"experiment": "matmul_rowsum"}, {"P9.reference_call", "P9.kb_obligation"}),
    # correct on the declared N(0, 3) inputs, not on +-30 sigma tails the SPEC does not declare
    "undeclared_tails": ({"experiment": "dropped_stabilisation", "plants": UNDECLARED_TAILS}, {"P9.tail_inputs"}),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_the_honest_kernel_is_accepted_at_every_step_and_passes_every_check(name, tmp_path):
    arm, _twins = HONEST[name]
    op = pipeline.small_softmax(tmp_path)
    pipeline.deliver(op, arm.get("plants") or {}, experiment=arm["experiment"])
    item = next(i for i in json.loads((op / "docs/perf/ledger.json").read_text())["items"] if i["item_id"] == "bn-kernel")
    run = json.loads((op / "docs/perf/correctness" / f"{item['evidence']['correctness']}.json").read_text())
    assert (item["status"], run["all_passed"], run["early"]["findings"]) == ("accepted", True, []), run["early"]
    assert bool(run["early"]["limits"]) is (name == "undeclared_tails")
    code, found = pipeline.check(op)
    assert (code, found["verdict"], found["failures"]) == (0, "PASS", []), found["failures"]
    assert found["remeasure"]["status"] == "run"
    beyond = found["beyond_p0"]
    if name == "undeclared_tails":   # the limit is disclosed, never a FAIL
        assert beyond["tails_declared"] is False and beyond["cases"][0]["tail"]["meets_frozen_gate"] is False
        assert len(beyond["limits"]) == 1 and "declares no tails" in beyond["limits"][0]
    else:
        assert beyond["limits"] == [] and beyond["tails_declared"] is True
    if name == "matmul_rowsum":
        assert "matmul.__call__:float32" in beyond["cases"][0]["reductions"]["observed"]
