"""The bad-input corpus (tests/bad_inputs/*.yaml) run through the real scripts (DESIGN §5, §10).

Every case starts from a real operator directory built once per session with the real CLIs
(``example``: a fresh copy of examples/softmax; ``full``: frozen with two P0 cases, repeats 3,
warmup 0, two formal cpu rounds, golden report, ledger, state, a correctness run, a formal compare
and a recorded baseline candidate), copies it, applies the case's ``setup`` edits, runs the script
and requires: the exit code (2, or 3 for the environment), exactly one stderr line
``error: ...`` naming the file and the field (the case's ``needles``), no traceback, and not one
file or folder added, removed or changed. The case format is documented in tests/bad_inputs/README.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLE, SCRIPTS, assert_one_line_error, run_script, tree_digest
from perftune.measure import evidence


CORPUS = Path(__file__).resolve().parents[1] / "bad_inputs"
CASE_FILES = sorted(CORPUS.glob("*.yaml"))
BIG_FILE = 64 * 1024 * 1024  # files above this are compared by size and mtime, never read
TWO_CASES = ("r64_c4096_fp32", "r64_c4096_fp16")
SCRIPT_NAMES = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "scripts").glob("*.py"))


def ok(script: str, *args) -> str:
    proc = run_script(script, *map(str, args))
    assert proc.returncode == 0, (script, args, proc.stderr)
    return proc.stdout


def copy_example(target: Path) -> Path:
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("__pycache__", "docs"))
    return target


def two_case_spec(op: Path) -> None:
    """Mark the two non-target P0 rows p0=no, so every round measures two cases only."""
    spec = op / "SPEC.md"
    text = spec.read_text(encoding="utf-8")
    for row in ("| r512_c1024_fp32 | [512,1024] | float32 | yes |", "| r1024_c256_fp16 | [1024,256] | fp16 | yes |"):
        assert row in text, row
        text = text.replace(row, row.replace("| yes |", "| no |"))
    spec.write_text(text, encoding="utf-8")


def build_frozen(target: Path) -> Path:
    """The example with two P0 cases frozen (cpu, repeats 3, warmup 0) through freeze_cases.py."""
    op = copy_example(target)
    two_case_spec(op)
    ok("freeze_cases.py", "freeze", "--op-dir", op, "--target-case-ids", *TWO_CASES, "--selection-mode",
       "user_selected", "--backend", "cpu", "--op-name", "softmax_kernel", "--repeats", "3", "--warmup", "0")
    return op


def start(script: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPTS / script), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_ok(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (proc.args, out, err)


def build_full(target: Path) -> Path:
    """Frozen example + two formal rounds, golden, ledger, state, correctness (run side by side),
    then a formal compare and a recorded baseline candidate."""
    op = build_frozen(target)
    wait_ok([start("collect_perf.py", "formal", "--op-dir", op), start("collect_perf.py", "formal", "--op-dir", op),
             start("collect_golden_reference.py", op / "softmax_golden.py", "--function", "softmax_golden",
                   "--factory", "golden_cases", "--case-manifest", op / "PERFORMANCE_CASES.json", "--output-dir",
                   op, "--device", "0", "--warmup", "0", "--repeats", "3", "--seed", "42"),
             start("ledger.py", "init", "--op-dir", op),
             start("orchestrator_state.py", "init", "--op-dir", op, "--actor", "pypto-pro-op-orchestrator"),
             start("check_correctness.py", "--op-dir", op)])
    run_id = next((op / "docs/perf/correctness").glob("c*.json")).stem
    wait_ok([start("compare_perf.py", "formal", "--op-dir", op, "--baseline", "round_001", "--candidate", "round_002"),
             start("select_best.py", "record", "--op-dir", op, "--version-id", "baseline", "--round", "round_001",
                   "--correctness", run_id)])
    return op


@pytest.fixture(scope="session")
def bases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reliability_bases")
    return {"example": copy_example(root / "example" / "softmax"), "full": build_full(root / "full" / "softmax")}


# ---------------------------------------------------------------- setup edits (data-driven)

def _one(op: Path, pattern: str, *, create: bool = False) -> Path:
    if not any(ch in pattern for ch in "*?["):
        return op / pattern
    hits = sorted(op.glob(pattern))
    assert len(hits) == 1 or (create and not hits), (pattern, hits)
    return hits[0]


def _pointer(obj, key: str):
    """Parent container and last key of a dotted path with [i] indices, e.g. ``cases[0].shape``."""
    parts = []
    for piece in key.split("."):
        name, _, rest = piece.partition("[")
        if name:
            parts.append(name)
        for index in filter(None, rest.replace("]", "").split("[")):
            parts.append(int(index))
    for part in parts[:-1]:
        obj = obj[part]
    return obj, parts[-1]


def apply_step(op: Path, outside: Path, step: dict) -> None:
    kind = step["op"]
    path = _one(op, step["path"], create=kind in ("write_text", "write_hex", "symlink", "mkdir")) \
        if "path" in step else None
    if kind == "write_text":
        path.write_text(step["text"], encoding="utf-8")
    elif kind == "write_hex":
        path.write_bytes(bytes.fromhex(step["hex"]))
    elif kind == "replace_text":
        text = path.read_text(encoding="utf-8")
        assert step["old"] in text, (path, step["old"])
        path.write_text(text.replace(step["old"], step["new"], 1), encoding="utf-8")
    elif kind in ("json_set", "json_delete"):
        obj = json.loads(path.read_text(encoding="utf-8"))
        parent, last = _pointer(obj, step["key"])
        if kind == "json_set":
            parent[last] = step["value"]
        else:
            del parent[last]
        path.write_text(json.dumps(obj, indent=2, allow_nan=True), encoding="utf-8")
    elif kind == "json_replace":  # the whole document
        path.write_text(json.dumps(step["value"], allow_nan=True), encoding="utf-8")
    elif kind == "delete":
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    elif kind == "sparse":
        with open(path, "wb") as handle:
            handle.truncate(int(step["size"]))
    elif kind == "symlink":
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(step["target"].format(outside=outside, op=op))
    elif kind == "outside_file":
        (outside / step["name"]).parent.mkdir(parents=True, exist_ok=True)
        (outside / step["name"]).write_text(step.get("text", "x"), encoding="utf-8")
    elif kind == "mkdir":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "reseal":  # forge a valid seal so the reader behind the seal is what refuses
        round_dir = op / step["path"]
        coll = json.loads((round_dir / "collection.json").read_text(encoding="utf-8"))
        coll["evidence_seal"] = evidence.evidence_seal(round_dir)
        (round_dir / "collection.json").write_text(json.dumps(coll, indent=2), encoding="utf-8")
    else:
        raise AssertionError(f"unknown setup op {kind!r}")


def snapshot(root: Path) -> tuple[dict, list[str]]:
    """Every file's content (huge sparse files: size + mtime) and every folder under ``root``."""
    big = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size > BIG_FILE]
    if not big:
        files = {k: hashlib.sha256(v).hexdigest() for k, v in tree_digest(root).items()}
    else:
        files = {}
        for p in sorted(root.rglob("*")):
            if p.is_file():
                st = p.stat()
                files[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns) if p in big else \
                    hashlib.sha256(p.read_bytes()).hexdigest()
    links = {p.relative_to(root).as_posix(): os.readlink(p) for p in root.rglob("*") if p.is_symlink()}
    folders = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and not p.is_symlink())
    return {**files, **{f"link:{k}": v for k, v in links.items()}}, folders


