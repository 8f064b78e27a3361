"""Every script that takes --op-dir gives the same result for an absolute path, a relative path and `.`
(issue 36 Deliver 5): the same commands, in the same order, on three identical copies of the demo's
delivered folder, each named in one form; their exit codes, stdout and stderr must be identical once
each copy's root is written `<ROOT>` and the values a run mints (timestamps, run ids, seconds) are
masked. Found before the fix: a relative --op-dir gave check_correctness.py "manifest is missing"
after the freeze (the probe runs in the operator folder), and `--op-dir .` gave perf_next's golden
command `./_golden.py`. check_correctness.py draws its beyond-P0 seed when it runs (issue 35 item 12,
``verify/early``): what that seed draws (:data:`DRAWN`) is masked in its output, and it runs after every
step that reads the correctness record it writes (stage5_check hashes it), so the copies stay alike."""

from __future__ import annotations

import difflib
import json
import re
import shutil

import pytest

from conftest import SCRIPTS, call_script

FORMS = ("absolute", "relative", "dot")
# values a run mints, not a path: masked before the comparison
MINTED = re.compile(r'"(created_at|started_at|finished_at|run_id|seconds|wall_s|elapsed_s|duration_s|mtime)":'
                    r'\s*("[^"]*"|[0-9.eE+-]+)')
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?|\bc\d{3,}\b")
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
DIGEST = re.compile(r"\b[0-9a-f]{64}\b")   # in a noisy output: a digest of a file a noisy step wrote
# steps that measure on the cpu (list-op-names' profile, the platform cut of terminal evidence) or draw
# a seed at run time (stage5_check's beyond-P0 shapes): their numbers (and an order by time) are noise,
# their lines must agree (stage5_check also cites the digests of what the noisy steps wrote)
NOISY = {("collect_perf.py", "list-op-names"), ("terminal_evidence.py", "build"), ("stage5_check.py", None)}
# check_correctness.py's beyond-P0 probes: the seed drawn at run time and the shapes and tail inputs it draws
DRAWN = {"check_correctness.py": {"seed", "shapes", "tail"}}


def steps(manifest: dict) -> list[tuple[str, list[str]]]:
    """The commands, in order (reading ones first; those that write leave every copy in the same state)."""
    case = manifest["cases"][0]["id"]
    target = manifest["optimization_target"]
    return [
        ("perf_next.py", ["--json"]), ("ledger.py", ["show", "--json"]), ("ledger_check.py", ["--json"]),
        ("freeze_cases.py", ["validate", "--json"]), ("freeze_cases.py", ["show", "--json"]),
        ("orchestrator_state.py", ["show", "--json"]), ("stage4_gates.py", ["--json"]),
        ("validate_stage.py", ["4", "--json"]), ("select_best.py", ["choose", "--json"]),
        ("collect_perf.py", ["list-op-names", "--case-id", case, "--json"]),
        ("collect_perf.py", ["preflight", "--json"]),
        ("compare_perf.py", ["formal", "--baseline", "round_001", "--candidate", "{final}", "--json"]),
        ("terminal_evidence.py", ["build", "--round", "{final}", "--json"]),
        ("perf_report.py", ["--json"]),
        ("stage5_check.py", ["--target-case-ids", *target["case_ids"], "--selection-mode", target["selection_mode"],
                             "--no-remeasure", "--json"]),
        ("check_correctness.py", ["--json"]),
        ("instruction_timeline.py", ["collect", "--round", "{final}", "--json"]),
        ("select_best.py", ["restore", "--version", "{best}", "--json"]),   # a search's base is the current best
        ("ledger.py", ["add", "--item-id", "derived-search", "--title", "path forms", "--evidence-file", "{evidence}",
                       "--expected-metric", "P0 time", "--hypothesis", "h", "--json"]),
        ("tune.py", ["declare", "--item", "derived-search", "--param", "MIN_MATCHED=0.99,0.999", "--hypothesis",
                     "a declared search, never run here (each point is a paired quick screen)", "--json"]),
        ("demo.py", ["--workdir", "{root}/work", "--json"]),
        ("select_best.py", ["restore", "--version", "v000", "--json"]),
    ]


