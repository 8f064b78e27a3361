"""stage5_check against an adversarial corpus: the clean demo deliverable, one violation at a time.

Each mutation is something an agent could do by accident (or on purpose) to make a speed-up look
better or a loop look closed. The verifier must FAIL with the documented category (docs/stage5-check.md)
and must never depend on numbers written by the agent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_script
from perftune.measure import evidence
from perftune.verify import checks


TARGET = ["r64_c4096_fp32", "r512_c1024_fp32", "r64_c4096_fp16", "r1024_c256_fp16"]


@pytest.fixture
def op(demo_delivery, tmp_path) -> Path:
    clean, _ = demo_delivery
    target = tmp_path / "softmax"
    shutil.copytree(clean, target, symlinks=True)
    return target


def check(op: Path, *target: str, mode: str = "all_p0_no_questions") -> tuple[int, dict]:
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", *(target or TARGET),
                      "--selection-mode", mode, "--no-remeasure", "--json")  # re-measurement: test_stage5_cheats
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def edit_json(path: Path, change) -> None:
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True))


def perf(op: Path) -> dict:
    return json.loads((op / "performance.json").read_text())


def final_round(op: Path) -> Path:
    return evidence.find_round(op, perf(op)["final_collection_id"])


def baseline_round(op: Path) -> Path:
    return evidence.find_round(op, perf(op)["baseline_collection_id"])


def reseal(round_dir: Path) -> None:
    """What a careful forger would do: recompute the seal after editing raw files."""
    edit_json(round_dir / "collection.json", lambda c: c.update(evidence_seal=evidence.evidence_seal(round_dir)))


def samples_csv(round_dir: Path, case_id: str, repeat: int, arm: str = "candidate") -> Path:
    base = round_dir / evidence.case_dir_name(case_id) / f"repeat_{repeat:03d}"
    return base / arm if (base / arm).is_dir() else base


def assert_fails(op: Path, category: str, check_id: str, *, code: int = 1, target=None) -> dict:
    """A FAIL naming the catalogued ``check_id`` with ``category`` (never a message substring)."""
    rc, verdict = check(op, *(target or TARGET))
    assert verdict["verdict"] == "FAIL", verdict
    assert category in verdict["categories"], verdict["failures"]
    found = [(f["check"], f["category"]) for f in verdict["failures"]]
    assert (check_id, category) in found, (check_id, category, found)
    assert all(f["check"] in checks.BY_ID and f["expected"] and f["actual"] for f in verdict["failures"])  # issue 29
    assert rc == code, (rc, verdict["primary_failure_category"])
    return verdict


def test_clean_deliverable_passes(op):
    rc, verdict = check(op)
    assert (rc, verdict["verdict"], verdict["failures"]) == (0, "PASS", [])
    assert verdict["primary_failure_category"] is None
    assert {g["id"] for g in verdict["gates"]} >= {f"P{i}" for i in range(1, 9)}


def test_one_aggregate_copied_into_every_case(op):
    def flatten(p):
        for row in p["per_case"]:
            row["final_us"] = p["per_case"][0]["final_us"]
    edit_json(op / "performance.json", flatten)
    assert_fails(op, "performance_evidence_invalid", "P4.recomputation")


def test_raw_samples_of_one_case_copied_into_another_even_if_resealed(op):
    rnd = final_round(op)
    source, target = TARGET[0], TARGET[1]
    for repeat in range(1, 11):
        src, dst = samples_csv(rnd, source, repeat), samples_csv(rnd, target, repeat)
        value = src.joinpath("samples.csv").read_text().splitlines()[1].split(",")[3]
        lines = dst.joinpath("samples.csv").read_text().splitlines()
        cells = lines[1].split(",")
        cells[3] = value
        dst.joinpath("samples.csv").write_text("\n".join([lines[0], ",".join(cells)]) + "\n")
    reseal(rnd)
    assert_fails(op, "performance_evidence_invalid", "P3.reused_samples")


def test_baseline_and_final_are_the_same_round(op):
    edit_json(op / "performance.json", lambda p: p.update(final_collection_id=p["baseline_collection_id"]))
    assert_fails(op, "performance_evidence_invalid", "P3.distinct_rounds")


def test_quick_result_presented_as_the_final_round(op):
    quick = json.loads(next((op / "docs/perf/quick").glob("quick_*/quick_performance.json")).read_text())
    edit_json(op / "performance.json", lambda p: p.update(final_collection_id=quick["collection_id"]))
    assert_fails(op, "performance_evidence_invalid", "P3.inputs")


def test_final_round_recorded_for_other_code(op):
    edit_json(final_round(op) / "collection.json", lambda c: c.update(executable_sha256="0" * 64))
    assert_fails(op, "performance_evidence_invalid", "P3.delivered_code")


def test_test_file_edited_after_the_final_round(op):
    test = op / "test_softmax.py"
    test.write_text(test.read_text() + "\n# tweak after the final round\n")
    verdict = assert_fails(op, "performance_evidence_invalid", "P3.delivered_code")
    assert "performance_item_coverage_invalid" in verdict["categories"]


def test_repeat_spliced_from_another_round(op):
    case = TARGET[0]
    src = samples_csv(baseline_round(op), case, 3, arm="baseline") / "samples.csv"
    shutil.copyfile(src, samples_csv(final_round(op), case, 3) / "samples.csv")
    assert_fails(op, "performance_evidence_invalid", "P3.inputs")


@pytest.mark.parametrize("field, value", [("warmup", 0), ("seed", 41), ("repeats", 9),
                                          ("target_op_name", "softmax_wrapper")])
def test_protocol_changed_between_baseline_and_final(op, field, value):
    edit_json(final_round(op) / "collection.json", lambda c: c.update({field: value}))
    rc, verdict = check(op)
    assert verdict["verdict"] == "FAIL" and rc in (1, 2)
    assert "performance_evidence_invalid" in verdict["categories"], verdict["failures"]


def test_case_removed_from_the_manifest(op):
    (op / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    edit_json(op / "PERFORMANCE_CASES.json", lambda m: (m["cases"].pop(), m["optimization_target"]["case_ids"].pop()))
    assert_fails(op, "stage5_contract_blocked", "P2.spec_coverage", code=2, target=TARGET[:3])


def test_manifest_edited_after_freezing(op):
    (op / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    edit_json(op / "PERFORMANCE_CASES.json", lambda m: m["protocol"].update(repeats=20))
    assert_fails(op, "stage5_contract_blocked", "P2.manifest_hash", code=2)


def test_target_case_id_not_in_the_manifest(op):
    edit_json(op / "PERFORMANCE_CASES.json", lambda m: m["optimization_target"]["case_ids"].append("nope"))
    assert_fails(op, "stage5_contract_blocked", "P2.inputs", code=2)


def test_dispatch_target_differs_from_the_frozen_target(op):
    assert_fails(op, "dispatch_invalid", "P2.dispatch_target", target=TARGET[:2])


@pytest.mark.parametrize("field, value", [("speedup", 9.99), ("speedup_ci", [5.0, 9.0]), ("verdict", "faster")])
def test_flattering_derived_number_in_performance_json(op, field, value):
    def flatter(p):
        p["per_case"][1][field] = value if p["per_case"][1][field] != value else "equivalent"
    edit_json(op / "performance.json", flatter)
    assert_fails(op, "performance_evidence_invalid", "P4.recomputation")


def test_only_derived_numbers_made_flattering_everywhere(op):
    """Raw samples untouched; every agent-written number improved: the verdict must not move."""
    def flatter(p):
        p["suite"]["mean_case_speedup"] *= 3
        for row in p["per_case"]:
            row.update(final_us=row["final_us"] / 3, speedup=row["speedup"] * 3, verdict="faster")
    edit_json(op / "performance.json", flatter)
    rnd = final_round(op)
    for case in TARGET:
        edit_json(rnd / evidence.case_dir_name(case) / "measurement.json",
                  lambda m: m.update(aggregate_us=m["aggregate_us"] / 3))
    # performance.json is recomputed (P4) and measurement.json lies inside the sealed round (P3)
    assert_fails(op, "performance_evidence_invalid", "P3.inputs")


def test_golden_collected_after_the_baseline(op):
    edit_json(op / "GOLDEN_PERF_REPORT.json", lambda g: g.update(created_at="2999-01-01T00:00:00Z"))
    assert_fails(op, "performance_evidence_invalid", "P6.golden_contract")


def test_golden_collected_for_another_manifest(op):
    edit_json(op / "GOLDEN_PERF_REPORT.json", lambda g: g["case_manifest_source"].update(sha256="1" * 64))
    assert_fails(op, "performance_evidence_invalid", "P6.golden_contract")


def _ledger(op: Path) -> Path:
    return op / "docs/perf/ledger.json"


def test_ledger_item_left_pending(op):
    def reopen(ledger):
        item = next(i for i in ledger["items"] if i["item_id"] == "general-13")
        item["status"] = "pending"
    edit_json(_ledger(op), reopen)
    assert_fails(op, "performance_item_coverage_invalid", "P7.ledger")


def test_item_rejected_without_reason(op):
    def strip(ledger):
        next(i for i in ledger["items"] if i["status"] == "rejected").pop("reason_code")
    edit_json(_ledger(op), strip)
    assert_fails(op, "performance_item_coverage_invalid", "P7.ledger")


def test_derived_item_created_before_the_presets_closed(op):
    def backdate(ledger):
        item = next(i for i in ledger["items"] if i["source_kind"] == "bottleneck_derived")
        item["history"][0]["revision"] = 2
    edit_json(_ledger(op), backdate)
    assert_fails(op, "performance_item_coverage_invalid", "P7.ledger")


def test_delivered_version_is_not_the_selected_one(op):
    candidates = json.loads((op / "docs/perf/candidates.json").read_text())["candidates"]
    chosen = json.loads((op / "docs/perf/selection.json").read_text())["chosen"]
    other = next(c for c in candidates if c["version_id"] != chosen)
    shutil.copyfile(op / other["saved_copy"] / "test_softmax.py", op / "test_softmax.py")
    assert_fails(op, "performance_item_coverage_invalid", "P7.selection")


def test_p0_case_without_terminal_evidence(op):
    edit_json(op / "docs/perf/terminal_evidence.json", lambda t: t["cases"].pop())
    assert_fails(op, "performance_evidence_invalid", "P8.terminal_evidence")


def test_terminal_evidence_insufficient(op):
    edit_json(op / "docs/perf/terminal_evidence.json",
              lambda t: t["cases"][0]["roofline_terminal"].update(status="insufficient_evidence"))
    assert_fails(op, "performance_evidence_invalid", "P8.terminal_evidence")


def test_terminal_record_built_with_another_work_model_fails_p8(op):
    """A borrowed model (exp counted per row, a third tensor) with self-consistent counts and hash."""
    from perftune.contract import work_model
    manifest = json.loads((op / "PERFORMANCE_CASES.json").read_text())
    other = json.loads(json.dumps(manifest["work_model"]))
    for row in other["operations"]:
        if row["class"] == "transcendental":
            row["per"] = "rows"
    other["tensors"].append({"tensor": "w", "direction": "read", "elements": "cols", "dtype": None})

    def borrow(t):
        t["work_model"] = {"source": "borrowed", "sha256": work_model.model_sha256(other), "model": other}
        for entry in t["cases"]:
            case = next(c for c in manifest["cases"] if c["id"] == entry["case"])
            work = work_model.case_work(other, case["id"], case["shape"], case["dtype"])
            entry["roofline_terminal"].update(transcendental_ops=work["transcendental_ops"],
                                              necessary_bytes=work["bytes"])
    edit_json(op / "docs/perf/terminal_evidence.json", borrow)
    assert_fails(op, "performance_evidence_invalid", "P8.work_model")


def test_attained_fraction_above_the_roof_fails_p8_naming_the_numbers(op):
    edit_json(op / "docs/perf/terminal_evidence.json",
              lambda t: t["cases"][0]["roofline_terminal"].update(attained_fraction=50.0))
    # the frozen work model is used: the model is not the cause, the code is (issue 28 item 9); 50x is
    # beyond any re-probed roof (the check re-probes the cpu roof before it says cheating)
    verdict = assert_fails(op, "cheating", "P8.below_floor")
    assert [f["check"] for f in verdict["failures"] if f["gate"] == "P8"] == ["P8.below_floor"]


def test_a_roof_probed_under_load_is_re_probed_before_a_case_is_called_cheating(op):
    """The platform step measured the cpu roof at a bad moment (peaks 1000x too low, as if under load):
    the recorded attained fraction is far above 1, but the roof re-probed at check time explains it."""
    from perftune.verify import terminal_model
    from perftune.contract import manifest
    man = manifest.load_manifest(op / "PERFORMANCE_CASES.json")
    record = json.loads((op / "docs/perf/terminal_evidence.json").read_text())
    platform = op / record["platform"]["file"]["path"]
    slow = json.loads(platform.read_text())
    for peak in slow["peaks"].values():
        peak["value"] /= 1000
    platform.write_text(json.dumps(slow))
    for entry in record["cases"]:
        roof = entry["roofline_terminal"]
        roof.update(attained_fraction=roof["attained_fraction"] * 1000, roof_us=roof["roof_us"] * 1000)
    assert {c for c, *_ in terminal_model.floor_problems(man, record)} == {"cheating"}   # the recorded roof alone
    assert terminal_model.confirmed_floor_problems(op, man, record) == []


@pytest.mark.parametrize("name, how", [("perf_report.md", "empty"), ("performance.log", "delete"),
                                       ("PERFORMANCE_REPORT.md", "delete")])
def test_missing_or_empty_p1_file(op, name, how):
    path = op / name
    path.write_text("") if how == "empty" else path.unlink()
    verdict = assert_fails(op, "missing_file", "P1.files")
    assert [(f["evidence"], f["actual"]) for f in verdict["failures"] if f["check"] == "P1.files"] == [
        ([name], "empty" if how == "empty" else "missing")]


def test_report_cites_a_path_outside_the_operator(op):
    report = op / "PERFORMANCE_REPORT.md"
    report.write_text(report.read_text() + "\nSee `../../outside/round_009/collection.json`.\n")
    assert_fails(op, "performance_evidence_invalid", "P1.citations")


def test_symlink_inside_evidence(op):
    rnd = final_round(op)
    target = samples_csv(rnd, TARGET[0], 2) / "samples.csv"
    real = op.parent / "elsewhere.csv"
    shutil.copyfile(target, real)
    target.unlink()
    target.symlink_to(real)
    assert_fails(op, "performance_evidence_invalid", "P3.inputs")


@pytest.mark.parametrize("name", ["performance.log", "perf_report.md"])
def test_human_renderings_edited_by_hand(op, name):
    """performance.log and perf_report.md must be the exact rendering of the recomputed compare."""
    (op / name).write_text((op / name).read_text().replace("r64_c4096_fp32", "r64_c4096_fp32 (100x faster)", 1))
    assert_fails(op, "performance_evidence_invalid", "P4.rendering")


def test_spec_that_is_not_utf8_blocks_the_contract_without_a_traceback(op):
    (op / "FROZEN_INPUTS.json").unlink()  # the check behind the frozen-input record (#16.7)
    (op / "SPEC.md").write_bytes(b"\xff\xfe not utf-8 \x80")
    assert_fails(op, "stage5_contract_blocked", "P2.spec_coverage", code=2)
