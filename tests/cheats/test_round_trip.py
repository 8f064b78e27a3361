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


def resolved(calls: dict[str, object], pick, expected=None) -> None:
    """Every form of an id gives the same exit code (0 or 1) and resolves to the same thing: ``pick`` of the
    JSON it prints (the canonical id, sha or evidence it recorded), equal to ``expected`` when given."""
    got = {}
    for what, proc in calls.items():
        assert proc.returncode in (0, 1), f"{what}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
        got[what] = (proc.returncode, pick(json.loads(proc.stdout)))
    assert len(set(map(json.dumps, got.values()))) == 1, got
    if expected is not None:
        assert next(iter(got.values()))[1] == expected, got


def _ids(obj, *keys):
    return [obj.get(k) for k in keys]


def test_every_printed_round_and_collection_id_is_taken_by_every_consumer(printed, op):
    f = forms(op, printed)
    cand, base_id = printed[1]["formal"]["collection_id"], printed[1]["record"]["formal_collection_id"]
    compares = {f"--baseline {base} --candidate {rnd}": run_script(
        "compare_perf.py", "formal", "--op-dir", op, "--baseline", base, "--candidate", rnd, "--json")
        for rnd in f["round"] for base in f["base"]}
    resolved(compares, lambda o: _ids(o, "baseline_collection_id", "final_collection_id"), [base_id, cand])
    builds = {rnd: run_script("terminal_evidence.py", "build", "--op-dir", op, "--round", rnd, "--output",
                              "docs/perf/bottleneck/terminal_evidence_x.json", "--json") for rnd in f["round"]}
    resolved(builds, lambda o: o["content"]["round"]["collection_id"], cand)
    confirms = {rnd: run_script("select_best.py", "confirm", "--op-dir", op, "--final-round", rnd, "--json")
                for rnd in f["round"]}
    resolved(confirms, lambda o: o["final_collection_id"], cand)


def test_every_printed_quick_id_is_taken_by_the_quick_compare_and_the_ledger(printed, op):
    f = forms(op, printed)
    quick_id, base_id = printed[1]["quick"]["collection_id"], printed[1]["record"]["formal_collection_id"]
    calls = {f"--baseline {base} --quick {quick}": run_script(
        "compare_perf.py", "quick", "--op-dir", op, "--baseline", base, "--quick", quick, "--json")
        for quick in f["quick"] for base in f["base"]}
    resolved(calls, lambda o: _ids(o, "baseline_collection_id", "quick_collection_id"), [base_id, quick_id])


def _identity(op: Path, ref: str) -> str:
    """The collection or run id a recorded reference names, read from the files (not the product's resolver)."""
    path = Path(ref) if Path(ref).is_absolute() else op / ref
    for candidate in (path, op / "docs/perf" / ref, op / "docs/perf/quick" / ref):
        if candidate.is_dir():
            for name in ("collection.json", "quick_performance.json"):
                if (candidate / name).is_file():
                    return json.loads((candidate / name).read_text())["collection_id"]
        if candidate.is_file():
            data = json.loads(candidate.read_text())
            return data.get("collection_id") or data["run_id"]
    return ref      # an id as such


def test_every_printed_run_round_and_quick_id_is_taken_by_the_ledger(printed, op, tmp_path):
    """Each form on its own copy; what the item records names the same run, rounds and screen."""
    f = forms(op, printed)
    item = pipeline.KB_ITEMS[0]
    canonical = {"run": f["run"][0], "round": f["round"][-1], "base": f["base"][1], "quick": f["quick"][0]}
    calls, copies = {}, {}
    for kind in ("run", "round", "base", "quick"):
        for form in f[kind]:
            ids = {**canonical, kind: form}
            here = tmp_path / f"{len(copies)}" / "softmax"
            shutil.copytree(op, here, symlinks=True)
            ids = {k: v.replace(str(op), str(here)) for k, v in ids.items()}
            what = f"{kind} {form}"
            copies[what] = here
            calls[what] = run_script("ledger.py", "update", "--op-dir", here, "--item", item, "--note", "round trip",
                                     "--correctness", ids["run"], "--formal", ids["round"], ids["base"],
                                     "--quick", ids["quick"], "--json")
    def evidence(what):   # the identities the item's evidence names (it accumulates: the delivery's ids too)
        return lambda led: {k: sorted({_identity(copies[what], r) for r in (v if isinstance(v, list) else [v])})
                            for k, v in next(i for i in led["items"] if i["item_id"] == item)["evidence"].items()
                            if k in ("correctness", "formal", "quick")}
    out = printed[1]
    expected = {"correctness": [out["correctness"]["run_id"]],
                "formal": sorted({out["formal"]["collection_id"], out["record"]["formal_collection_id"]}),
                "quick": [out["quick"]["collection_id"]]}
    for what, proc in calls.items():
        resolved({what: proc}, evidence(what), expected)


def test_every_printed_version_is_taken_by_restore_and_the_paired_round(printed, op):
    f = forms(op, printed)
    rec = printed[1]["record"]
    restores = {v: run_script("select_best.py", "restore", "--op-dir", op, "--version", v, "--json")
                for v in f["version"]}
    resolved(restores, lambda o: _ids(o, "version_id", "executable_sha256"), [rec["version_id"], rec["executable_sha256"]])
    rounds = {v: run_script("collect_perf.py", "formal", "--op-dir", op, "--paired-with", v, "--json")
              for v in f["version"]}
    resolved(rounds, lambda o: json.loads((op / o["round"] / "collection.json").read_text())["paired"]
             ["baseline_executable_sha256"], rec["executable_sha256"])
