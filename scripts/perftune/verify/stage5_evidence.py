"""The checks behind stage5-check's P1-P8 (P9, P10: soundness, remeasure): problem messages, reusing the library.

Nothing here re-implements a decision: numbers come from ``compare.load_formal`` (raw samples →
performance dict), the ledger from ``ledger.check``, the best version from ``candidates.rank``,
correctness from ``correctness``, the golden join from ``golden.load_golden``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..decide import candidates, compare, ledger, ledger_sources
from ..measure import comparable, correctness, evidence
from ..measure.backends import pypto_sim
from .. import fsio
from ..contract import golden
from ..contract import manifest as manifest_mod
from ..contract import protocol, schemas
from ..errors import ContractError, PerftuneError
from ..report import final_report, formal
from ..terminal import profiler

TERMINAL_NAME = "terminal_evidence.json"
REL_TOL = 1e-9


def citation_problem(op_dir: Path, cited: str) -> str | None:
    """A path cited by the report must be inside the op dir, exist, and not go through a symlink."""
    try:
        target = fsio.safe_join(op_dir, cited, field="cited path", source=protocol.PERFORMANCE_REPORT_MD)
    except ContractError as exc:
        return exc.problem
    return None if target.exists() else f"cited path {cited!r} does not exist"


def coverage_problems(op_dir: Path, man: manifest_mod.Manifest) -> list[str]:
    """The manifest must equal the SPEC P0 table one-to-one, each case with its existing test."""
    spec_path, test_path = op_dir / "SPEC.md", op_dir / f"test_{op_dir.resolve().name}.py"
    try:
        spec = manifest_mod.parse_spec(spec_path.read_text(encoding="utf-8"), str(spec_path))
        tests = manifest_mod.find_test_functions(test_path.read_text(encoding="utf-8"), str(test_path))
    except PerftuneError as exc:
        return [f"cannot re-derive the P0 cases: {exc.line()}"]
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot re-derive the P0 cases: {exc}"]
    p0 = {c.id: c for c in spec.cases if c.p0}
    frozen = {c.id: c for c in man.cases}
    out = []
    if set(p0) != set(frozen):
        out.append(f"manifest cases {sorted(frozen)} differ from SPEC P0 cases {sorted(p0)}")
    for cid in sorted(set(p0) & set(frozen)):
        if (p0[cid].shape, p0[cid].dtype) != (frozen[cid].shape, frozen[cid].dtype):
            out.append(f"case {cid}: manifest {frozen[cid].shape} {frozen[cid].dtype} != SPEC "
                       f"{p0[cid].shape} {p0[cid].dtype}")
        if frozen[cid].test_function not in tests:
            out.append(f"case {cid}: test {frozen[cid].test_function}() not found in {test_path.name}")
    functions = [c.test_function for c in man.cases]
    if len(set(functions)) != len(functions):
        out.append("two cases share one test function")
    return out


def protocol_problems(rnd: evidence.RoundEvidence, man: manifest_mod.Manifest, record: dict) -> list[tuple]:
    """A round must have measured the frozen manifest with the frozen protocol (``measure.comparable``);
    ``(category, message, check, expected, actual)`` per differing field."""
    out: list[tuple] = []
    for key, recorded, frozen in comparable.mismatches(rnd, comparable.frozen_fields(man, record["sha256"])):
        if key == comparable.MANIFEST_FIELD:
            out.append(("stage5_contract_blocked", f"round {rnd.collection_id} measured a manifest with another "
                        "hash: the frozen manifest was edited after collection", "P2.manifest_hash",
                        f"sha256 {str(frozen)[:12]}", f"sha256 {str(recorded)[:12]}"))
        else:
            out.append(("performance_evidence_invalid", f"round {rnd.collection_id}: {key} {recorded!r} != frozen "
                        f"{frozen!r}", "P2.protocol", f"{key} = {frozen!r}", f"{key} = {recorded!r}"))
    return out


def reused_samples(*rounds: evidence.RoundEvidence) -> list[str]:
    """No sample sequence may appear twice across cases or rounds (copied aggregates, splices); on a
    deterministic backend (equal samples expected) no archived launch may appear twice instead."""
    seen: dict[tuple[float, ...], str] = {}
    out: list[str] = []
    launches: dict[str, str] = {}
    for rnd in rounds:
        for cid, case in sorted(rnd.cases.items()):
            if rnd.collection["backend"] in protocol.DETERMINISTIC_BACKENDS:   # equal samples are expected
                codes = {"candidate": rnd.executable_sha256, "baseline": rnd.partner["baseline_executable_sha256"]} \
                    if rnd.paired else {"": rnd.executable_sha256}
                out += pypto_sim.launch_problems(case.path, cid, rnd.collection["repeats"], codes, launches,
                                                 rnd.path.parents[2])
                continue
            arms = [("", case.samples_us)] + ([(" (paired baseline)", case.baseline_samples_us)]
                                              if case.baseline_samples_us else [])
            for arm, samples in arms:
                key, where = tuple(samples), f"{rnd.collection_id}/{cid}{arm}"
                if len(set(samples)) == 1 and len(samples) > 1:
                    out.append(f"{where}: all {len(samples)} samples identical (one value copied)")
                if key in seen:
                    out.append(f"{where}: samples identical to {seen[key]} (reused evidence)")
                seen.setdefault(key, where)
    return out


def recompute_performance(op_dir: Path, perf: dict) -> dict[str, Any]:
    refs = (perf["baseline_collection_id"],
            perf["final_collection_id"])
    return compare.load_formal(op_dir, *refs)


def rendering_problems(op_dir: Path, recomputed: dict) -> list[str]:
    """performance.log and perf_report.md must be exactly the rendering of the recomputed compare."""
    out = []
    for name, expected in zip((protocol.PERFORMANCE_LOG, protocol.PERF_REPORT_MD), formal.render_texts(recomputed)):
        path = op_dir / name
        if path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8", errors="replace") != expected:
            out.append(f"{name} is not the rendering of the compare recomputed from raw samples (edited by hand?)")
    return out


REPORT_TAIL = "## 7. Evidence paths"   # the evidence list grows with the verifier's own files: not compared


def report_rendering_problems(op_dir: Path) -> list[tuple]:
    """``P1.report_rendering``: PERFORMANCE_REPORT.md, up to its evidence list, is what ``perf_report.py``
    renders from the evidence now (its numbers, the ledger's items and notes, the selection, the terminal
    evidence): a report edited by hand, or rendered before the evidence changed."""
    path = op_dir / protocol.PERFORMANCE_REPORT_MD
    if not path.is_file() or path.is_symlink():
        return []   # P1.files
    try:
        expected = final_report.rendered(op_dir).split(REPORT_TAIL)[0].splitlines()
    except PerftuneError as exc:
        return [("performance_evidence_invalid", f"{protocol.PERFORMANCE_REPORT_MD} cannot be rendered from the "
                 f"evidence: {exc.line()}", "P1.report_rendering", "a rendering of the evidence", exc.line())]
    actual = path.read_text(encoding="utf-8", errors="replace").split(REPORT_TAIL)[0].splitlines()
    if actual == expected:
        return []
    line = next((i for i, (a, b) in enumerate(zip(actual, expected)) if a != b), min(len(actual), len(expected)))
    shown = lambda rows: (rows[line][:100] or "(blank line)") if line < len(rows) else "(end of section)"  # noqa: E731
    return [("performance_evidence_invalid", f"{protocol.PERFORMANCE_REPORT_MD} is not the rendering of the evidence "
             f"from line {line + 1} (edited by hand, or rendered before the evidence changed: re-run perf_report.py)",
             "P1.report_rendering", shown(expected), shown(actual))]


def json_differences(claimed: Any, actual: Any, path: str = "$") -> list[str]:
    """Paths where two JSON values differ (floats compared with a 1e-9 relative tolerance)."""
    if isinstance(claimed, dict) and isinstance(actual, dict):
        out = []
        for key in sorted(set(claimed) | set(actual)):
            if key not in claimed or key not in actual:
                out.append(f"{path}.{key}: present in only one")
            else:
                out += json_differences(claimed[key], actual[key], f"{path}.{key}")
        return out
    if isinstance(claimed, list) and isinstance(actual, list):
        if len(claimed) != len(actual):
            return [f"{path}: length {len(claimed)} != recomputed {len(actual)}"]
        return [d for i, (a, b) in enumerate(zip(claimed, actual)) for d in json_differences(a, b, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(claimed, numbers) and isinstance(actual, numbers) and not isinstance(claimed, bool) \
            and not isinstance(actual, bool):
        return [] if math.isclose(claimed, actual, rel_tol=REL_TOL, abs_tol=1e-12) else \
            [f"{path}: {claimed!r} != recomputed {actual!r}"]
    return [] if claimed == actual else [f"{path}: {claimed!r} != recomputed {actual!r}"]


def correctness_record(op_dir: Path, man: manifest_mod.Manifest, sha: str, *, rerun: bool
                       ) -> tuple[dict | None, bool]:
    """The newest recorded correctness run of exactly ``sha``; re-run the tests when there is none."""
    folder = correctness.runs_dir(op_dir)
    matching = []
    for path in sorted(folder.glob("c*.json")) if folder.is_dir() else []:
        try:
            record = correctness.load_record(op_dir, path.stem)
        except PerftuneError:
            continue
        if record["executable_sha256"] == sha:
            matching.append(record)
    if matching:
        return matching[-1], False
    if not rerun:
        return None, False
    _, record = correctness.run_all(op_dir, at=evidence.utc_now())
    return (record if record["executable_sha256"] == sha else None), True


def golden_problems(op_dir: Path, man: manifest_mod.Manifest, baseline: evidence.RoundEvidence
                    ) -> tuple[list[tuple[str, str]], str]:
    """The golden contract must bind to this manifest and predate the baseline round."""
    try:
        report = golden.load_golden(op_dir, man)
    except PerftuneError as exc:
        return [("performance_evidence_invalid", f"golden contract invalid: {exc.line()}")], "unavailable"
    if report is None:
        return [], "unavailable"
    created, started = report.raw.get("created_at"), baseline.collection.get("created_at")
    if not created or not started or created > started:
        return [("performance_evidence_invalid", f"golden contract collected at {created}, not before the "
                 f"baseline round started at {started}")], "invalid"
    if report.device_id != baseline.collection.get("device_id"):
        return [("performance_evidence_invalid", "golden device differs from the measured device")], "invalid"
    return [], "joined"


def ledger_problems(op_dir: Path) -> list[str]:
    try:
        obj = ledger.load_ledger(ledger.ledger_path(op_dir))
        enum = ledger_sources.recorded_sources(op_dir, obj)
    except PerftuneError as exc:
        return [f"ledger unusable: {exc.line()}"]
    return [f"ledger {p.code}: {p.item_id}: {p.message}" for p in ledger.check(obj, enum, op_dir)]


def selection_problems(op_dir: Path, delivered_sha: str) -> list[str]:
    """The delivered code must be the version the recomputed selection chooses."""
    try:
        ranked = candidates.rank(op_dir)
        register = candidates.load_candidates(op_dir)
    except PerftuneError as exc:
        return [f"selection cannot be recomputed: {exc.line()}"]
    chosen = ranked.get("chosen")
    by_id = {c["version_id"]: c for c in register["candidates"]}
    out = []
    if chosen not in by_id:
        return [f"recomputed selection chose nothing ({ranked.get('reason')})"]
    if by_id[chosen]["executable_sha256"] != delivered_sha:
        delivered = [v for v, c in by_id.items() if c["executable_sha256"] == delivered_sha]
        out.append(f"delivered code is {delivered or 'no recorded candidate'}, but the recomputed best "
                   f"version is {chosen}")
    try:
        stored = fsio.read_json(candidates.paths(op_dir)[1], what="selection.json")
        if stored.get("chosen") != chosen:
            out.append(f"selection.json says {stored.get('chosen')!r}, recomputation says {chosen!r}")
        man = manifest_mod.load_manifest(op_dir / protocol.MANIFEST_NAME)
        out += candidates.confirm_problems(op_dir, by_id[chosen]["executable_sha256"], man.protocol.max_remeasurements)
    except PerftuneError as exc:
        out.append(exc.line())
    return out


def terminal_problems(op_dir: Path, man: manifest_mod.Manifest, perf: dict, delivered_sha: str) -> list[str]:
    """Each P0 case needs evaluable roofline, pipeline and scalar evidence from the final code."""
    path = op_dir / protocol.PERF_DIR / TERMINAL_NAME
    try:
        obj = fsio.read_json(path, what="terminal evidence")
        schemas.validate(obj, "terminal_evidence", path)
    except PerftuneError as exc:
        return [exc.line()]
    out = []
    built_from = obj["round"]["collection_id"]
    if built_from != perf["final_collection_id"]:
        out.append(f"terminal evidence was built from {built_from}, not the final round")
    if obj["round"].get("executable_sha256") not in (None, delivered_sha):
        out.append("terminal evidence describes other code than the delivered sources")
    cases = {entry["case"]: entry for entry in obj["cases"]}
    for case in man.cases:
        entry = cases.get(case.id)
        if entry is None:
            out.append(f"case {case.id}: no terminal evidence")
            continue
        out += [f"case {case.id}: {msg}" for msg in _terminal_entry_problems(entry)]
    if obj.get("backend") == "msprof":
        out += profiler.verify(op_dir, obj, man)   # re-derived from profiler tables and timelines
    return out


def _terminal_entry_problems(entry: dict) -> list[str]:
    roof = (entry.get("roofline_terminal") or {}).get("status")
    pipe = (entry.get("pipeline_evidence") or {}).get("status")
    scalar = (entry.get("scalar_evidence") or {}).get("dominant")
    out = []
    if roof not in protocol.ROOFLINE_IDEAL + protocol.ROOFLINE_RESIDUAL:
        out.append(f"roofline_terminal.status {roof!r} is not evaluable")
    if pipe not in protocol.PIPELINE_ALLOWED:
        out.append(f"pipeline_evidence.status {pipe!r} is not evaluable")
    if not isinstance(scalar, bool):
        out.append(f"scalar_evidence.dominant {scalar!r} is not true/false")
    for key in ("pipeline_evidence", "scalar_evidence"):
        if not (entry.get(key) or {}).get("grounds"):
            out.append(f"{key} has no recorded grounds")
    return out
