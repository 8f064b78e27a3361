"""Gate P9 (sampled timed outputs against the frozen reference, the output dtype) and P10 (the paired baseline arm).

- ``P9.sampled_values`` (``cheating``): every timed call of the delivered code that kept output values
  (``measure/sampled_values.py``: one random call and the last one of each process and arm) meets
  the frozen precision gate on its kept elements against the frozen reference on that call's own
  inputs (the seed-42 inputs the verifier rebuilds; a call on other inputs is ``P9.attestation``'s).
  A cpu round of the delivered code with no kept values, or whose last timed call of a process kept
  none, is ``performance_evidence_invalid`` (re-collect with this collector).
- ``P9.output_dtype`` (``cheating``): every timed output of the delivered code has the case's SPEC
  dtype (:func:`expected_dtype`).
- ``P10.baseline_arm`` (``cheating``): the fastest baseline-arm sample of a case paired with the
  delivered code (the final round's and every attempt of the verifier's re-measurement, so at least
  two moments) is at most :data:`ARM_LIMIT` × the independent baseline round's fastest (the same
  code, alone): a candidate that slows the arm it is paired with (a library patched at import, a
  polluted shared cache, any side effect reaching the other arm) shows as a baseline arm slower than
  the baseline alone. Minima, because load only slows samples down; over several moments, because
  on the 2-core VM under load one round's five baseline samples all read 8-20x the idle time
  (the float64 baseline suffers far more than the candidate) while the re-measurement's were not.
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

ARM_LIMIT = 10.0


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
            requests.setdefault(case_id, []).append({
                "where": f"{where} repeat {index}", "sampled": rec["sampled"], "arg": kept.compared_output(rec),
                "dtype": next((o.get("dtype") for o in rec.get("outputs", [])
                               if o.get("arg") == kept.compared_output(rec)), None) or man.case(case_id).dtype})
    return requests, out


def value_problems(op_dir: Path, man, rounds, delivered_sha: str, golden) -> list[Problem]:
    requests, out = _requests(man, rounds, delivered_sha, golden)
    if not requests:
        return out
    with tempfile.TemporaryDirectory(prefix="perftune_sampled_") as scratch:
        ask, answer = Path(scratch) / "requests.json", Path(scratch) / "figures.json"
        ask.write_text(json.dumps(requests), encoding="utf-8")
        argv = [sys.executable, "-m", "perftune.measure.sampled_values", "--op-dir", str(op_dir), "--manifest",
                str(op_dir / protocol.MANIFEST_NAME), "--requests", str(ask), "--output", str(answer)]
        proc = subprocess.run(argv, cwd=op_dir, env=runner_env(0), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not answer.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            return out + [("P9.sampled_values", "runtime_failure", f"the reference on the sampled calls' inputs "
                           f"did not run: {tail}", "the frozen reference runs", tail)]
        figures = json.loads(answer.read_text(encoding="utf-8"))
    for rows in figures.values():
        for row in rows:
            if row.get("meets") is not False and not row.get("problem"):
                continue
            got = row.get("problem") or f"matched {row.get('matched_ratio', 0):.4f} of {row.get('elements')}"
            out.append(("P9.sampled_values", "cheating", f"{row['where']}: the values timed call {row.get('call')} "
                        "returned fail the frozen precision gate against the reference on its own inputs",
                        f"matched >= {row.get('min_matched')}", got))
    return out


def _fastest(samples) -> float | None:
    values = [float(s) for s in samples or [] if s is not None]
    return min(values) if values else None


def baseline_arm_problems(man, base: evidence.RoundEvidence, final: evidence.RoundEvidence,
                          note: dict[str, Any] | None = None) -> list[Problem]:
    """``P10.baseline_arm``: the fastest paired baseline-arm sample of a case (the final round's and the
    verifier's own re-measurement's, ``note``) against the fastest of the baseline round alone."""
    if not final.paired or base.paired or base.executable_sha256 != (final.partner or {}).get(
            "baseline_executable_sha256"):
        return []   # the arm is not the code the baseline round measured alone
    again = {row["case"]: [s for a in row.get("attempts") or [] for s in a.get("baseline_samples_us") or []]
             for row in (note or {}).get("cases", [])}
    out = []
    for case_id in (c for c in man.case_ids if c in base.cases and c in final.cases):
        alone = _fastest(base.cases[case_id].samples_us)
        arm = _fastest(list(final.cases[case_id].baseline_samples_us or []) + again.get(case_id, []))
        if alone and arm and arm > ARM_LIMIT * alone:
            out.append(("P10.baseline_arm", "cheating", f"case {case_id}: the baseline arm paired with the delivered "
                        f"code ran {arm / alone:.2f}x slower than the baseline code alone (fastest {arm:.1f} vs "
                        f"{alone:.1f} us, over the final round and the re-measurement): the candidate reaches the "
                        "arm it is compared with", f"<= {ARM_LIMIT:g}x the baseline round's fastest",
                        f"{arm / alone:.2f}x"))
    return out
