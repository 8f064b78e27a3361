"""Gate P9 of stage5-check: what was measured is what was frozen (docs/stage5-check.md).

Each function returns ``(category, message)`` pairs; an empty list is PASS.

- :func:`attestation_problems`: every repeat of the baseline, every ranked candidate and the final
  round recorded what the timed call received (``attestation.json``); the inputs' shapes and
  dtypes equal the manifest case; the input digests are one set per case across all those rounds
  and equal the inputs the verifier rebuilds from the golden factory with seed 42 (the golden
  report's factory, else the operator format's frozen ``<name>_golden.py:golden_cases``). A timed
  call whose runner could not wrap the op (``unavailable``) or recorded no call has no attestation.
- :func:`precision_problems`: the correctness run of the delivered code applied the frozen
  precision gate (thresholds recorded by the probe runner, not scraped), its measured figures meet
  it, the reference module is the frozen one, and both caching probes (new data, same shapes)
  meet it too.
- :func:`fingerprint_problems`: baseline and final carry one environment fingerprint.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import golden_source
from ..contract import manifest as manifest_mod
from ..contract import protocol
from ..decide import candidates
from ..errors import PerftuneError
from ..measure import attestation, evidence, fingerprint
from ..measure.backends.base import runner_env

Problem = tuple[str, str]


def _groups(case: manifest_mod.Case) -> tuple[list[list[int]], list[str]]:
    shapes = [[int(d) for d in body.split(",") if d] for body in re.findall(r"\[([0-9,]*)\]", case.shape)]
    dtypes = [part.split(":")[-1] for part in case.dtype.split(",")]
    return shapes, dtypes * len(shapes) if len(dtypes) == 1 else dtypes


def _round_records(rnd: evidence.RoundEvidence, case_id: str) -> tuple[list[dict], int, str]:
    """Every attestation of one case of a round (both arms when paired), how many timed calls have
    none (a missing or unreadable file, a runner that could not wrap the op, no recorded call), and
    the first reason given."""
    case_dir = rnd.cases[case_id].path
    found, missing, why = [], 0, ""
    for index in range(1, rnd.collection["repeats"] + 1):
        repeat = case_dir / f"repeat_{index:03d}"
        for folder in ([repeat / "baseline", repeat / "candidate"] if rnd.paired else [repeat]):
            path = folder / attestation.ATTESTATION_JSON
            try:
                obj = fsio.read_json(path, what="attestation")
            except PerftuneError:
                missing += 1
                continue
            calls = (obj["calls"] if isinstance(obj.get("calls"), list) else [obj]) if isinstance(obj, dict) else []
            if not isinstance(obj, dict) or "unavailable" in obj or not calls:
                missing += 1
                why = why or str(obj.get("unavailable", "no call recorded") if isinstance(obj, dict) else "not an object")
                continue
            found += calls
    return found, missing, why


def _key(record: dict) -> tuple:
    return tuple(attestation.input_key(record))


def rebuild_golden(op_dir: Path, man: manifest_mod.Manifest) -> tuple[dict[str, list[tuple]] | None, str | None]:
    """Inputs the golden factory builds with seed 42 (a subprocess), keyed per case; or a problem.
    The factory: the golden report's, else the operator format's frozen one (``contract/golden_source``)."""
    try:
        source = golden_source.resolve(op_dir)
    except PerftuneError as exc:
        return None, f"cannot rebuild the inputs: {exc.line()}"
    with tempfile.TemporaryDirectory(prefix="perftune_golden_inputs_") as scratch:
        out = Path(scratch) / "inputs.json"
        argv = [sys.executable, "-m", "perftune.measure.attestation", "--golden", str(source.path), "--factory",
                source.factory, "--manifest", str(op_dir / protocol.MANIFEST_NAME), "--output", str(out)]
        proc = subprocess.run(argv, cwd=op_dir, env=runner_env(0), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1]
            return None, f"cannot rebuild the inputs from the golden factory: {tail}"
        built = json.loads(out.read_text(encoding="utf-8"))
    return {cid: _key({"inputs": described}) for cid, described in built.items()}, None


def ranked_rounds(op_dir: Path) -> list[str]:
    """The rounds of every candidate in the register (the ranking's inputs)."""
    try:
        return [c["round"] for c in candidates.load_candidates(op_dir)["candidates"] if c.get("round")]
    except PerftuneError:
        return []  # P7 reports an unusable register


def attestation_problems(op_dir: Path, man: manifest_mod.Manifest, rounds: list[evidence.RoundEvidence],
                         golden: dict[str, list[tuple]] | None) -> list[Problem]:
    out: list[Problem] = []
    for case in man.cases:
        shapes, dtypes = _groups(case)
        seen: dict[tuple, str] = {}
        outputs: dict[tuple, str] = {}
        for rnd in rounds:
            where = f"{rnd.collection_id}/{case.id}"
            records, missing, why = _round_records(rnd, case.id)
            if missing:
                out.append(("performance_evidence_invalid", f"{where}: {missing} timed call(s) without an input "
                            f"attestation{' (' + why + ')' if why else ''} (re-collect the round with this collector)"))
            for record in records:
                seen.setdefault(_key(record), where)
                outputs.setdefault(tuple((tuple(o["shape"]), o["dtype"]) for o in record.get("outputs", [])
                                         if o.get("kind") == "tensor"), where)
            for key in {_key(r) for r in records}:
                got = [list(k[0]) for k in key][:len(shapes)], [k[1] for k in key][:len(dtypes)]
                if got != (shapes, dtypes):
                    out.append(("cheating", f"{where}: the timed call received {got[0]} {got[1]}, the frozen case "
                                f"is {shapes} {dtypes}"))
        if len(seen) > 1:
            out.append(("cheating", f"case {case.id}: the timed calls received {len(seen)} different inputs "
                        f"across rounds/arms ({', '.join(sorted(seen.values())[:4])}): one frozen case, one input"))
        if len(outputs) > 1:
            out.append(("cheating", f"case {case.id}: output shapes/dtypes differ across rounds ({sorted(outputs)})"))
        if golden is not None and seen and set(seen) != {tuple(golden.get(case.id, ()))}:
            out.append(("cheating", f"case {case.id}: the measured inputs are not the golden factory's seed-42 inputs "
                        f"(sha {_short(seen)} vs rebuilt {_short({tuple(golden.get(case.id, ())): ''})})"))
    return out


def _short(keys: dict) -> str:
    return "/".join(",".join(k[2][:12] for k in key) or "none" for key in keys)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def precision_problems(op_dir: Path, man: manifest_mod.Manifest, record: dict[str, Any] | None) -> list[Problem]:
    frozen = man.raw.get("precision_gate")
    if not frozen:
        return [("stage5_contract_blocked", "the manifest has no frozen precision gate (SPEC.md declares none "
                 "that docs/spec-format.md can parse)")]
    out: list[Problem] = []
    ref = frozen.get("reference")
    if ref is None:
        out.append(("stage5_contract_blocked", "the frozen precision gate names no reference module"))
    elif not (op_dir / ref["path"]).is_file() or fsio.sha256_file(op_dir / ref["path"]) != ref["sha256"]:
        out.append(("cheating", f"precision reference {ref['path']} changed after freeze (the oracle was edited)"))
    for case in (c for c in (record or {}).get("cases", []) if c.get("id") in man.case_ids):  # P0 cases
        out += [(cat, f"case {case['id']}: {msg}") for cat, msg in _case_problems(case.get("probe"))]
    return out


def _case_problems(probe: dict[str, Any] | None) -> list[Problem]:
    if not probe:
        return [("performance_evidence_invalid", "the correctness run has no probe record (re-run check_correctness.py)")]
    if probe.get("problem"):
        return [("runtime_failure", f"probe: {probe['problem']}")]
    gate, applied, out = probe.get("frozen_gate") or {}, probe.get("applied_gate") or {}, []
    for key in ("atol", "rtol", "min_matched"):
        values = applied.get(key) or []
        if not values:
            out.append(("precision_failure", f"the test applied no recognisable {key} (name it {key}, or use "
                        "numpy.isclose/allclose; docs/spec-format.md)"))
        elif any(not _close(v, gate.get(key, float("nan"))) for v in values):
            out.append(("cheating", f"the test applied {key}={values}, the frozen gate is {gate.get(key)}"))
    measured = probe.get("measured") or {}
    if not measured.get("meets_frozen_gate"):
        out.append(("precision_failure", f"measured against the frozen gate: matched_ratio "
                    f"{measured.get('matched_ratio')} < {gate.get('min_matched')} {measured.get('error') or ''}".strip()))
    for item in probe.get("probes") or [{"error": "no caching probe ran"}]:
        if not item.get("meets_frozen_gate"):
            out.append(("cheating", f"new data of the same shape (seed {item.get('seed')}) gives a wrong output "
                        f"(matched_ratio {item.get('matched_ratio')}, seed 42: {measured.get('matched_ratio')}"
                        f"{'; ' + item['error'] if item.get('error') else ''}): memoised or precomputed results, or a "
                        "kernel that meets the gate on the seed-42 inputs only"))
    return out


def fingerprint_problems(base: evidence.RoundEvidence, final: evidence.RoundEvidence) -> list[Problem]:
    out = [("performance_evidence_invalid", f"round {r.collection_id} has no environment fingerprint")
           for r in (base, final) if "environment" not in r.collection]
    different = fingerprint.mismatch(base.collection, final.collection)
    if different and not out:
        out.append(("performance_evidence_invalid", f"baseline and final were measured in different environments: "
                    f"{different}"))
    return out