def op_dir_scripts() -> set[str]:
    return {p.name for p in SCRIPTS.glob("*.py") if '"--op-dir"' in p.read_text() or "add_op_dir(" in p.read_text()}


def undrawn(text: str, keys: set[str]) -> str:
    """``text`` (a JSON document) with the values of ``keys`` replaced at any depth; other text as is."""
    def strip(obj):
        if isinstance(obj, dict):
            return {k: "<DRAWN>" if k in keys else strip(v) for k, v in obj.items()}
        return [strip(v) for v in obj] if isinstance(obj, list) else obj
    try:
        return json.dumps(strip(json.loads(text)), indent=2, sort_keys=True)
    except ValueError:
        return text


def masked(text: str, root: str, noisy: bool) -> str:
    text = STAMP.sub("<STAMP>", MINTED.sub(r'"\1": <MINTED>', text.replace(root, "<ROOT>")))
    return "\n".join(sorted(NUMBER.sub("<N>", DIGEST.sub("<SHA>", text)).splitlines())) if noisy else text  # order too


@pytest.fixture(scope="module")
def copies(demo_delivery, tmp_path_factory):
    delivered, _summary = demo_delivery
    base = tmp_path_factory.mktemp("path_forms")
    out = {}
    for form in FORMS:
        root = base / form
        shutil.copytree(delivered, root / "ops" / delivered.name, symlinks=True)
        out[form] = root
    return out


def invocation(form: str, root, name: str) -> tuple[str, object]:
    """(--op-dir value, cwd) of one form."""
    if form == "absolute":
        return str(root / "ops" / name), root.parent
    if form == "relative":
        return f"ops/{name}", root
    return ".", root / "ops" / name


def test_every_script_that_takes_op_dir_is_run_here():
    manifest = {"cases": [{"id": "c"}], "optimization_target": {"case_ids": ["c"], "selection_mode": "m"}}
    assert {script for script, _args in steps(manifest)} == op_dir_scripts()


def test_absolute_relative_and_dot_give_the_same_result(copies, demo_delivery):
    delivered, _summary = demo_delivery
    manifest = json.loads((delivered / "PERFORMANCE_CASES.json").read_text())
    final = sorted(p.name for p in (delivered / "docs/perf").glob("round_*"))[-1]
    best = json.loads((delivered / "docs/perf/candidates.json").read_text())["candidates"][-1]["version_id"]
    evidence = sorted(delivered.glob("docs/perf/bottleneck/*.json"))[-1].relative_to(delivered).as_posix()
    differing = []
    for script, args in steps(manifest):
        seen = {}
        for form, root in copies.items():
            value, cwd = invocation(form, root, delivered.name)
            argv = [a.format(final=final, root=root, best=best, evidence=evidence) for a in args]
            sub = [argv.pop(0)] if argv and not argv[0].startswith("-") else []
            proc = call_script(script, *sub, "--op-dir", value, *argv, cwd=cwd)
            noisy = (script, sub[0] if sub else None) in NOISY
            out = undrawn(proc.stdout, DRAWN[script]) if script in DRAWN else proc.stdout
            seen[form] = (proc.returncode, masked(out, str(root), noisy), masked(proc.stderr, str(root), noisy))
        if len(set(seen.values())) != 1:
            differing.append(f"{script} {args[:1]}: " + _diff(seen))
    assert differing == [], "\n".join(differing)


def _diff(seen: dict[str, tuple]) -> str:
    """The first form that differs from the absolute one, as a short unified diff."""
    base = seen["absolute"]
    form = next(f for f, v in seen.items() if v != base)
    text = lambda v: [f"exit {v[0]}", *v[1].splitlines(), "--- stderr", *v[2].splitlines()]  # noqa: E731
    lines = list(difflib.unified_diff(text(base), text(seen[form]), "absolute", form, n=1, lineterm=""))
    return "\n".join(lines[:40])
