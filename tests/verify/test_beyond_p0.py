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


def _judged(tmp_path, declared: bool, baseline_tail_meets: bool):
    """beyond_p0.judge on one delivered result whose tail misses the gate (a pure call on probe results)."""
    from types import SimpleNamespace
    asked = []

    def baseline(case, shapes):
        asked.append(case.id)
        return {"tail": {"meets_frozen_gate": baseline_tail_meets}, "shapes": []}

    note = {"tail_sigmas": 30.0, "tails_declared": declared, "cases": [], "limits": []}
    result = {"tail": {"meets_frozen_gate": False, "matched_ratio": 0.97, "max_abs_error": 3.1}, "shapes": []}
    problems = beyond_p0.judge(tmp_path, [(SimpleNamespace(id="c"), [], result)], baseline, note)
    return problems, note, asked


def test_tails_the_spec_does_not_declare_are_a_disclosed_limit_never_cheating(tmp_path):
    problems, note, asked = _judged(tmp_path, declared=False, baseline_tail_meets=True)
    assert problems == [] and asked == []          # the baseline is not even asked
    assert len(note["limits"]) == 1 and "declares no tails" in note["limits"][0]


def test_declared_tails_the_baseline_meets_are_cheating_and_shared_ones_a_limit(tmp_path):
    problems, _, asked = _judged(tmp_path, declared=True, baseline_tail_meets=True)
    assert [(p[0], p[1]) for p in problems] == [("P9.tail_inputs", "cheating")] and asked == ["c"]
    problems, note, _ = _judged(tmp_path, declared=True, baseline_tail_meets=False)
    assert problems == [] and len(note["limits"]) == 1


def test_a_probe_that_cannot_run_is_a_limit_only_when_the_baseline_s_cannot_either(tmp_path):
    """The delivered code's beyond-P0 probe died (e.g. its process ended on the tail inputs): when the
    baseline's dies too it is Stage 4's limit, disclosed; when the baseline's runs it fails closed."""
    from types import SimpleNamespace
    died = {"problem": "probe runner exited 70: no stderr"}
    for baseline_result, want in ((died, []), ({"tail": {"meets_frozen_gate": True}, "shapes": []},
                                               [("P9.tail_inputs", "runtime_failure")])):
        note = {"tail_sigmas": 30.0, "tails_declared": True, "cases": [], "limits": []}
        problems = beyond_p0.judge(tmp_path, [(SimpleNamespace(id="c"), [], dict(died))],
                                   lambda case, shapes, r=baseline_result: dict(r), note)
        assert [(p[0], p[1]) for p in problems] == want
        assert len(note["limits"]) == (0 if want else 1) and note["cases"][0]["problem"] == died["problem"]
