"""The real Stage 5 pipeline on a small operator the tests ship, with the points where a cheat is planted.

The operator: ``examples/softmax`` with one P0 case (``r64_c4096_fp32``), empty preset sources
(only its two KB obligations remain in the ledger) and a deliberately slow Stage 4 kernel
(``kernels/stage4.py``: its passes four times, so a planted candidate is accepted under any load),
Stage 4 checked first (``validate_stage.py 4``
writes ``docs/stages/stage4_check.json``, the record of the code Stage 4 delivered). Then the SKILL's
steps through the scripts (README.md of this folder): freeze, golden, platform probe, correctness,
baseline round, ledger, v000, optionally one experiment v001 (a kernel file of this folder), sweep,
choose, the final paired round, compare, confirm, terminal evidence, report. Each plant action runs
at one of :data:`POINTS`; :func:`apply` is the action vocabulary.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from conftest import EXAMPLE, call_script, run_script

HERE = Path(__file__).resolve().parent
CASE = "r64_c4096_fp32"
TEST = "test_softmax.py"
KERNEL = re.compile(r"^def softmax_kernel\(.*?(?=^def _assert_precision\()", re.M | re.S)
INDEX = "| id | title | lifecycle | optimization_eligible | file |\n|----|----|----|----|----|\n"
KB_ITEMS = ("kb-softmax-output-by-kernel", "kb-softmax-accum-fp32")
POINTS = ("before_stage4", "before_freeze", "after_freeze", "before_baseline", "after_baseline", "before_experiment",
          "after_experiment", "before_final", "after_delivery")


def run(op: Path, script: str, *args, ok=(0,)) -> dict:
    """One script of the pipeline, in this process (``conftest.call_script``); the verifier itself runs
    as its own process (:func:`check`)."""
    proc = call_script(script, *args, "--json", cwd=op)
    assert proc.returncode in ok, f"{script} {args[:1]} exit {proc.returncode}: {proc.stderr[-800:]}"
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def small_softmax(folder: Path) -> Path:
    """examples/softmax with one P0 case, empty preset sources (only the KB obligations remain) and the
    deliberately slow Stage 4 kernel of ``kernels/stage4.py`` (planted candidates win under any load)."""
    op = folder / "softmax"
    shutil.copytree(EXAMPLE, op, ignore=shutil.ignore_patterns("__pycache__", "docs", "variants"))
    plant_kernel(op, "stage4")
    spec = op / "SPEC.md"
    spec.write_text(re.sub(r"^(\| (?!r64_c4096_fp32 )r\w+ \|[^|]+\|[^|]+\|) yes \|", r"\1 no |",
                           spec.read_text(), flags=re.M))
    for name in ("general-methods", "knowledge-cards", "templates"):
        shutil.rmtree(op / "sources" / name)
        (op / "sources" / name).mkdir(parents=True)
        (op / "sources" / name / "INDEX.md").write_text(INDEX)
    return op


def kernel_source(name: str) -> str:
    """The ``softmax_kernel`` function of ``<name>.py`` in this folder (below its header docstring)."""
    text = (HERE / "kernels" / f"{name}.py").read_text()
    return text[text.index("\n\"\"\"\n", 3) + 5:].lstrip("\n") if text.startswith('"""') else text


def plant_kernel(op: Path, name: str) -> None:
    """Replace the delivered ``softmax_kernel`` and ``softmax_wrapper`` (the code between ``def softmax_kernel``
    and ``def _assert_precision``) with the kernel file's code."""
    text = (op / TEST).read_text()
    assert KERNEL.search(text), "softmax_kernel ... _assert_precision not found"
    (op / TEST).write_text(KERNEL.sub(lambda _m: kernel_source(name).rstrip("\n") + "\n\n\n", text, count=1))


def rounds(op: Path) -> list[str]:
    return sorted(p.name for p in (op / "docs/perf").glob("round_*"))


def _formal(op: Path, paired: bool = True) -> str:
    extra = ("--paired-with", "docs/perf/versions/v000") if paired else ()
    return Path(run(op, "collect_perf.py", "formal", "--op-dir", op, *extra)["round"]).name


