"""Values round-trip (#27 Deliver 5): every id a step prints is accepted as printed by every step that takes
it, in each form some step prints it (a name, a path relative to the operator folder, an absolute path, a
collection id). The delivered small softmax of the cheat pipeline plus one quick screen; each consumer runs
on its own copy, so one consumer's writes never feed another's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cheat_pipeline as pipeline
from conftest import call_script as run_script   # in process: the same CLI code, many calls


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> tuple[Path, dict]:
    op = pipeline.small_softmax(tmp_path_factory.mktemp("roundtrip"))
    pipeline.deliver(op, {})
    out = {"correctness": pipeline.run(op, "check_correctness.py", "--op-dir", op),
           "formal": pipeline.run(op, "collect_perf.py", "formal", "--op-dir", op, "--paired-with",
                                  "docs/perf/versions/v000"),
           "quick": pipeline.run(op, "collect_perf.py", "quick", "--op-dir", op),
           "record": json.loads((op / "docs/perf/candidates.json").read_text())["candidates"][0]}
    return op, out


@pytest.fixture
def op(printed, tmp_path) -> Path:
    target = tmp_path / "softmax"
    shutil.copytree(printed[0], target, symlinks=True)
    return target


def forms(op: Path, printed: dict) -> dict[str, list[str]]:
    """Every form a step prints, per kind of id (re-rooted into this copy)."""
    src = printed[0]
    out = printed[1]
    here = lambda text: text.replace(str(src), str(op))   # noqa: E731
    rnd = Path(here(out["formal"]["round"]))
    quick = Path(here(out["quick"]["path"]))
    run = out["correctness"]
    rec = out["record"]
    return {"round": [rnd.name, str(rnd), rnd.relative_to(op).as_posix(), out["formal"]["collection_id"]],
            "base": [rec["round"], rec["formal_collection_id"], str(op / "docs/perf" / rec["round"])],
            "quick": [out["quick"]["collection_id"], quick.parent.name, str(quick.parent), str(quick)],
            "run": [run["run_id"], run["record"], str(op / run["record"])],
            "version": [rec["version_id"], rec["saved_copy"], str(op / rec["saved_copy"])]}


def ok(proc, what: str) -> None:
    assert proc.returncode in (0, 1), f"{what}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"


def test_every_printed_round_and_collection_id_is_taken_by_every_consumer(printed, op):
    f = forms(op, printed)
    for rnd in f["round"]:
        for base in f["base"]:
            ok(run_script("compare_perf.py", "formal", "--op-dir", op, "--baseline", base, "--candidate", rnd,
                          "--json"), f"compare_perf formal --baseline {base} --candidate {rnd}")
        ok(run_script("terminal_evidence.py", "build", "--op-dir", op, "--round", rnd, "--output",
                      "docs/perf/bottleneck/terminal_evidence_x.json", "--json"), f"terminal_evidence --round {rnd}")
        ok(run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", rnd, "--json"),
           f"select_best confirm --final-round {rnd}")


def test_every_printed_quick_id_is_taken_by_the_quick_compare_and_the_ledger(printed, op):
    f = forms(op, printed)
    for quick in f["quick"]:
        for base in f["base"]:
            ok(run_script("compare_perf.py", "quick", "--op-dir", op, "--baseline", base, "--quick", quick, "--json"),
               f"compare_perf quick --baseline {base} --quick {quick}")


def test_every_printed_run_round_and_quick_id_is_taken_by_the_ledger(printed, op):
    f = forms(op, printed)
    item = pipeline.KB_ITEMS[0]
    for run in f["run"]:
        for rnd, base in zip(f["round"], f["base"] * 2):
            for quick in f["quick"]:
                ok(run_script("ledger.py", "update", "--op-dir", op, "--item", item, "--note", "round trip",
                              "--correctness", run, "--formal", rnd, base, "--quick", quick, "--json"),
                   f"ledger update --correctness {run} --formal {rnd} {base} --quick {quick}")


def test_every_printed_version_is_taken_by_restore_and_the_paired_round(printed, op):
    f = forms(op, printed)
    for version in f["version"]:
        ok(run_script("select_best.py", "restore", "--op-dir", op, "--version", version, "--json"),
           f"select_best restore --version {version}")
    for version in f["version"]:
        ok(run_script("collect_perf.py", "formal", "--op-dir", op, "--paired-with", version, "--json"),
           f"collect_perf formal --paired-with {version}")
