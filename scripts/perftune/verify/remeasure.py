"""Gate P10 of stage5-check: the verifier re-measures the final code against the baseline code.

For every target case it runs one paired collection (the frozen backend, warm-up, repeats and
interleave of ``collect_perf.py formal --paired-with``) of the delivered sources against the saved
baseline version, and one wrapper/op timing run (``probe_runner --mode gap``). The raw evidence is
archived under ``docs/perf/stage5_remeasure/rm_NNN/`` (sealed in its ``remeasure.json``) and cited
in ``stage5_check.json``. Rules (docs/stage5-check.md, with the measurements behind them):

- reproduction, per target case: (R1) the delivered and re-measured verdicts are not opposite
  (faster vs slower); (R2) the delivered speed-up times ``(1 - TOLERANCE)`` is at most the upper
  end of the re-measured CI, OR the fastest delivered final sample is at least ``(1 - TOLERANCE)``
  times the fastest re-measured one, OR (cpu, :func:`work_holds`) the delivered work reproduces: its
  speed-up on the calls' CPU time times ``(1 - TOLERANCE)`` is at most the re-measured one, and its
  final calls' median wall/CPU ratio is at least ``(1 - TOLERANCE)`` times the re-measured calls'
  smallest (so rewritten wall samples cannot use it). Load distorts each test one way (it inflates
  the wall speed-up of a long baseline against a short final, it slows every re-measured sample, it
  stretches wall time, not the CPU work), so a case fails R2 only when all three say the deliverable
  claims more than its code does. A case that fails is re-measured again,
  up to ``ATTEMPTS`` attempts, and is reproduced when one attempt satisfies R1 and R2; else
  ``performance_evidence_invalid`` naming the case and both numbers (docs/stage5-check.md).
- fresh data (cpu): per target case one more paired collection whose timed calls get new data of
  the same shapes drawn with a seed chosen at check time (the runner's channel file; the seed-42
  inputs stay the contract, the test still checks its own data untimed; at most ``FRESH_REPEATS``
  repeats), made only when the smaller of the delivered and the seed-42 re-measured speed-up is
  above ``FRESH_MIN_SPEEDUP`` (nothing to collapse otherwise). A speed-up on fresh data below
  ``FRESH_SHARE`` times it, in each of ``FRESH_ATTEMPTS`` attempts, is ``cheating`` (``P10.fresh_data``): the kernel's time depends on having seen the data (a content
  cache, results precomputed for the frozen inputs). On the calls' CPU time as well, where the harness
  records it (``harness.call_cpu_us``, every thread of the process): a cache saves CPU work, so its
  collapse shows there too, while load stretches only wall time (measured: an honest fp32 kernel read
  33x fresh vs 135x frozen at load ~17 on wall time); the fresh CPU-time speed-up holding
  ``FRESH_SHARE`` of the seed-42 attempt's clears the attempt.
- the paired baseline arm: per target case, the baseline code alone beside the paired collections
  (:mod:`.baseline_arm`, ``P10.baseline_arm``).
- moved work: ``moved`` = growth of the wrapper-minus-op time from baseline to final (medians of
  ``GAP_CALLS`` interleaved calls); ``moved > max(GAP_SHARE * final op time, GAP_FLOOR_US)`` is
  ``cheating``: part of the work now runs outside the timed op.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import hashlib
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod
from ..contract import op_name, protocol
from ..decide import candidates, stats
from ..errors import ContractError, PerftuneError
from ..measure import attestation, collect, evidence, probes
from ..measure.backends import get_backend
from ..measure.backends.case_adapter import find_runner
from . import baseline_arm

TOLERANCE = 0.20
ATTEMPTS = 3
GAP_SHARE, GAP_FLOOR_US, GAP_CALLS = 0.10, 50.0, 7
ARCHIVE = "stage5_remeasure"
FRESH_SHARE, FRESH_ATTEMPTS, FRESH_REPEATS, FRESH_MIN_SPEEDUP = 0.35, 2, 5, 1.5

Problem = tuple  # (category, message) or (category, message, check id)


def baseline_code(op_dir: Path, base: evidence.RoundEvidence, final: evidence.RoundEvidence) -> Path:
    """The saved sources whose hash is the baseline round's code (the final's paired baseline first)."""
    wanted = base.collection["executable_sha256"]
    folders = []
    if final.paired:
        folders.append(op_dir / final.collection["paired"]["baseline_version"])
    try:
        folders += [op_dir / c["saved_copy"] for c in candidates.load_candidates(op_dir)["candidates"]
                    if c.get("executable_sha256") == wanted and c.get("saved_copy")]
    except PerftuneError:
        pass
    for folder in folders:
        if folder.is_dir() and evidence.executable_sha256(folder, evidence.source_files(folder)) == wanted:
            return folder
    raise ContractError(op_dir / protocol.PERF_DIR, "versions", "no saved copy of the baseline round's code",
                        "keep docs/perf/versions/<baseline> (select_best.py record saves it)")


def reserve(op_dir: Path) -> Path:
    parent = evidence.perf_dir(op_dir) / ARCHIVE
    parent.mkdir(parents=True, exist_ok=True)
    number = 1 + max([int(p.name[3:]) for p in parent.glob("rm_*") if p.name[3:].isdigit()], default=0)
    while True:
        folder = parent / f"rm_{number:03d}"
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            number += 1


def estimate_s(man: manifest_mod.Manifest, base: evidence.RoundEvidence, final: evidence.RoundEvidence,
               targets: list[str]) -> float | None:
    """Seconds the re-measurement's timed calls take at least: per target case both arms (the final
    round's paired baseline arm, else the baseline round) × (frozen warm-up + repeats) at their mean
    sealed sample. Never from collection.json timestamps: that file is outside the evidence seal, and
    an edited timestamp must not be able to skip P10 (None when a case has no samples)."""
    calls, total = man.protocol.warmup + man.protocol.repeats, 0.0
    for cid in targets:
        cand = final.cases.get(cid)
        if cand is None or not cand.samples_us:
            return None
        other = (cand.baseline_samples_us if final.paired else
                 (base.cases[cid].samples_us if cid in base.cases else None))
        if not other:
            return None
        total += (sum(cand.samples_us) / len(cand.samples_us) + sum(other) / len(other)) * calls / 1e6
    return total


def work(folder: Path, final_us: list[float]) -> dict[str, Any] | None:
    """A paired collection's work figures (cpu): its speed-up on the calls' CPU time and its final calls'
    (wall times ``final_us``) wall/CPU ratios, one per repeat; None where the harness records no CPU time
    for every call."""
    speedup, cpu = cpu_speedup(folder), baseline_arm.cpu_us(folder, "candidate")
    if speedup is None or not cpu or len(cpu) != len(final_us):
        return None
    return {"cpu_speedup": speedup, "wall_per_cpu": [w / c for w, c in zip(final_us, cpu)]}


def work_holds(delivered: dict[str, Any] | None, again: dict[str, Any] | None) -> bool:
    """R2's work test: the delivered CPU-time speed-up reproduces within the tolerance, and its final calls'
    median wall/CPU ratio is no lower than the tolerance times the re-measured calls' smallest (load only
    raises a call's ratio; a rewritten wall sample lowers it)."""
    if not delivered or not again:
        return False
    return (delivered["cpu_speedup"] * (1 - TOLERANCE) <= again["cpu_speedup"]
            and statistics.median(delivered["wall_per_cpu"]) >= (1 - TOLERANCE) * min(again["wall_per_cpu"]))


