"""Gate P10 on a deterministic backend (pypto-sim): the verifier re-simulates, identical time or FAIL.

A simulator gives the same cycles for the same code and inputs, so the verifier does not trust the
rounds at all and needs no tolerance: it launches every manifest case once more on the delivered
sources, and every target case once more on the saved baseline code (skipped when the baseline is
the delivered code: the same launch), one fresh process per launch (``collect.case_jobs`` of them
side by side, ``--jobs``/``PERFTUNE_JOBS``, default the cores), and requires each time to equal the
recorded samples exactly: the final round's (both arms' baseline side too when paired) and the
baseline round's. Equal samples make every delivered speed-up reproduce exactly (P4 recomputes
the rest from them). The raw files are archived under ``docs/perf/stage5_remeasure/rm_NNN/``
(``final/<case>/`` and ``baseline/<case>/``, sealed in ``remeasure.json``) and cited like the
paired re-measurement of a noisy backend (:mod:`.remeasure`).

Forced fresh data (``force_fresh``: the cases ``P10.plausibility`` finds implausible): each such target
case is launched once more on the delivered and on the baseline code, both on the same new data of the
frozen shapes drawn with a seed chosen at check time (``cpu_runner --fresh-seed``, one launch per arm,
``fresh/<arm>/<case>/``); the fresh speed-up must be at least ``remeasure.FRESH_SHARE`` of the
re-simulated seed-42 one (:func:`.remeasure.fresh_problem`, ``P10.fresh_data``, ``cheating``): a kernel
whose simulated time depends on having seen the frozen inputs. Not forced, nothing is launched on fresh
data (a simulated launch's time depends on its tile program, not on the host's caches), nor when the
baseline code is the delivered code (one code: nothing can collapse).

The wrapper/op timing of :mod:`.remeasure` is not run here: the host time of a simulated launch
(compile + simulation, seconds) says nothing of the device time. Work moved out of the kernel still
fails P9: the probe measures the op's own output against the frozen reference.
Returns ``(category, message)`` pairs: ``performance_evidence_invalid`` for a differing time or a
failed launch, ``env_error`` when the backend cannot run on this machine; a fresh-data collapse is
``("cheating", message, "P10.fresh_data")``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod
from ..contract import protocol
from ..errors import CheckFailed, EnvError, PerftuneError
from ..measure import collect, evidence
from ..measure.backends import repeat_dir_name
from ..measure.backends.case_adapter import find_runner
from . import remeasure

Problem = tuple  # (category, message) or (category, message, check id)
RULE = "deterministic backend: every re-simulated time equals the recorded samples exactly"


def applies(backend: str) -> bool:
    return backend in protocol.DETERMINISTIC_BACKENDS


def _recorded(rnd: evidence.RoundEvidence, case_id: str, arm: str) -> list[float]:
    case = rnd.cases.get(case_id)
    if case is None:
        return []
    if arm == "baseline":   # the baseline arm of a paired round
        return sorted(set(case.baseline_samples_us or [])) if rnd.paired else []
    return sorted(set(case.samples_us))


def _launch(ctx: collect.Context, spec, case, folder: Path, recorded: list[float], what: str
            ) -> tuple[dict[str, Any], str | None]:
    try:
        again = ctx.backend.run_repeat(spec, case, folder / repeat_dir_name(1)).duration_us
    except (CheckFailed, PerftuneError) as exc:
        return {"resimulated_us": None}, f"re-simulation of {case.id} on the {what} failed: {exc.line()}"
    row = {"resimulated_us": again, "recorded_us": recorded, "identical": recorded == [again]}
    if not row["identical"]:
        return row, (f"re-simulated {case.id} on the {what}: {again} us, the rounds recorded {recorded} us "
                     "(not identical)")
    return row, None


def _fresh_launch(ctx: collect.Context, spec, case, folder: Path, seed: int) -> tuple[float | None, str | None]:
    try:
        repeat = folder / evidence.case_dir_name(case.id) / repeat_dir_name(1)
        return ctx.backend.run_repeat(dataclasses.replace(spec, fresh_seed=seed), case, repeat).duration_us, None
    except (CheckFailed, PerftuneError) as exc:
        return None, f"fresh-data launch of {case.id} on the {folder.name} code failed: {exc.line()}"


def fresh(ctx: collect.Context, specs: dict[str, Any], case, folder: Path, seed42: float | None
          ) -> tuple[dict[str, Any], Problem | None]:
    """One launch per arm (``specs``: baseline, final; side by side) on the same new data drawn now, and the
    fresh-data rule on their speed-up."""
    seed = secrets.randbelow(2 ** 30) + 10_000
    with ThreadPoolExecutor(max_workers=collect.case_jobs(ctx)) as pool:
        launched = dict(zip(specs, pool.map(lambda arm: _fresh_launch(ctx, specs[arm], case, folder / arm, seed),
                                            specs)))
    row: dict[str, Any] = {"seed": seed, **{f"{arm}_us": us for arm, (us, _) in launched.items()}}
    failed = [problem for _, problem in launched.values() if problem]
    if failed:
        row["problem"] = failed[0]
        return row, ("performance_evidence_invalid", failed[0])
    row["speedup"] = round(row["baseline_us"] / row["final_us"], 9)
    row["problem"] = miss = remeasure.fresh_problem(seed42, row["speedup"])
    return row, (("cheating", f"case {case.id}: {miss}", "P10.fresh_data") if miss else None)


def run(op_dir: Path, man: manifest_mod.Manifest, base: evidence.RoundEvidence,
        final: evidence.RoundEvidence, force_fresh: set[str] | frozenset = frozenset()
        ) -> tuple[list[Problem], dict[str, Any]]:
    """Re-simulate; (problems, the note cited in stage5_check.json under ``remeasure``); ``force_fresh``: the
    target cases also launched on fresh data (:func:`fresh`)."""
    try:
        ctx = collect.prepare(op_dir, collect.Overrides())
    except EnvError as exc:
        return ([("env_error", f"cannot re-simulate on {final.collection['backend']}: {exc.line()}")],
                {"status": "not_run", "reason": exc.line()})
    started = time.monotonic()
    same_code = base.collection["executable_sha256"] == final.collection["executable_sha256"]
    version = op_dir if same_code else remeasure.baseline_code(op_dir, base, final)
    base_spec = dataclasses.replace(ctx.spec, runner=find_runner(version))
    folder = remeasure.reserve(op_dir)
    targets = [case for case in ctx.manifest.cases if case.id in man.target_case_ids]
    wanted = {(case.id, "final"): _recorded(final, case.id, "final") for case in ctx.manifest.cases}
    wanted |= {(case.id, "baseline"): sorted(set(_recorded(base, case.id, "final") + _recorded(final, case.id, "baseline")))
               for case in targets}
    launches = [(case, "final", ctx.spec, "delivered code") for case in ctx.manifest.cases]
    launches += [] if same_code else [(case, "baseline", base_spec, "baseline code") for case in targets]
    with ThreadPoolExecutor(max_workers=collect.case_jobs(ctx)) as pool:   # fresh processes side by side
        done = dict(zip([(case.id, arm) for case, arm, _spec, _what in launches], pool.map(
            lambda job: _launch(ctx, job[2], job[0], folder / job[1] / evidence.case_dir_name(job[0].id),
                                wanted[(job[0].id, job[1])], job[3]), launches)))
    problems: list[Problem] = []
    rows = []
    for case in ctx.manifest.cases:
        name = evidence.case_dir_name(case.id)
        row, miss = done[(case.id, "final")]
        problems += [("performance_evidence_invalid", miss)] if miss else []
        entry = {"case": case.id, "final": row}
        if case.id in man.target_case_ids:
            want = wanted[(case.id, "baseline")]
            if same_code:
                same = row.get("resimulated_us")
                entry["baseline"] = {"resimulated_us": same, "recorded_us": want, "identical": want == [same],
                                     "note": "baseline code = delivered code: the final launch"}
                miss = None if want == [same] else f"baseline {case.id}: recorded {want} us, re-simulated {same} us"
            else:
                entry["baseline"], miss = done[(case.id, "baseline")]
            problems += [("performance_evidence_invalid", miss)] if miss else []
            pair = (entry["baseline"].get("resimulated_us"), row.get("resimulated_us"))
            entry["speedup"] = round(pair[0] / pair[1], 9) if all(pair) else None
            if case.id in force_fresh:   # P10.plausibility found it implausible
                entry["fresh"], miss = ({"not_run": "baseline code = delivered code"}, None) if same_code else \
                    fresh(ctx, {"baseline": base_spec, "final": ctx.spec}, case, folder / "fresh", entry["speedup"])
                problems += [miss] if miss else []
        entry["inputs"] = [list(map(list, k)) for k in remeasure.input_keys(folder / "final" / name)]
        rows.append(entry)
    note = {"status": "run", "method": "resimulation", "path": fsio.display_path(folder, op_dir),
            "seconds": round(time.monotonic() - started, 3), "baseline_code": fsio.display_path(version, op_dir),
            "rule": {"deterministic": RULE, "fresh_share": remeasure.FRESH_SHARE,
                     "fresh_min_speedup": remeasure.FRESH_MIN_SPEEDUP, "forced_fresh": sorted(force_fresh)},
            "cases": rows}
    note["evidence_seal"] = evidence.evidence_seal(folder)
    fsio.write_json(folder / "remeasure.json", note)
    note["remeasure_json_sha256"] = hashlib.sha256((folder / "remeasure.json").read_bytes()).hexdigest()
    return problems, note


def replay(op_dir: Path, note: dict[str, Any]) -> tuple[list[Problem], dict[str, Any]]:
    """P10 re-derived from a cited re-simulation archive (``verify/rederive.py``): the archive's identity and
    seal (``remeasure.load_archive``) and every case's recorded identity of re-simulated and recorded times."""
    _folder, archive, problems = remeasure.load_archive(op_dir, note)
    problems = [p[:2] for p in problems]
    for row in archive.get("cases", []):
        for arm in ("final", "baseline"):
            if (row.get(arm) or {}).get("identical") is False:
                problems.append(("performance_evidence_invalid", f"{arm} {row['case']}: re-simulated "
                                 f"{row[arm].get('resimulated_us')} us, recorded {row[arm].get('recorded_us')} us"))
    return problems, archive
