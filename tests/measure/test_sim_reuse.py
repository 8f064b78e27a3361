"""measure/sim_reuse.py: a deterministic question is simulated once; a recorded reuse is accepted only
when its files match an original launch of the same code and case (the verifier's P3 launch check)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from perftune.measure import evidence, sim_reuse
from perftune.measure.backends import Backend, RepeatResult, pypto_sim

CASE = "c1"
HEADER = {"backend": "pypto-sim", "performance_cases": {"sha256": "m" * 64}, "environment": {"pypto": "0.2.0"},
          "warmup": 0, "target_op_name": "op", "collection_id": "compare_2", "repeats": 2,
          "expected_cases": [CASE], "status": "complete"}


def launch(folder: Path, output: str) -> None:
    folder.mkdir(parents=True)
    (folder / pypto_sim.LAUNCH_JSON).write_text(json.dumps({"case_id": CASE, "simulator_output": output}))
    (folder / "_simulate.stat.report.txt").write_text(f"Total Cycles: 100 ({output})\n")


def original_round(op: Path, code: str = "a") -> list[Path]:
    round_dir = op / "docs/perf/round_001"
    folders = [round_dir / evidence.case_dir_name(CASE) / f"repeat_00{i}" for i in (1, 2)]
    for i, folder in enumerate(folders):
        launch(folder, f"output_{i}")
    (round_dir / "collection.json").write_text(json.dumps({**HEADER, "collection_id": "compare_1",
                                                           "executable_sha256": code}))
    return folders


def reused_round(op: Path, sources: list[Path], code: str = "a") -> Path:
    case_dir = op / "docs/perf/round_002" / evidence.case_dir_name(CASE)
    dests = [case_dir / f"repeat_00{i}" for i in (1, 2)]
    rows = sim_reuse.copy(op, sources, dests, collection_id="compare_1", case_id=CASE, code_sha256=code, arm="")
    assert [(r["arm"], r["repeat"], r["source_collection_id"]) for r in rows] == [("measured", 1, "compare_1"),
                                                                                ("measured", 2, "compare_1")]
    return case_dir


def check(op: Path, case_dir: Path, code: str = "a") -> list[str]:
    return pypto_sim.launch_problems(case_dir, CASE, 2, {"": code}, {}, op)


def test_the_first_complete_original_answers_and_a_matching_copy_is_accepted(tmp_path):
    sources = original_round(tmp_path)
    assert sim_reuse.find(tmp_path, HEADER, CASE, "a", 2) == (sources, "compare_1")
    assert sim_reuse.find(tmp_path, HEADER, CASE, "b", 2) is None                    # other code
    assert sim_reuse.find(tmp_path, {**HEADER, "environment": {"pypto": "0.3"}}, CASE, "a", 2) is None
    case_dir = reused_round(tmp_path, sources)
    assert check(tmp_path, case_dir) == []
    # without the record the same copy is two archived launches seen twice: refused as before
    seen: dict[str, str] = {}
    assert pypto_sim.launch_problems(sources[0].parent, CASE, 2, {"": "a"}, seen, tmp_path) == []
    for folder in case_dir.iterdir():
        (folder / sim_reuse.REUSED_JSON).unlink()
    assert len(pypto_sim.launch_problems(case_dir, CASE, 2, {"": "a"}, seen, tmp_path)) == 2


def test_a_reuse_whose_hash_or_code_does_not_match_is_refused(tmp_path):
    sources = original_round(tmp_path)
    case_dir = reused_round(tmp_path, sources)
    copied = case_dir / "repeat_001" / "_simulate.stat.report.txt"
    copied.write_text("Total Cycles: 50\n")                                            # an edited copy
    [problem] = check(tmp_path, case_dir)
    assert "repeat_001" in problem and "do not match the sha256" in problem
    assert any("not this arm's" in p for p in check(tmp_path, case_dir, code="b"))   # another arm's code
    record = case_dir / "repeat_002" / sim_reuse.REUSED_JSON
    obj = json.loads(record.read_text())
    record.write_text(json.dumps({**obj, "source": "docs/perf/round_001/elsewhere"}))
    assert any("missing or not an original launch" in p for p in check(tmp_path, case_dir))


def test_a_copy_is_never_a_source_and_the_source_round_must_have_run_that_code(tmp_path):
    sources = original_round(tmp_path, code="z")          # round_001 ran other code
    case_dir = reused_round(tmp_path, sources, code="a")   # a record claiming it ran "a"
    assert any("not a launch of this code and case" in p for p in check(tmp_path, case_dir))
    (tmp_path / "docs/perf/round_002/collection.json").write_text(json.dumps({**HEADER, "executable_sha256": "a"}))
    assert sim_reuse.find(tmp_path, HEADER, CASE, "a", 2) is None   # round_002's copies answer nothing


class PlantedSimulator(Backend):
    """Stands in for the simulator process only: each run_repeat is one 'launch' with a fresh output name."""
    name = "pypto-sim"

    def __init__(self):
        self.launches: list[Path] = []

    def check_environment(self):
        return None

    def run_repeat(self, spec, case, repeat_dir):
        self.launches.append(repeat_dir)
        launch(repeat_dir, f"output_{len(self.launches)}")
        return self.read_repeat(repeat_dir, spec.op_name)

    def read_repeat(self, repeat_dir, op_name):
        text = (repeat_dir / "_simulate.stat.report.txt").read_text()
        return RepeatResult(float(text.split()[2]), 1, None, ())

    def quick_case(self, spec, case, scratch_dir):
        raise AssertionError("not used")

    def list_op_names(self, spec, case, scratch_dir):
        raise AssertionError("not used")


def test_byte_identical_arms_of_a_paired_round_are_simulated_once(tmp_path):
    round_dir = tmp_path / "docs/perf/round_001"
    round_dir.mkdir(parents=True)
    header = {**HEADER, "collection_id": "compare_1", "executable_sha256": "a", "status": "in_progress",
              "paired": {"baseline_executable_sha256": "a"}}
    (round_dir / "collection.json").write_text(json.dumps(header))
    spec = SimpleNamespace(op_dir=tmp_path, op_name="op")
    case_dir = round_dir / evidence.case_dir_name(CASE)
    dests = {arm: [case_dir / f"repeat_00{i}" / arm for i in (1, 2)] for arm in ("baseline", "candidate")}
    backend, rows, case = PlantedSimulator(), [], SimpleNamespace(id=CASE)
    base = sim_reuse.measure_arm(backend, spec, case, dests["baseline"], header, "a", "baseline", rows)
    cand = sim_reuse.measure_arm(backend, spec, case, dests["candidate"], header, "a", "candidate", rows,
                                 same_round=(dests["baseline"], dests["baseline"]))
    assert backend.launches == dests["baseline"] and [r.duration_us for r in cand] == [r.duration_us for r in base]
    assert [(r["arm"], r["repeat"], r["source_collection_id"]) for r in rows] == [("candidate", 1, "compare_1"),
                                                                                ("candidate", 2, "compare_1")]
    assert pypto_sim.launch_problems(case_dir, CASE, 2, {"candidate": "a", "baseline": "a"}, {}, tmp_path) == []
    assert pypto_sim.launch_problems(case_dir, CASE, 2, {"candidate": "b", "baseline": "a"}, {}, tmp_path)


def test_determinism_is_shown_once_per_case_then_a_new_question_is_one_launch(tmp_path):
    original_round(tmp_path)                              # round_001 simulated both repeats of c1
    header = {**HEADER, "collection_id": "compare_2", "executable_sha256": "b", "status": "in_progress"}
    case_dir = tmp_path / "docs/perf/round_002" / evidence.case_dir_name(CASE)
    (case_dir.parent / "collection.json").parent.mkdir(parents=True)
    (case_dir.parent / "collection.json").write_text(json.dumps(header))
    dests = [case_dir / f"repeat_00{i}" for i in (1, 2)]
    backend, rows = PlantedSimulator(), []
    spec = SimpleNamespace(op_dir=tmp_path, op_name="op")
    results = sim_reuse.measure_arm(backend, spec, SimpleNamespace(id=CASE), dests, header, "b", "", rows, cited=dests)
    assert backend.launches == dests[:1] and results[0].duration_us == results[1].duration_us
    assert [(r["repeat"], r["source"]) for r in rows] == [(2, dests[0].relative_to(tmp_path).as_posix())]
    assert pypto_sim.launch_problems(case_dir, CASE, 2, {"": "b"}, {}, tmp_path) == []
    # once complete, the question is answered by round_002's one launch, cited for both repeats
    (case_dir.parent / "collection.json").write_text(json.dumps({**header, "status": "complete"}))
    assert sim_reuse.find(tmp_path, HEADER, CASE, "b", 2) == ([dests[0], dests[0]], "compare_2")
    # a case no round showed deterministic yet is simulated every repeat
    assert not sim_reuse.determinism_shown(tmp_path, {**HEADER, "expected_cases": ["c2"]}, "c2", 2)
    assert not sim_reuse.determinism_shown(tmp_path, HEADER, CASE, 1)


def test_a_byte_identical_twin_cites_the_one_launch_its_baseline_arm_made(tmp_path):
    original_round(tmp_path)                              # determinism of c1 shown by round_001
    round_dir = tmp_path / "docs/perf/round_002"
    round_dir.mkdir(parents=True)
    header = {**HEADER, "collection_id": "compare_2", "executable_sha256": "c", "status": "in_progress",
              "paired": {"baseline_executable_sha256": "c"}}
    (round_dir / "collection.json").write_text(json.dumps(header))
    case_dir = round_dir / evidence.case_dir_name(CASE)
    dests = {arm: [case_dir / f"repeat_00{i}" / arm for i in (1, 2)] for arm in ("baseline", "candidate")}
    backend, rows, case = PlantedSimulator(), [], SimpleNamespace(id=CASE)
    spec = SimpleNamespace(op_dir=tmp_path, op_name="op")
    sim_reuse.measure_arm(backend, spec, case, dests["baseline"], header, "c", "baseline", rows, cited=dests["baseline"])
    sim_reuse.measure_arm(backend, spec, case, dests["candidate"], header, "c", "candidate", rows,
                          same_round=(dests["baseline"], dests["baseline"]), cited=dests["candidate"])
    assert backend.launches == dests["baseline"][:1]
    first = dests["baseline"][0].relative_to(tmp_path).as_posix()
    assert [(r["arm"], r["repeat"], r["source"]) for r in rows] == [
        ("baseline", 2, first), ("candidate", 1, first), ("candidate", 2, first)]
    assert pypto_sim.launch_problems(case_dir, CASE, 2, {"candidate": "c", "baseline": "c"}, {}, tmp_path) == []


def test_a_question_answered_by_a_copy_cites_the_collection_that_launched_the_original(tmp_path):
    """Rounds are searched before quick screens: a round's copy of a quick screen's launch answers
    with the quick screen's collection id (the one the verifier finds owning the source)."""
    quick = tmp_path / "docs/perf/quick/quick_001"
    sources = [quick / evidence.case_dir_name(CASE) / f"repeat_00{i}" for i in (1, 2)]
    for i, folder in enumerate(sources):
        launch(folder, f"output_{i}")
    (quick / "quick_performance.json").write_text(json.dumps({**HEADER, "collection_id": "quick_1",
                                                              "executable_sha256": "a"}))
    case_dir = tmp_path / "docs/perf/round_001" / evidence.case_dir_name(CASE)
    sim_reuse.copy(tmp_path, sources, [case_dir / f"repeat_00{i}" for i in (1, 2)], collection_id="quick_1",
                   case_id=CASE, code_sha256="a", arm="")
    (case_dir.parent / "collection.json").write_text(json.dumps({**HEADER, "collection_id": "compare_1",
                                                                 "executable_sha256": "a"}))
    assert sim_reuse.find(tmp_path, HEADER, CASE, "a", 2) == (sources, "quick_1")