def load_case(path: Path) -> dict:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(case) <= {"description", "base", "script", "args", "setup", "expect"}, path
    assert case["script"] in SCRIPT_NAMES, (path, case["script"])
    assert case["base"] in ("example", "full"), path
    assert case["expect"]["code"] in (2, 3) and case["expect"]["needles"], path
    return case


# ---------------------------------------------------------------- the tests

def test_corpus_is_large_and_covers_every_script():
    cases = [load_case(p) for p in CASE_FILES]
    assert len(cases) >= 60
    covered = {c["script"] for c in cases}
    missing = set(SCRIPT_NAMES) - covered - {"demo.py", "install.py"}  # may land later
    assert not missing, missing


def run_case(case_file: Path, base: Path, work: Path) -> dict:
    """Copy the base, apply the setup edits, snapshot, run the script, snapshot again."""
    case = load_case(case_file)
    op, outside = work / "softmax", work / "outside"
    shutil.copytree(base, op, symlinks=True)
    outside.mkdir()
    for step in case.get("setup", []):
        apply_step(op, outside, step)
    before = snapshot(work)
    runs = sorted(op.glob("docs/perf/correctness/c*.json"))
    run_id = runs[0].stem if runs else "no-correctness-run"
    args = [str(a).format(op=op, outside=outside, tmp=work, run_id=run_id) for a in case["args"]]
    proc = run_script(case["script"], *args, timeout=180)
    needles = [n.format(op=op, outside=outside) for n in case["expect"]["needles"]]
    return {"proc": proc, "code": case["expect"]["code"], "needles": needles,
            "unchanged": snapshot(work) == before}


@pytest.fixture(scope="session")
def corpus_results(bases, tmp_path_factory, request) -> dict[str, dict]:
    """Every selected corpus case run once, four at a time (each in its own copy), so the suite stays fast."""
    root = tmp_path_factory.mktemp("bad_inputs")
    selected = [item.callspec.params["case_file"] for item in request.session.items
                if "case_file" in getattr(getattr(item, "callspec", None), "params", {})]

    def one(path: Path):
        try:
            return path.stem, run_case(path, bases[load_case(path)["base"]], root / path.stem)
        except Exception as exc:  # reported by the case's own test below
            return path.stem, {"error": exc}

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, selected))


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_bad_input_is_one_line_error_and_changes_nothing(case_file, corpus_results):
    result = corpus_results[case_file.stem]
    if "error" in result:
        raise result["error"]
    assert_one_line_error(result["proc"], result["code"], *result["needles"])
    assert result["unchanged"], "a refused input changed, added or removed files"