def apply(op: Path, action: dict[str, Any], state: dict[str, Any]) -> None:
    """One plant action (README.md lists them)."""
    if "edit" in action:
        path = op / action["edit"]
        text = path.read_text()
        for old, new in action.get("replace", []):
            assert old in text, (action["edit"], old)
            text = text.replace(old, new)
        path.write_text(text + action.get("append", ""))
    elif "kernel" in action:
        plant_kernel(op, action["kernel"])
    elif "restore" in action:
        shutil.copy2(state["stage4"] / action["restore"], op / action["restore"])
    elif "json_set" in action:
        path = op / action["json_set"]
        obj = json.loads(path.read_text())
        target = obj
        for key in action["path"][:-1]:
            target = target[key]
        target[action["path"][-1]] = action["value"]
        path.write_text(json.dumps(obj, indent=2, sort_keys=True))
    elif action.get("run") == "stage4_check":
        run(op, "validate_stage.py", "4", "--op-dir", op)
    elif action.get("run") == "record_frozen_inputs":   # the library's own function, as an agent would call it
        from perftune.contract import frozen_inputs
        (op / "FROZEN_INPUTS.json").unlink()
        frozen_inputs.record(op)
    elif "collect_final" in action:
        state["extra_finals"] = [_formal(op) for _ in range(int(action["collect_final"]))]
    elif "delete_rounds" in action:
        for name in action["delete_rounds"]:
            shutil.rmtree(op / "docs/perf" / name)
    elif "deliver_round" in action:
        final = state["extra_finals"][action["deliver_round"]] if isinstance(action["deliver_round"], int) \
            else action["deliver_round"]
        finish(op, state, final)
    elif "compare_without_attempts" in action:
        _compare_without_attempts(op, state)
    elif "touch" in action:
        (op / action["touch"]).write_text("")
    elif "remove" in action:
        (op / action["remove"]).unlink()
    elif "retry" in action:   # the same kind of experiment again, under another item id
        retry = action["retry"]
        _experiment(op, retry["kernel"], state["base"], state, item=retry["item"], version=retry["version"])
    elif "restart" in action:
        for name in ("docs/perf", "PERFORMANCE_CASES.json", "FROZEN_INPUTS.json", "GOLDEN_PERF_REPORT.json",
                     "GOLDEN_PERF_REPORT.md"):
            target = op / name
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        deliver(op, state["plants"], restart=dict(action["restart"] or {}), stage4=False)
    else:
        raise AssertionError(f"unknown plant action {action}")


