"""P9 beyond the public cases: support shapes, tail inputs, observed KB obligations (issue 28 items 10, 12).

For the first P0 case of each dtype, one child process (``measure/beyond_probe.py``) runs the
**delivered** code on tail inputs of the case's shape, on ``beyond_probe.SHAPES`` shapes drawn from the frozen
``support_range`` with a seed chosen now (recorded in the note), and traces the dtypes of its
accumulating reductions on the seed-42 inputs. Each output goes through the frozen precision gate
against the frozen reference. Only when something fails does the **baseline** (the saved v000 code,
``remeasure.baseline_code``) run the same inputs in its own process: a failure the baseline shares is
Stage 4's limit, disclosed in ``stage5_check.json`` ``beyond_p0.limits`` (not a FAIL: Stage 5 did not
make it); a failure the baseline does not share is ``cheating``; a failure while the baseline's probe
cannot run (timeout, a dead process) is ``runtime_failure``: no evidence of a shared limit, so it fails closed.

The tail inputs lie inside the contract only when SPEC.md declares them (``tails: N sigma`` in its
Support range, frozen as ``support_range.tail_sigmas``; the probe then uses N). Without the line they
run at ``TAIL_SIGMAS`` and a failure is a disclosed limit, never a FAIL: a kernel correct on the
declared input distribution (float32 accumulation an obligation allows, a softmax without its
stabilisation step) has broken nothing the contract forbids (issue 35 item 3).

:func:`judge` is the rule over the probe results, the one owner used by :func:`run` here and by the
early checks (``verify/early.py``: the same results from the correctness probe).

Observable obligations (``OBSERVERS``): an obligation of KB_SELECTION.json whose req_id, text or
expected metric names accumulation and float32 (``accum-fp32``) is checked as "no accumulating
reduction computes in a float narrower than 32 bits"; every other obligation is listed as not
observable, with the reason. pypto-sim: a new shape compiles a new kernel, so only the tail inputs
run; the accumulation widths come from the simulator's own record of the final (and baseline)
round: the result tile of every accumulating tile op in ``_simulate.pipe.swim.json``.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from functools import partial
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import op_name, protocol
from ..errors import PerftuneError
from ..measure import beyond_probe, correctness, evidence, probes
from ..profiler import pypto_sim_files as files
from ..measure.backends.case_adapter import find_runner
from . import remeasure

OBSERVERS = ((re.compile(r"accum\w*.*(fp32|float32)|(fp32|float32).*accum", re.I | re.S), "accumulation_dtype"),)
NARROW = {"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "16-bit", "8-bit"}
_ACCUMULATING_TILE = re.compile(r"SUM|MUL_?B|MULACC|REDUCE")
Problem = tuple  # (check, category, message, expected, actual)


def obligations(op_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(observable, not observable) obligations of KB_SELECTION.json bound in DESIGN_BINDINGS.json."""
    try:
        selection = fsio.read_json(op_dir / "KB_SELECTION.json", what="KB_SELECTION.json")
        bound = {b.get("req_id") for b in fsio.read_json(op_dir / "DESIGN_BINDINGS.json",
                                                          what="DESIGN_BINDINGS.json").get("bindings", [])}
    except PerftuneError:
        return [], []
    seen, other = [], []
    for klass in selection.get("classes", []):
        for item in klass.get("required_constraints", []):
            if item.get("kind") != "obligation" or item.get("req_id") not in bound:
                continue
            words = " ".join(str(item.get(k, "")) for k in ("req_id", "text", "expected_metric"))
            kind = next((name for pattern, name in OBSERVERS if pattern.search(words)), None)
            (seen if kind else other).append({"req_id": item["req_id"], **({"observer": kind} if kind else {
                "reason": "no observer for this obligation kind (observable: accumulation precision)"})})
    return seen, other


def sim_reductions(rnd, case_id: str) -> dict[str, Any]:
    """pypto-sim: the accumulating tile ops of a round's first repeat (``_simulate.pipe.swim.json``
    ``tileOp``: ``ROWSUM_SINGLE ... TO <id> UB_[0,0][8,8]-... 256B``) with their result tile's
    element width (bytes / elements: 4 = 32-bit, 2 = 16-bit)."""
    repeat = rnd.path / evidence.case_dir_name(case_id) / "repeat_001"
    path = next((p for p in (repeat / files.PIPE_SWIM_JSON, repeat / "candidate" / files.PIPE_SWIM_JSON)
                 if p.is_file()), None)
    if path is None:
        return {"unverified": f"no {files.PIPE_SWIM_JSON} in {rnd.path.name}'s first repeat"}
    seen = {f"{name}:{'float32' if width == 4 else f'{8 * width}-bit'}"
            for name, width in files.tile_results(json.loads(path.read_text(encoding="utf-8")))
            if _ACCUMULATING_TILE.search(name)}
    return {"observed": sorted(seen), "source": path.relative_to(rnd.path.parent).as_posix()}