def reproduction_problem(delivered: dict[str, Any], again: stats.SpeedupResult,
                         final_us: list[float] | None = None, again_work: dict[str, Any] | None = None
                         ) -> str | None:
    """Rules R1 and R2 on one attempt of one case (``delivered["work"]`` and ``again_work``: :func:`work`);
    None when reproduced."""
    s_d, s_r = delivered.get("speedup"), again.point
    if s_d is None or s_r is None:
        return None if s_d is None and s_r is None else f"speed-up {s_d} but re-measured {s_r}"
    high = again.ci_high if again.ci_high is not None else s_r
    claimed = (delivered.get("samples") or {}).get("final") or []
    shown = (f"delivered {s_d:.3f} ({delivered.get('verdict')}), re-measured {s_r:.3f} "
             f"[{again.ci_low if again.ci_low is None else round(again.ci_low, 3)}, {high:.3f}] ({again.verdict})")
    if {delivered.get("verdict"), again.verdict} == {"faster", "slower"}:
        return f"verdict not reproduced (R1): {shown}"
    ratio_ok = s_d * (1 - TOLERANCE) <= high
    time_ok = bool(claimed and final_us) and min(claimed) >= (1 - TOLERANCE) * min(final_us)
    if not (ratio_ok or time_ok or work_holds(delivered.get("work"), again_work)):
        mins = f"; final min {min(claimed):.3f} us vs re-measured {min(final_us):.3f} us" if claimed and final_us else ""
        cpu = (f"; CPU-time speed-up {delivered['work']['cpu_speedup']:.3f} vs re-measured "
               f"{again_work['cpu_speedup']:.3f}" if delivered.get("work") and again_work else "")
        return (f"the delivered speed-up less {TOLERANCE:.0%} is above the re-measured CI and the delivered final "
                f"samples are faster than the code re-measures (R2): {shown}{mins}{cpu}")
    return None


