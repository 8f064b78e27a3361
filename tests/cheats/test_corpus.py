"""The cheat corpus (issue 28 item 13): every ``tests/cheats/*.yaml`` cheat FAILS with its check and
category, its legal twin PASSES, each re-run through the real pipeline (pipeline.py) on the small
operator the tests ship, so the evidence is self-consistent. Never a message substring nor a gate alone:
the check id and the category. README.md: how to add one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import cheat_pipeline as pipeline

CORPUS = sorted(pipeline.HERE.glob("*.yaml"))
KEYS = {"id", "class", "what", "catch", "cheat", "twin"}
_VERDICTS: dict[str, tuple[int, dict]] = {}
_SMUGGLED: dict[str, str | None] = {}   # the same key -> the kernel the correctness run refused, put back
_OPS: dict[str, Path] = {}              # the same key -> the delivered operator folder


def load(path: Path) -> dict:
    entry = yaml.safe_load(path.read_text())
    assert set(entry) == KEYS and entry["id"] == path.stem, (path.name, sorted(entry))
    for arm in ("cheat", "twin"):
        unknown = set(entry[arm].get("plants") or {}) - set(pipeline.POINTS)
        assert not unknown, (path.name, arm, unknown)
    return entry


def _key(arm: dict, remeasure: bool) -> str:
    return json.dumps({**{k: arm.get(k) for k in ("plants", "experiment")}, "remeasure": remeasure}, sort_keys=True)


def verdict(arm: dict, folder: Path, *, remeasure: bool = True) -> tuple[int, dict]:
    """Deliver the small operator with the arm's plants (and experiment) and run stage5_check; arms
    with the same plants share one run (twins repeat). A cheat caught before P10 is checked without
    the re-measurement (P10 adds nothing to an earlier gate's finding); a twin always with it."""
    key = _key(arm, remeasure)
    if key not in _VERDICTS:
        op = _OPS[key] = pipeline.small_softmax(folder)
        _SMUGGLED[key] = pipeline.deliver(op, arm.get("plants") or {}, experiment=arm.get("experiment")).get("smuggled")
        _VERDICTS[key] = pipeline.check(op, remeasure=remeasure)
    return _VERDICTS[key]


def delivered(arm: dict, *, remeasure: bool = True) -> Path:
    """The operator folder the arm's run delivered (after :func:`verdict`)."""
    return _OPS[_key(arm, remeasure)]


def smuggled(arm: dict, *, remeasure: bool = True) -> str | None:
    return _SMUGGLED[_key(arm, remeasure)]


def test_every_corpus_entry_is_well_formed_and_names_its_kernel_files():
    assert len(CORPUS) >= 8
    for path in CORPUS:
        entry = load(path)
        for arm in ("cheat", "twin"):
            text = json.dumps(entry[arm])
            for name in [entry[arm].get("experiment")] + [a.get("kernel") for acts in
                                                           (entry[arm].get("plants") or {}).values() for a in acts]:
                assert name is None or (pipeline.HERE / "kernels" / f"{name}.py").is_file(), (path.name, name)
            assert text != json.dumps(entry["cheat" if arm == "twin" else "twin"]), path.name


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_cheat_fails_with_its_check_and_category(path, tmp_path):
    entry = load(path)
    want = entry["catch"]
    code, found = verdict(entry["cheat"], tmp_path, remeasure=want["check"].startswith("P10"))
    assert found["verdict"] == "FAIL", found["gates"]
    hits = [f for f in found["failures"] if f["check"] == want["check"] and f["category"] == want["category"]]
    assert hits, (want, [(f["check"], f["category"]) for f in found["failures"]])
    assert want["category"] in found["categories"] and code in (1, 2)
    # timed before judged (issue 35 item 12): no cheat kernel the correctness run refused and the agent put back
    assert smuggled(entry["cheat"], remeasure=want["check"].startswith("P10")) is None, "never timed by a round"


def test_the_lucky_final_figure_is_named_with_the_rules_figure_and_every_attempt(tmp_path):
    """issue 35 item 6 (lucky_final.yaml, the cheat's run reused): the delivered figure is the lucky round's own
    (median over median of its raw samples, computed here), the finding names it as actual, the rule's figure
    and all four attempts as expected."""
    import numpy as np
    from perftune.measure import evidence
    arm = load(pipeline.HERE / "lucky_final.yaml")["cheat"]
    code, found = verdict(arm, tmp_path, remeasure=False)
    op = delivered(arm, remeasure=False)
    names = pipeline.rounds(op)[1:]   # the ranking round, two unlucky final rounds, the lucky one
    case = evidence.load_round(op, names[-1]).cases[pipeline.CASE]
    lucky = float(np.median(case.baseline_samples_us) / np.median(case.samples_us))
    row = json.loads((op / "performance.json").read_text())["per_case"][0]
    assert len(names) == 4 and row["speedup"] == pytest.approx(lucky, rel=1e-9)
    hits = [f for f in found["failures"] if f["check"] == "P3.final_attempts" and pipeline.CASE in f["message"]]
    assert len(hits) == 1 and float(hits[0]["actual"]) == row["speedup"], found["failures"]
    assert all(name in hits[0]["expected"] for name in names) and "median attempt" in hits[0]["expected"]


def test_a_failure_the_baseline_shares_is_a_disclosed_limit_and_no_support_range_is_unverified(tmp_path):
    """Stage 4 itself delivered softmax without the max subtraction and a SPEC without a support range:
    the tail inputs fail for the delivered code and the baseline alike (Stage 4's limit, disclosed, no
    FAIL), and the support shapes are unverified with the reason."""
    op = pipeline.small_softmax(tmp_path)
    spec = op / "SPEC.md"
    spec.write_text(spec.read_text().split("## 6. Support range")[0])
    pipeline.deliver(op, {"before_stage4": [{"kernel": "dropped_stabilisation"}]})
    code, found = pipeline.check(op)
    assert (code, found["verdict"], found["failures"]) == (0, "PASS", []), found["failures"]
    note = found["beyond_p0"]
    assert note["support_shapes"]["status"] == "unverified"
    assert "no support range" in note["support_shapes"]["reason"]
    assert [limit.split(":")[0] for limit in note["limits"]] == [f"case {pipeline.CASE}"]
    assert "tail" in note["limits"][0] and note["cases"][0]["tail"]["meets_frozen_gate"] is False


def test_a_baseline_whose_probe_cannot_run_is_no_evidence_of_a_shared_limit(tmp_path):
    """issue 35 item 10: Stage 4's kernel ends its process on the tail inputs (kernels/stage4_exits_on_tails.py),
    the delivered code fails them: the baseline produced no figure, so the failure is neither a disclosed limit
    (nothing shows the baseline shares it) nor ``cheating`` (nor that it does not) -- the check fails closed,
    at the end and at step 1 alike. Stage 4's own correctness run keeps its P0 probe (the beyond-P0 step that
    ends the process runs again without it) and discloses the unrun step as Stage 4's limit; the delivered
    code is the variant the correctness run accepts (stabilised inside its probe process), timed by a round."""
    op = pipeline.small_softmax(tmp_path)
    state = pipeline.deliver(op, {"before_stage4": [{"kernel": "stage4_exits_on_tails"}]},
                             experiment="dropped_stabilisation_after_step1")
    assert state.get("smuggled") is None   # timed by a round, accepted as v001
    code, found = pipeline.check(op, remeasure=False)
    assert (code, found["verdict"]) == (1, "FAIL"), found["failures"]
    assert [(f["check"], f["category"], f["actual"]) for f in found["failures"] if f["check"] == "P9.tail_inputs"] \
        == [("P9.tail_inputs", "runtime_failure", "probe runner exited 70: no stderr")], found["failures"]
    assert found["beyond_p0"]["limits"] == [] and found["beyond_p0"]["cases"][0]["tail"]["meets_frozen_gate"] is False
    pipeline.plant_kernel(op, "dropped_stabilisation")   # the same failure at step 1: the run is refused by id
    early = pipeline.run(op, "check_correctness.py", "--op-dir", op, ok=(1,))["early"]
    assert early["baseline"] == "v000" and early["limits"] == [], early
    assert [(f["check"], f["category"]) for f in early["findings"]] == [("P9.tail_inputs", "runtime_failure")], early