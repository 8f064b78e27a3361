"""The beyond-P0 verdict parts that need no pipeline: the obligation registry on the example's KB files
and the PASS verdict's disclosed limits (the checks themselves run through the corpus, tests/cheats)."""

import json
import shutil

from conftest import EXAMPLE
from perftune.verify import beyond_p0, verdict


def test_the_example_accum_fp32_obligation_is_observable_and_the_others_say_why_not(tmp_path):
    for name in ("KB_SELECTION.json", "DESIGN_BINDINGS.json"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    seen, other = beyond_p0.obligations(tmp_path)
    assert seen == [{"req_id": "accum-fp32", "observer": "accumulation_dtype"}]
    assert [o["req_id"] for o in other] == ["output-by-kernel"] and "no observer" in other[0]["reason"]
    bindings = json.loads((tmp_path / "DESIGN_BINDINGS.json").read_text())
    bindings["bindings"] = [b for b in bindings["bindings"] if b["req_id"] != "accum-fp32"]
    (tmp_path / "DESIGN_BINDINGS.json").write_text(json.dumps(bindings))
    assert beyond_p0.obligations(tmp_path)[0] == []   # an unbound obligation is not checked
    assert beyond_p0.obligations(tmp_path / "missing") == ([], [])


def test_a_pass_names_its_disclosed_limits_and_unverified_support_shapes():
    note = {"limits": ["case c: tail (inputs at +-30 sigma): both fail"],
            "support_shapes": {"status": "unverified", "reason": "SPEC.md declares no support range"}}
    assert verdict.beyond_lines(note) == (
        "Disclosed limit (beyond P0): case c: tail (inputs at +-30 sigma): both fail\n"
        "Support shapes unverified: SPEC.md declares no support range\n")
    assert verdict.beyond_lines(None) == "" and verdict.beyond_lines({"limits": []}) == ""