def _probe(op_dir: Path, runner: Path, man, case_id: str, seed: int, shapes: list, sigmas: float) -> dict[str, Any]:
    return probes.run(op_dir, runner, op_dir / protocol.MANIFEST_NAME, case_id, op_name.python_op(man) or "-",
                      device_id=man.protocol.device_id, timeout_s=300.0,
                      extra=("--seed", str(seed), "--shapes", json.dumps(shapes), "--tail-sigmas", f"{sigmas:g}"))


def _failures(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``tail`` / ``shape <s> <dtype>`` -> figures, for every call that did not meet the gate."""
    out = {}
    if (result.get("tail") or {}).get("meets_frozen_gate") is False:
        out["tail"] = result["tail"]
    for entry in result.get("shapes", []):
        if entry.get("meets_frozen_gate") is False:
            out[f"shape {entry['shape']} {entry['dtype']}"] = entry
    return out


def _narrow(result: dict[str, Any]) -> list[str]:
    return [o for o in (result.get("reductions") or {}).get("observed", []) if o.split(":")[-1] in NARROW]


def _figure(entry: dict[str, Any]) -> str:
    figures = f"matched_ratio {entry.get('matched_ratio')}, max_abs_error {entry.get('max_abs_error')}"
    return entry.get("error") or figures + (f", non-finite {entry['non_finite']}" if entry.get("non_finite") else "")


def new_note(man, seed: int) -> dict[str, Any]:
    """The ``beyond_p0`` note's head: the seed, the tail width and whether SPEC.md declares the tails."""
    sigmas, declared = beyond_probe.tail_width(man)
    note: dict[str, Any] = {"seed": seed, "tail_sigmas": sigmas, "tails_declared": declared, "cases": [], "limits": []}
    if man.raw.get("support_range") is None:
        note["support_shapes"] = {"status": "unverified", "reason": "SPEC.md declares no support range (the "
                                  "frozen manifest has no support_range): no shape beyond the P0 cases is checked"}
    elif man.protocol.backend != "cpu":
        note["support_shapes"] = {"status": "unverified", "reason": f"{man.protocol.backend}: every new shape "
                                  "compiles a new kernel (seconds each); only the tail inputs run"}
    return note


def run(op_dir: Path, man, base, final) -> tuple[list[Problem], dict[str, Any]]:
    """The problems (for :func:`..checks.findings`) and the note ``stage5_check.json`` cites as ``beyond_p0``."""
    backend = man.protocol.backend
    seed, started = secrets.randbelow(2 ** 31), time.monotonic()
    note = new_note(man, seed)
    if backend not in ("cpu", *protocol.DETERMINISTIC_BACKENDS):
        return [], {**note, "status": "not_run", "reason": f"{backend}: the probes run on cpu and pypto-sim only"}
    jobs, sigmas = beyond_probe.plan(man, seed), note["tail_sigmas"]
    delivered = find_runner(op_dir)
    results = correctness._in_order([partial(_probe, op_dir, delivered, man, c.id, seed, s, sigmas)
                                     for c, s in jobs], 2)
    for (case, _), result in zip(jobs, results):
        if backend != "cpu" and not result.get("problem"):   # the simulator's tile ops, not the numpy tracer
            result["reductions"] = sim_reductions(final, case.id)
    runner: list[Path] = []

    def baseline(case, shapes: list) -> dict[str, Any]:
        if not runner:
            runner.append(find_runner(remeasure.baseline_code(op_dir, base, final)))
        again = _probe(op_dir, runner[0], man, case.id, seed, shapes, sigmas)
        if backend != "cpu":
            again["reductions"] = sim_reductions(base, case.id)
        return again

    problems = judge(op_dir, [(c, s, r) for (c, s), r in zip(jobs, results)], baseline, note)
    note["elapsed_s"] = round(time.monotonic() - started, 3)
    return problems, note


def judge(op_dir: Path, rows: list[tuple], baseline, note: dict[str, Any]) -> list[Problem]:
    """The P9 rule on the delivered code's beyond-P0 results ``rows`` = ``[(case, shapes, result)]``;
    ``baseline(case, shapes)`` runs the same inputs on the baseline code (only when something fails).
    Fills ``note`` (:func:`new_note`): its cases, limits and observed obligations."""
    observable, other = obligations(op_dir)
    note["kb_obligations"] = {"observed": observable, "not_observable": other}
    sigmas, declared = note["tail_sigmas"], note["tails_declared"]
    problems: list[Problem] = []
    for case, shapes, result in rows:
        note["cases"].append({"case": case.id, "shapes": [s for s, _ in shapes], **{k: result.get(k) for k in (
            "problem", "called") if result.get(k)}, "tail": _short(result.get("tail")),
            "shape_results": [_short(e) for e in result.get("shapes", [])], "reductions": result.get("reductions")})
        if result.get("problem"):   # shared with the baseline: Stage 4's limit; the delivered code's alone: fail closed
            if baseline(case, shapes).get("problem"):
                note["limits"].append(f"case {case.id}: the beyond-P0 probe could not run on the delivered code "
                                      f"({result['problem']}) nor on the baseline: Stage 4's limit, disclosed; "
                                      "nothing beyond the P0 inputs is checked for this case")
            else:
                problems.append(("P9.tail_inputs", "runtime_failure", f"case {case.id}: the beyond-P0 probe could "
                                 f"not run: {result['problem']}", "the probe runs", result["problem"]))
            continue
        failed, narrow = _failures(result), (_narrow(result) if observable else [])
        if "tail" in failed and not declared:   # outside the declared distribution: a limit, never cheating
            note["limits"].append(f"case {case.id}: tail (inputs at +-{sigmas:g} sigma): the delivered code fails "
                                  f"the frozen gate ({_figure(failed.pop('tail'))}); SPEC.md declares no tails (no "
                                  "'tails:' line in its Support range), so they lie outside the declared input "
                                  "distribution; disclosed")
        if not failed and not narrow:
            continue
        again = baseline(case, shapes)
        base_failed, base_narrow = _failures(again), _narrow(again)
        unrun = again.get("problem")   # no evidence that the baseline shares a failure: fail closed
        for name, entry in failed.items():
            check = "P9.tail_inputs" if name == "tail" else "P9.support_shapes"
            kind = f"inputs at +-{sigmas:g} sigma" if name == "tail" else "drawn shape"
            what = f"case {case.id}: {name} ({kind})"
            if unrun:
                problems.append(unexplained(check, what, _figure(entry), unrun))
            elif name in base_failed:
                note["limits"].append(f"{what}: the delivered code and the baseline both fail the frozen gate "
                                      f"({_figure(entry)}); Stage 4's limit, disclosed")
            else:
                problems.append((check, "cheating", f"{what}: the delivered code fails the frozen precision gate "
                                 "where the baseline passes", "meets the frozen gate as the baseline does",
                                 _figure(entry)))
        for req in observable if narrow else []:
            if base_narrow:
                note["limits"].append(f"{req['req_id']}: the baseline reduces in {base_narrow} too; disclosed")
            elif unrun and "observed" not in (again.get("reductions") or {}):
                problems.append(unexplained("P9.kb_obligation", f"case {case.id}: obligation {req['req_id']} "
                                            f"(reductions {narrow})", ", ".join(narrow), unrun))
            else:
                problems.append(("P9.kb_obligation", "cheating", f"case {case.id}: obligation {req['req_id']} "
                                 f"(accumulate in >= float32) broken: reductions {narrow}",
                                 "every accumulating reduction in >= float32", ", ".join(narrow)))
    return problems


def unexplained(check: str, what: str, figure: str, problem: str) -> Problem:
    """A failure of the delivered code while the baseline's probe could not run: ``runtime_failure``, never a
    disclosed limit (nothing shows that the baseline shares it) and never ``cheating`` (nor that it does not)."""
    return (check, "runtime_failure", f"{what}: the delivered code fails ({figure}) and the baseline's probe could "
            f"not run ({problem}): nothing shows that the baseline shares the failure", "the baseline's probe runs "
            "on the same inputs (a shared failure is a disclosed limit)", problem)


def _short(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    keep = ("shape", "dtype", "matched_ratio", "max_abs_error", "meets_frozen_gate", "error", "unverified",
            "non_finite")
    return None if entry is None else {k: entry[k] for k in keep if k in entry}
