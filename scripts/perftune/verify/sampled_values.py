"""Gate P9: sampled timed outputs against the frozen reference, the output dtype.

- ``P9.sampled_values`` (``cheating``): every timed call of the delivered code that kept output values
  (``measure/sampled_values.py``: one random call and the last one of each process and arm) meets
  the frozen precision gate on its kept elements against the frozen reference on that call's own
  inputs (the seed-42 inputs the verifier rebuilds; a call on other inputs is ``P9.attestation``'s).
  A cpu round of the delivered code with no kept values, or whose last timed call of a process kept
  none, is ``performance_evidence_invalid`` (re-collect with this collector).
- ``P10.remeasured_values`` (``cheating``): the same on every kept timed call of the delivered code in
  the verifier's own re-measurement (``docs/perf/stage5_remeasure/rm_NNN``): the seed-42 attempts keep
  values as the rounds do, the fresh-data attempts on every timed call, judged against the reference on
  the inputs rebuilt from the recorded seeds (a kernel that tells the verifier's fresh data from the
  frozen inputs and returns anything cheap on them); a record whose inputs cannot be rebuilt is
  ``performance_evidence_invalid``.
- ``P9.output_dtype`` (``cheating``): every timed output of the delivered code has the case's SPEC
  dtype (:func:`expected_dtype`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..contract import manifest as manifest_mod, protocol, work_model
from ..measure import attestation, evidence
from ..measure import sampled_values as kept
from ..measure.backends.base import runner_env
from .timed_calls import Problem, _arms


def expected_dtype(case: manifest_mod.Case, model: dict[str, Any] | None = None) -> str | None:
    """The output dtype the SPEC fixes for ``case``: the dtype its necessary-work model declares for
    the written tensors (a float16 matmul's ``y | write | m*n | float32``); else the case's dtype when
    it names one (``float16``, or ``x:float16,w:float16``); None when its parts differ (the SPEC names
    no output dtype then)."""
    written = work_model.written_dtype(model)
    if written:
        return written
    parts = {d.split(":")[-1] for d in str(case.dtype).split(",") if d}
    return parts.pop() if len(parts) == 1 else None


def _dtype_ok(want: str, item: dict[str, Any]) -> bool:
    # numpy has no bfloat16: a numpy float32 output stands for it (as the golden's inputs do, attestation.py)
    return item.get("dtype") == want or (want == "bfloat16" and item.get("dtype") == "float32"
                                         and item.get("type") == "numpy.ndarray")


def _delivered_calls(rounds, man, delivered_sha):
    """``(round, case id, where, [(repeat, record)])`` of every arm that ran the delivered code."""
    for rnd in rounds:
        for case_id in (c for c in man.case_ids if c in rnd.cases):
            for arm, delivered, rows in _arms(rnd, case_id, delivered_sha):
                if delivered:
                    where = f"{rnd.collection_id}/{case_id}{'/' + arm if rnd.paired else ''}"
                    yield rnd, case_id, where, [(i, r) for i, r in rows if r is not None]


def dtype_problems(man, rounds, delivered_sha: str) -> list[Problem]:
    out = []
    for _rnd, case_id, where, rows in _delivered_calls(rounds, man, delivered_sha):
        want = expected_dtype(man.case(case_id), man.raw.get("work_model"))
        bad = sorted({f"{o.get('arg')}:{o.get('dtype')}" for _i, r in rows for o in r.get("outputs", [])
                      if o.get("kind") == "tensor" and want and not _dtype_ok(want, o)})
        if bad:
            out.append(("P9.output_dtype", "cheating", f"{where}: output(s) {bad} are not of the case's SPEC dtype "
                        f"{want}", want, ", ".join(bad)))
    return out


def _requests(man, rounds, delivered_sha, golden) -> tuple[dict[str, list], list[Problem]]:
    requests: dict[str, list] = {}
    out: list[Problem] = []
    for rnd, case_id, where, rows in _delivered_calls(rounds, man, delivered_sha):
        backend = (rnd.collection.get("environment") or {}).get("backend") or rnd.collection.get("backend")
        if backend != "cpu" or not rows:
            continue
        sampled = [(i, r) for i, r in rows if isinstance(r.get("sampled"), dict)]
        last_kept = all(r["sampled"].get("call") != r["sampled"].get("of") for _i, r in sampled)
        if not sampled or last_kept:
            out.append(("P9.sampled_values", "performance_evidence_invalid", f"{where}: no timed call kept output "
                        "values" + (" at the last call" if sampled else "") + " (re-collect the round with this "
                        "collector)", "a random call and the last of each process", f"{len(sampled)} kept"))
        for index, rec in sampled:
            if golden and tuple(attestation.input_key(rec)) != tuple(golden.get(case_id) or ()):
                continue   # other inputs than the seed-42 ones: P9.attestation reports it
            requests.setdefault(case_id, []).append(_kept_request(rec, f"{where} repeat {index}", man.case(case_id)))
    return requests, out


def value_problems(op_dir: Path, man, rounds, delivered_sha: str, golden) -> list[Problem]:
    requests, out = _requests(man, rounds, delivered_sha, golden)
    return out + _judged(op_dir, requests, "P9.sampled_values")


def _judged(op_dir: Path, requests: dict[str, list], check: str) -> list[Problem]:
    """The kept values of ``requests`` judged in a child process (``measure/sampled_values.py``)."""
    if not requests:
        return []
    with tempfile.TemporaryDirectory(prefix="perftune_sampled_") as scratch:
        ask, answer = Path(scratch) / "requests.json", Path(scratch) / "figures.json"
        ask.write_text(json.dumps(requests), encoding="utf-8")
        argv = [sys.executable, "-m", "perftune.measure.sampled_values", "--op-dir", str(op_dir), "--manifest",
                str(op_dir / protocol.MANIFEST_NAME), "--requests", str(ask), "--output", str(answer)]
        proc = subprocess.run(argv, cwd=op_dir, env=runner_env(0), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not answer.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            return [(check, "runtime_failure", f"the reference on the sampled calls' inputs did not run: {tail}",
                     "the frozen reference runs", tail)]
        figures = json.loads(answer.read_text(encoding="utf-8"))
    out: list[Problem] = []
    for row in (r for rows in figures.values() for r in rows):
        if row.get("unrebuilt"):
            out.append((check, "performance_evidence_invalid", f"{row['where']}: the fresh inputs of timed call "
                        f"{row.get('call')} cannot be rebuilt from its record: {row['problem']}",
                        "inputs rebuilt from the recorded seeds", row["problem"]))
        elif row.get("meets") is False or row.get("problem"):
            got = row.get("problem") or f"matched {row.get('matched_ratio', 0):.4f} of {row.get('elements')}"
            out.append((check, "cheating", f"{row['where']}: the values timed call {row.get('call')} returned fail "
                        "the frozen precision gate against the reference on the inputs it received",
                        f"matched >= {row.get('min_matched')}", got))
    return out


def _kept_request(rec: dict[str, Any], where: str, case) -> dict[str, Any]:
    arg = kept.compared_output(rec)
    dtype = next((o.get("dtype") for o in rec.get("outputs", []) if o.get("arg") == arg), None) or case.dtype
    request = {"where": where, "sampled": rec["sampled"], "arg": arg, "dtype": dtype}
    return {**request, "fresh": rec["fresh"], "inputs": rec.get("inputs", [])} if rec.get("fresh") else request


def remeasured_problems(op_dir: Path, man, note: dict[str, Any] | None, golden) -> list[Problem]:
    """``P10.remeasured_values``: every timed call of the delivered code in the verifier's own re-measurement
    that kept values (seed-42 attempts: as the rounds, a random call and the last; fresh-data attempts: every
    timed call) meets the frozen gate against the reference on the inputs it received."""
    if not note or note.get("status") != "run" or man.protocol.backend != "cpu":
        return []
    folder, requests, out = op_dir / note["path"], {}, []
    for row in note.get("cases", []):
        case_dir = folder / evidence.case_dir_name(row["case"])
        for path in sorted(case_dir.glob(f"*/repeat_*/candidate/{attestation.ATTESTATION_JSON}")):
            rec, where = json.loads(path.read_text(encoding="utf-8")), path.parent.relative_to(folder).as_posix()
            fresh = path.relative_to(case_dir).parts[0].startswith("fresh_")
            if fresh and not isinstance(rec.get("sampled"), dict):
                out.append(("P10.remeasured_values", "performance_evidence_invalid", f"{where}: a fresh-data timed "
                            "call kept no output values", "every fresh-data timed call keeps values", "none kept"))
            elif isinstance(rec.get("sampled"), dict) and (fresh or not golden or tuple(attestation.input_key(rec))
                                                           == tuple(golden.get(row["case"]) or ())):
                requests.setdefault(row["case"], []).append(_kept_request(rec, where, man.case(row["case"])))
    return out + _judged(op_dir, requests, "P10.remeasured_values")