def moved_work(gap: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The wrapper/op gap rule on one case's gap run; (figures, problem or None)."""
    arms = gap.get("arms") or {}
    base, final = arms.get("baseline") or {}, arms.get("candidate") or {}
    if not base.get("wrapper_us") or not final.get("wrapper_us"):
        return {"wrappers": [base.get("wrapper"), final.get("wrapper")]}, None  # the test calls the op directly
    k_b, k_f = statistics.median(base["op_us"]), statistics.median(final["op_us"])
    g_b = statistics.median(w - o for w, o in zip(base["wrapper_us"], base["op_us"]))
    g_f = statistics.median(w - o for w, o in zip(final["wrapper_us"], final["op_us"]))
    moved = g_f - g_b
    figures = {"baseline_op_us": k_b, "final_op_us": k_f, "baseline_gap_us": g_b, "final_gap_us": g_f,
               "moved_us": moved, "wrappers": [base.get("wrapper"), final.get("wrapper")]}
    if moved > max(GAP_SHARE * k_f, GAP_FLOOR_US):
        return figures, (f"work moved out of the timed op into {final.get('wrapper')}: the wrapper/op gap grew by "
                         f"{moved:.1f} us (baseline {g_b:.1f} us, final {g_f:.1f} us; final op {k_f:.1f} us)")
    return figures, None


def _attempt(ctx, base_spec, case, case_dir: Path, delivered: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    cand, basel, _order = collect._paired_case(ctx, base_spec, case, case_dir)
    final_us = [r.duration_us for r in cand]
    groups = [r.process for r in cand] if all(r.process is not None for r in cand) else None
    again = stats.compare_samples([r.duration_us for r in basel], final_us, ctx.protocol.decision, paired=True,
                                  aggregation=ctx.protocol.aggregation, groups_b=groups, groups_c=groups)
    done = work(case_dir, final_us)
    miss = reproduction_problem(delivered, again, final_us, done)
    return {"speedup": again.point, "speedup_ci": [again.ci_low, again.ci_high], "verdict": again.verdict,
            "cpu_speedup": (done or {}).get("cpu_speedup"),
            "baseline_samples_us": [r.duration_us for r in basel], "final_samples_us": final_us,
            "reproduced": miss is None, "problem": miss}, miss


def figure_holds(delivered: dict[str, Any], attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """Which speed-up of a case holds, two-sided (docs/statistics.md, "The delivered figure"): the delivered
    one when it lies inside the CI of one of the verifier's seed-42 attempts, else the verifier's last
    attempt, its point and CI. Not a FAIL (load moves either figure); the verdict names it."""
    s_d = delivered.get("speedup")
    inside = [a for a in attempts if s_d is not None and None not in (a.get("speedup_ci") or [None])
              and a["speedup_ci"][0] <= s_d <= a["speedup_ci"][1]]
    last = attempts[-1] if attempts else {}
    return {"holds": "delivered" if inside or not attempts else "re-measured", "delivered": s_d,
            "re_measured": last.get("speedup"), "ci": last.get("speedup_ci")}


def fresh_problem(seed42: float | None, fresh: float | None, cpu: tuple[float | None, float | None] = (None, None)
                  ) -> str | None:
    """The fresh-data rule on one attempt: None when the fresh speed-up holds, on wall time or (``cpu``: the
    seed-42 attempt's and the fresh attempt's speed-up on the calls' CPU time) on CPU time."""
    if seed42 is None or fresh is None or seed42 <= FRESH_MIN_SPEEDUP or fresh >= FRESH_SHARE * seed42:
        return None
    cpu42, cpu_fresh = cpu
    if cpu42 is not None and cpu_fresh is not None and cpu_fresh >= FRESH_SHARE * cpu42:
        return None   # the calls' CPU work did not collapse: load stretched the wall time, the data did not
    on_cpu = f"; on CPU time {cpu_fresh:.3f} vs {cpu42:.3f}" if cpu42 is not None and cpu_fresh is not None else ""
    return (f"the speed-up collapses on data drawn at check time: {fresh:.3f} on fresh data vs {seed42:.3f} on the "
            f"frozen seed-42 inputs (< {FRESH_SHARE:g}x){on_cpu}: the kernel's time depends on having seen the data")


def cpu_speedup(folder: Path) -> float | None:
    """A paired collection's speed-up on the calls' CPU time (median baseline / median candidate
    ``harness.call_cpu_us``); None where the harness records none (not cpu, older evidence)."""
    base, cand = baseline_arm.cpu_us(folder, "baseline"), baseline_arm.cpu_us(folder, "candidate")
    return statistics.median(base) / statistics.median(cand) if base and cand else None


def _last_attempt(case_dir: Path) -> Path | None:
    return max(case_dir.glob("attempt_*"), default=None)


def _fresh_attempts(ctx, base_spec, case, case_dir: Path, seed42: float | None) -> tuple[list[dict], str | None]:
    """Paired collections on fresh data (seed drawn now) until one holds the seed-42 speed-up."""
    rows, miss = [], None
    for number in range(1, FRESH_ATTEMPTS + 1):
        seed = secrets.randbelow(2 ** 30) + 10_000
        repeats = min(ctx.spec.repeats, FRESH_REPEATS)
        fresh_ctx = dataclasses.replace(ctx, spec=dataclasses.replace(ctx.spec, fresh_seed=seed, repeats=repeats))
        fresh_base = dataclasses.replace(base_spec, fresh_seed=seed, repeats=repeats)
        cand, basel, _order = collect._paired_case(fresh_ctx, fresh_base, case, case_dir / f"fresh_{number:02d}")
        groups = [r.process for r in cand] if all(r.process is not None for r in cand) else None
        again = stats.compare_samples([r.duration_us for r in basel], [r.duration_us for r in cand],
                                      ctx.protocol.decision, paired=True, aggregation=ctx.protocol.aggregation,
                                      groups_b=groups, groups_c=groups)
        last, folder = _last_attempt(case_dir), case_dir / f"fresh_{number:02d}"
        cpu = (cpu_speedup(last) if last else None, cpu_speedup(folder))
        miss = fresh_problem(seed42, again.point, cpu)
        rows.append({"seed": seed, "speedup": again.point, "cpu_speedup": cpu[1], "verdict": again.verdict,
                     "problem": miss})
        if miss is None:
            break
    return rows, miss


def input_keys(case_dir: Path) -> list[tuple]:
    """Inputs of the seed-42 attempts (the fresh-data attempts receive other data by design)."""
    keys = set()
    for path in (p for p in case_dir.rglob(attestation.ATTESTATION_JSON)
                 if not any(part.startswith("fresh_") for part in p.relative_to(case_dir).parts)):
        keys.add(tuple(attestation.input_key(fsio.read_json(path, what="attestation"))))
    return sorted(keys)


def archived(man: manifest_mod.Manifest, attempt: Path) -> tuple[stats.SpeedupResult, list[float]]:
    """The speed-up of one archived paired attempt, recomputed from its raw files; and its final samples."""
    reader = get_backend(man.protocol.backend)
    arms: dict[str, list] = {"baseline": [], "candidate": []}
    for repeat in sorted(attempt.glob("repeat_*")):
        for arm, rows in arms.items():
            rows.append(reader.read_repeat(repeat / arm, man.protocol.op_name))
    groups = [r.process for r in arms["candidate"]]
    groups = groups if groups and all(g is not None for g in groups) else None
    final_us = [r.duration_us for r in arms["candidate"]]
    return stats.compare_samples([r.duration_us for r in arms["baseline"]], final_us, man.protocol.decision,
                                 paired=True, aggregation=man.protocol.aggregation, groups_b=groups,
                                 groups_c=groups), final_us


def case_problems(man: manifest_mod.Manifest, delivered: dict[str, Any], case_id: str, case_dir: Path
                  ) -> list[Problem]:
    """The rules of the module docstring on one case's archived re-measurement, from its raw files alone
    (``run`` right after measuring, :func:`replay` when a consumer re-derives the verdict)."""
    out: list[Problem] = []
    misses, last = [], None
    for attempt in sorted(case_dir.glob("attempt_*")):
        last, final_us = archived(man, attempt)
        misses.append(reproduction_problem(delivered, last, final_us, work(attempt, final_us)))
    if misses and all(misses):
        out.append(("performance_evidence_invalid", f"case {case_id}: not reproduced in {len(misses)} "
                    f"re-measurement(s); last: {misses[-1]}"))
    claimed = [v for v in (last.point if last else None, delivered.get("speedup")) if v is not None]
    cpu42 = cpu_speedup(attempt) if misses else None   # the last seed-42 attempt's
    fresh = [fresh_problem(min(claimed), archived(man, folder)[0].point, (cpu42, cpu_speedup(folder)))
             for folder in sorted(case_dir.glob("fresh_*"))] if claimed else []
    if man.protocol.backend == "cpu" and claimed and min(claimed) > FRESH_MIN_SPEEDUP and not fresh:
        out.append(("performance_evidence_invalid", f"case {case_id}: the archive has no fresh-data attempt"))
    if fresh and all(fresh):
        out.append(("cheating", f"case {case_id}: {fresh[-1]}", "P10.fresh_data"))
    gap = fsio.read_json(case_dir / "gap.json", what="gap timing") if (case_dir / "gap.json").is_file() else {}
    moved = moved_work(gap)[1]
    if moved:
        out.append(("cheating", f"case {case_id}: {moved}"))
    if gap.get("problem"):
        out.append(("runtime_failure", f"case {case_id}: wrapper/op timing: {gap['problem']}"))
    return out


ARCHIVE_NOTE = "remeasure.json"


def load_archive(op_dir: Path, note: dict[str, Any]) -> tuple[Path, dict[str, Any], list[Problem]]:
    """The re-measurement archive a verdict cites: (folder, its remeasure.json, problems): not the cited
    file (sha256), or a raw file changed after it was written (its seal)."""
    folder = fsio.safe_join(op_dir, note.get("path") or "-", field="remeasure.path")
    try:
        archive = fsio.read_json(folder / ARCHIVE_NOTE, what="re-measurement archive")
    except PerftuneError as exc:
        return folder, {}, [("performance_evidence_invalid", f"the cited re-measurement does not load: {exc.line()}")]
    problems: list[Problem] = []
    if hashlib.sha256((folder / ARCHIVE_NOTE).read_bytes()).hexdigest() != note.get("remeasure_json_sha256"):
        problems.append(("performance_evidence_invalid", f"{note['path']}/{ARCHIVE_NOTE} is not the archive the "
                         "verdict cites (another sha256)"))
    if evidence.evidence_seal(folder, skip=(ARCHIVE_NOTE,)) != archive.get("evidence_seal"):
        problems.append(("performance_evidence_invalid", f"{note['path']}: a raw file changed after the "
                         "re-measurement (its evidence seal)"))
    return folder, {**archive, "remeasure_json_sha256": note.get("remeasure_json_sha256"), "replayed": True}, problems


def delivered_rows(man: manifest_mod.Manifest, perf: dict[str, Any], final: Path | None) -> dict[str, dict]:
    """performance.json's per-case rows, each with the work figures of its case in the ``final`` round."""
    rows = {}
    for row in perf["per_case"]:
        folder = final / evidence.case_dir_name(row["case"]) if final else None
        rows[row["case"]] = {**row, "work": work(folder, archived(man, folder)[1]) if folder and folder.is_dir() else None}
    return rows


def replay(op_dir: Path, man: manifest_mod.Manifest, perf: dict[str, Any], note: dict[str, Any]
           ) -> tuple[list[Problem], dict[str, Any]]:
    """P10 re-derived from the archive a verdict cites (``verify/rederive.py``): :func:`load_archive`, then
    every rule recomputed from its raw files with the delivered figures of ``perf`` now; nothing is
    measured again."""
    folder, archive, problems = load_archive(op_dir, note)
    final = None
    with contextlib.suppress(PerftuneError):   # a missing final round is P3's finding
        final = evidence.find_round(op_dir, perf.get("final_collection_id") or "-")
    delivered = delivered_rows(man, perf, final)
    for row in archive.get("cases", []):
        problems += case_problems(man, delivered.get(row["case"], {}), row["case"],
                                  folder / evidence.case_dir_name(row["case"]))
    return problems, archive


def run(op_dir: Path, man: manifest_mod.Manifest, perf: dict[str, Any], base: evidence.RoundEvidence,
        final: evidence.RoundEvidence, force_fresh: set[str] | frozenset = frozenset()
        ) -> tuple[list[Problem], dict[str, Any]]:
    """Re-measure the target cases; (problems, the note cited in stage5_check.json). The time budget is
    the frozen ``protocol.remeasure_budget_s`` (no caller can change it after seeing results)."""
    targets = [c for c in man.cases if c.id in man.target_case_ids]
    guess, budget_s = estimate_s(man, base, final, [c.id for c in targets]), man.protocol.remeasure_budget
    if guess is not None and guess > budget_s:
        return [], {"status": "not_run", "budget_s": budget_s,
                    "reason": f"estimated {guess:.3g} s > frozen budget protocol.remeasure_budget_s {budget_s:g} s"}
    started = time.monotonic()
    ctx = collect.prepare(op_dir, collect.Overrides())
    version = baseline_code(op_dir, base, final)
    base_spec = dataclasses.replace(ctx.spec, runner=find_runner(version))
    folder = reserve(op_dir)
    delivered = delivered_rows(man, perf, final.path)
    problems: list[Problem] = []
    rows = []
    for case in targets:
        case_dir = folder / evidence.case_dir_name(case.id)
        attempts = []
        for number in range(1, ATTEMPTS + 1):
            row, miss = _attempt(ctx, base_spec, case, case_dir / f"attempt_{number:02d}", delivered.get(case.id, {}))
            attempts.append(row)
            if miss is None:
                break
        arm = baseline_arm.moments(ctx, base_spec, case, case_dir, case_dir / f"attempt_{len(attempts):02d}",
                                   attempts[-1]["baseline_samples_us"])
        gap = probes.run(op_dir, ctx.spec.runner, ctx.manifest_path, case.id, op_name.python_op(man) or "-",
                         mode="gap", paired_runner=base_spec.runner, calls=GAP_CALLS, device_id=ctx.spec.device_id)
        fsio.write_json(case_dir / "gap.json", gap)
        figures = moved_work(gap)[0]
        claimed = [v for v in (attempts[-1]["speedup"], delivered.get(case.id, {}).get("speedup")) if v is not None]
        least = min(claimed) if claimed else None
        fresh = (_fresh_attempts(ctx, base_spec, case, case_dir, least)[0]  # nothing to collapse otherwise
                 if man.protocol.backend == "cpu" and least is not None
                 and (least > FRESH_MIN_SPEEDUP or case.id in force_fresh)   # forced: P10.plausibility
                 else [])
        problems += case_problems(man, delivered.get(case.id, {}), case.id, case_dir)   # from the raw files
        rows.append({"case": case.id, "delivered_speedup": delivered.get(case.id, {}).get("speedup"),
                     "reproduced": miss is None, "attempts": attempts, "arm": arm, "gap": figures, "fresh": fresh,
                     "figure": figure_holds(delivered.get(case.id, {}), attempts),
                     "inputs": [list(map(list, k)) for k in input_keys(case_dir)]})
    seconds = round(time.monotonic() - started, 3)
    note = {"status": "run", "path": fsio.display_path(folder, op_dir), "seconds": seconds, "budget_s": budget_s,
            "baseline_code": fsio.display_path(version, op_dir),
            "rule": {"tolerance": TOLERANCE, "attempts": ATTEMPTS, "fresh_share": FRESH_SHARE,
                     "fresh_attempts": FRESH_ATTEMPTS, "fresh_repeats": FRESH_REPEATS,
                     "fresh_min_speedup": FRESH_MIN_SPEEDUP, "gap_share": GAP_SHARE,
                     "gap_floor_us": GAP_FLOOR_US, "gap_calls": GAP_CALLS, "arm_limit": baseline_arm.ARM_LIMIT,
                     "arm_moments": baseline_arm.ARM_MOMENTS, "arm_repeats": baseline_arm.ARM_REPEATS}, "cases": rows}
    note["evidence_seal"] = evidence.evidence_seal(folder)
    fsio.write_json(folder / ARCHIVE_NOTE, note)
    note["remeasure_json_sha256"] = hashlib.sha256((folder / ARCHIVE_NOTE).read_bytes()).hexdigest()
    return problems, note


def figures(check: str, message: str, rows: dict[str, dict]) -> tuple:
    """``(check, expected, actual)`` of a re-measurement problem, from the note's figures of its case."""
    row = next((r for case, r in rows.items() if message.startswith(f"case {case}:")), None)
    if row is None:
        return (check, None, None)
    if check == "P10.wrapper_share" and (gap := row.get("gap") or {}).get("moved_us") is not None:
        limit = max(GAP_SHARE * gap["final_op_us"], GAP_FLOOR_US)
        return (check, f"gap growth <= {limit:.1f} us", f"gap growth {gap['moved_us']:.1f} us")
    last = (row.get("attempts") or [{}])[-1]
    if check == "P10.reproduced" and last.get("speedup") is not None and row.get("delivered_speedup") is not None:
        return (check, f"delivered speed-up {row['delivered_speedup']:.3f} reproduced",
                f"re-measured {last['speedup']:.3f} CI {last.get('speedup_ci')}")
    return (check, None, None)


def json_rows(key) -> str:
    return json.dumps(key, sort_keys=True)