def _compare_without_attempts(op: Path, state: dict[str, Any]) -> None:
    """The newest round's own figure delivered: ``compare_perf.py formal`` run while every other round is
    moved out of docs/perf (so it weighs no earlier attempt), the rounds put back, the report re-rendered:
    every file the project's scripts wrote, only the figure is the newest round's alone."""
    perf, hidden = op / "docs/perf", op.parent / "hidden_rounds"
    newest = rounds(op)[-1]
    hidden.mkdir()
    for name in rounds(op):
        if name not in (state["base"], newest):
            shutil.move(perf / name, hidden / name)
    run(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", state["base"], "--candidate", newest, ok=(0, 1))
    for folder in hidden.iterdir():
        shutil.move(folder, perf / folder.name)
    hidden.rmdir()
    run(op, "perf_report.py", "--op-dir", op)


def _at(op: Path, point: str, state: dict[str, Any]) -> None:
    for action in state["plants"].get(point, []):
        apply(op, action, state)


def freeze_args(op: Path, restart: dict[str, Any]) -> tuple[str, ...]:
    return ("freeze", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode", "single_p0", "--backend", "cpu",
            "--op-name", "softmax_kernel", "--warmup", "1", "--noise-band", "0.05",
            "--repeats", str(restart.get("repeats", 5)))


def deliver(op: Path, plants: dict[str, list], *, experiment: str | None = None, restart: dict | None = None,
            stage4: bool = True) -> dict[str, Any]:
    """Stage 4 check, then the perf-tune procedure; ``plants`` maps a point of :data:`POINTS` to actions."""
    state = prepared(op, plants, restart=restart, stage4=stage4)
    base = state["base"]
    if experiment:
        _at(op, "before_experiment", state)
        _experiment(op, experiment, base, state)
        _at(op, "after_experiment", state)
    run(op, "ledger.py", "sweep", "--op-dir", op, "--actor", "test", "--scope", "the P0 case", "--examined",
        "docs/perf/ledger.json")
    run(op, "select_best.py", "choose", "--op-dir", op)
    _at(op, "before_final", state)
    finish(op, state, _formal(op))
    if state.get("smuggled"):   # the kernel the correctness run refused, put back behind the SKILL's back
        plant_kernel(op, state["smuggled"])
    _at(op, "after_delivery", state)
    return state


def prepared(op: Path, plants: dict[str, list], *, restart: dict | None = None, stage4: bool = True) -> dict[str, Any]:
    """The state after the prefix (Stage 4 check to v000, :func:`_prefix`), shared when nothing is planted in it."""
    state: dict[str, Any] = {"plants": plants if restart is None else {}, "stage4": op.parent / "stage4_copy"}
    shared = stage4 and restart is None and not any(state["plants"].get(point) for point in POINTS[:5])
    start = _digest(op) if shared else None
    if start in _PREFIX:
        _reuse_prefix(op, state, start)
    else:
        _prefix(op, state, restart, stage4)
        if shared:
            _save_prefix(op, state, start)
    return state


def _prefix(op: Path, state: dict[str, Any], restart: dict | None, stage4: bool) -> None:
    """Stage 4 check, freeze, golden, platform probe, correctness, baseline round, ledger, v000."""
    if stage4:
        _at(op, "before_stage4", state)
        run(op, "validate_stage.py", "4", "--op-dir", op)
        shutil.copytree(op, state["stage4"], ignore=shutil.ignore_patterns("__pycache__", "docs"))
    _at(op, "before_freeze", state)
    run(op, "freeze_cases.py", *freeze_args(op, restart or {}))
    _at(op, "after_freeze", state)
    run(op, "collect_golden_reference.py", "softmax_golden.py", "--function", "softmax_golden", "--factory",
        "golden_cases", "--case-manifest", "PERFORMANCE_CASES.json", "--output-dir", ".", "--device", "0",
        "--warmup", "1", "--repeats", "5", "--seed", "42", "--backend", "cpu")
    run(op, "terminal_evidence.py", "probe", "--output", "docs/perf/platform_cpu.json")
    _at(op, "before_baseline", state)
    run_id = run(op, "check_correctness.py", "--op-dir", op)["run_id"]
    state["base"] = base = _formal(op, paired=False)
    _at(op, "after_baseline", state)
    run(op, "ledger.py", "init", "--op-dir", op, "--actor", "test")
    for item in KB_ITEMS:
        run(op, "ledger.py", "update", "--op-dir", op, "--actor", "test", "--item", item, "--status",
            "already_implemented", "--note", "the baseline meets it (KB_USAGE.json)", "--code-ref",
            TEST, "--correctness", run_id, "--formal", base)
    run(op, "select_best.py", "record", "--op-dir", op, "--version-id", "v000", "--round", base,
        "--correctness", run_id, "--compliance", "stage4 gates PASS")


# The honest prefix (nothing planted before the baseline round is recorded) is run once per process
# and copied: the same scripts on the same files, its evidence relocatable like any op folder.
_PREFIX: dict[str, tuple[Path, str]] = {}   # the starting folder's digest -> (copy, baseline round)


def _digest(op: Path) -> str:
    files = sorted(p for p in op.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return hashlib.sha256(b"".join(p.relative_to(op).as_posix().encode() + b"\0" + p.read_bytes()
                                   for p in files)).hexdigest()


def _save_prefix(op: Path, state: dict[str, Any], start: str) -> None:
    keep = Path(tempfile.mkdtemp(prefix="cheat_prefix_"))
    atexit.register(shutil.rmtree, keep, True)
    shutil.copytree(op, keep / op.name, symlinks=True)
    shutil.copytree(state["stage4"], keep / "stage4_copy", symlinks=True)
    _PREFIX[start] = (keep, state["base"])


def _reuse_prefix(op: Path, state: dict[str, Any], start: str) -> None:
    keep, state["base"] = _PREFIX[start]
    shutil.rmtree(op)
    shutil.copytree(keep / op.name, op, symlinks=True)
    shutil.copytree(keep / "stage4_copy", state["stage4"], symlinks=True)


def _experiment(op: Path, kernel: str, base: str, state: dict[str, Any], item: str = "bn-kernel",
                version: str = "v001") -> None:
    """One experiment as the SKILL runs it: a derived ledger item, the new kernel, its paired round, v001.
    A kernel whose correctness run fails (a probe caught it at step 1) is rejected ``correctness_failed``
    and v000 restored, as the SKILL says (confirm refuses a final round of other code than the chosen
    version); the cheating agent puts it back once the report is written (``state["smuggled"]``), so
    the verifier meets it in the delivered code."""
    run(op, "ledger.py", "add", "--op-dir", op, "--actor", "test", "--item-id", item, "--title",
        f"kernel {kernel}", "--evidence-file", f"docs/perf/{base}/collection.json", "--expected-metric",
        "speedup > 1.05", "--hypothesis", "fewer passes over the row; risk: precision; stop: slower")
    plant_kernel(op, kernel)
    record = run(op, "check_correctness.py", "--op-dir", op, ok=(0, 1))
    run_id = record["run_id"]
    if not record["all_passed"]:
        run(op, "ledger.py", "update", "--op-dir", op, "--actor", "test", "--item", item, "--status",
            "rejected", "--reason-code", "correctness_failed", "--restore-point", "v000", "--note",
            f"{kernel}: the correctness run failed", "--code-ref", TEST, "--correctness", run_id)
        run(op, "select_best.py", "restore", "--op-dir", op, "--version", "v000")
        state["smuggled"] = kernel
        return
    ranking = _formal(op)
    decided = run(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", base, "--candidate", ranking,
                  ok=(0, 1))["item_acceptance"]   # the item is closed as the frozen rule decided (SKILL step 18)
    closed = call_script("ledger.py", "update", "--op-dir", op, "--actor", "test", "--item", item, "--status",
                         decided["status"], *(() if decided["status"] == "accepted" else
                                              ("--reason-code", decided["reason_code"], "--restore-point", "v000")),
                         "--note", f"{kernel} measured in {ranking}", "--code-ref", TEST, "--correctness", run_id,
                         "--formal", ranking, base, "--mechanism", "fewer passes over the row", "--json", cwd=op)
    if closed.returncode == 2 and "P7.judged_code" in closed.stderr:   # refused: the cheater writes it by hand
        _accept_by_hand(op, item, ranking, base, run_id)
    else:
        assert closed.returncode == 0, closed.stderr
    if decided["status"] == "accepted":
        run(op, "select_best.py", "record", "--op-dir", op, "--version-id", version, "--round", ranking, "--items",
            item, "--correctness", run_id, "--compliance", "stage4 gates PASS")
    else:
        run(op, "select_best.py", "restore", "--op-dir", op, "--version", "v000")


def _accept_by_hand(op: Path, item_id: str, ranking: str, base: str, run_id: str) -> None:
    """The acceptance ``ledger.py`` refused, written into ledger.json the way the tool writes one."""
    path = op / "docs/perf/ledger.json"
    led = json.loads(path.read_text())
    item = next(i for i in led["items"] if i["item_id"] == item_id)
    tried = sorted((op / "docs/perf/versions").glob("tried_*"))[-1]
    led["revision"] += 1
    item.update(status="accepted", reason_code=None)
    item["evidence"].update(code_ref=f"docs/perf/versions/{tried.name}", correctness=run_id, formal=[ranking, base],
                            mechanism="fewer passes over the row")
    item["history"].append({"action": "update", "actor": "test", "at": item["history"][-1]["at"], "from": "pending",
                            "note": f"measured in {ranking}", "revision": led["revision"], "to": "accepted"})
    path.write_text(json.dumps(led, indent=2, sort_keys=True))


def finish(op: Path, state: dict[str, Any], final: str) -> None:
    """Compare the baseline with ``final``, confirm it, build the terminal evidence and the report."""
    run(op, "compare_perf.py", "formal", "--op-dir", op, "--baseline", state["base"], "--candidate", final, ok=(0, 1))
    run(op, "select_best.py", "confirm", "--op-dir", op, "--final-round", final, ok=(0, 1))
    run(op, "terminal_evidence.py", "build", "--op-dir", op, "--round", final)
    run(op, "perf_report.py", "--op-dir", op)


def check(op: Path, *, remeasure: bool = True) -> tuple[int, dict]:
    proc = run_script("stage5_check.py", "--op-dir", op, "--target-case-ids", CASE, "--selection-mode", "single_p0",
                      "--json", "--remeasure" if remeasure else "--no-remeasure")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)
