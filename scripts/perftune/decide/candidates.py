"""The candidate register ``docs/perf/candidates.json`` and the I/O edge of best-version selection.

``record`` appends one version that got a valid formal compare: its immutable
``evaluation_order`` (baseline 0, then in the order of the formal rounds), its code identity
(``executable_sha256``, file records of the updatable sources and a saved copy under
``docs/perf/versions/<id>/``), linked ledger items, correctness evidence (a recorded run whose hash
equals the version's), compliance evidence, the formal collection id and ``kb_gaps_open`` (any
kb_selected ledger item not terminal at recording time: such a version never ranks).

``choose`` re-checks every piece of evidence on disk, recomputes the samples of every round
(:func:`perftune.measure.evidence.load_round`) and lets :func:`perftune.decide.selection.select` decide; nothing
agent-written is trusted. ``selection.json`` carries no timestamp, so the same evidence gives a
byte-identical file; it names the chosen version's ``confirm_partner``. ``confirm`` compares a new
round of the chosen version that repeats its ranking comparison (paired with the same partner code;
independent with independent) and appends the result to ``docs/perf/confirm.json``; a version's code gets at most
``1 + protocol.max_remeasurements`` confirm attempts and at most ``max_remeasurements``
``--supersedes`` re-measurements (frozen before any result). :func:`confirm_problems` is what
stage5_check verifies: confirm ran on the chosen code within the limit, its last attempt recomputes
from its rounds, and that round does not refute the choice (prove the chosen version slower than the
reference it was chosen over); ``inconsistent`` or ``unresolved`` magnitudes are disclosed in
confirm.json and the report, never a reason to re-measure until a round fits.

Decisions: a version is recorded right after its formal round, while the working tree still holds
its code (the current hash must equal the round's); rounds must be recorded in round order; a
round belongs to one version; a non-baseline version must link at least one ledger item
(anonymous experiments are not allowed).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..measure import comparable, correctness, evidence
from .. import fsio
from . import calibration, ledger, selection
from ..contract import manifest, protocol, schemas
from ..errors import ContractError

SCHEMA_VERSION = 1
VERSIONS_DIR = protocol.VERSIONS_DIR
CONFIRM_NAME = "confirm.json"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def paths(op_dir: str | Path) -> tuple[Path, Path]:
    perf = Path(op_dir) / protocol.PERF_DIR
    return perf / protocol.CANDIDATES_NAME, perf / protocol.SELECTION_NAME


def load_candidates(op_dir: str | Path, *, required: bool = True) -> dict[str, Any]:
    path = paths(op_dir)[0]
    if not path.exists() and not required:
        return {"schema_version": SCHEMA_VERSION, "candidates": []}
    obj = fsio.read_json(path, what="candidates register")
    schemas.validate(obj, "candidates", path)
    return obj


def _is_quick(op_dir: Path, ref: str) -> bool:
    quick = Path(op_dir) / protocol.PERF_DIR / evidence.QUICK_DIR
    name = Path(ref).name   # a name, a path (relative or absolute) or a collection id, as printed (#27)
    if name.startswith(evidence.QUICK_PREFIX) or (not Path(ref).is_absolute() and (quick / ref).is_dir()):
        return True
    for path in quick.glob(f"*/{protocol.QUICK_NAME}"):
        try:
            if fsio.read_json(path).get("collection_id") == ref:
                return True
        except (ContractError, AttributeError):
            continue
    return False


def _code(op_dir: Path, man: manifest.Manifest) -> tuple[str, list[dict[str, Any]]]:
    files = evidence.source_files(op_dir, man)
    return evidence.executable_sha256(op_dir, files), [fsio.file_record(p, op_dir) for p in files]


def _correctness_problem(op_dir: Path, run_id: str | None, sha: str) -> str | None:
    if not run_id:
        return "no_correctness_evidence"
    try:
        run = correctness.load_record(op_dir, run_id)
    except ContractError as exc:
        return f"correctness_record_invalid: {exc.problem}"
    if run["executable_sha256"] != sha:
        return "correctness_hash_mismatch: the run tested other code"
    return None if run["all_passed"] else "correctness_failed"


def _save_copy(op_dir: Path, version_id: str, files: list[dict[str, Any]]) -> str:
    folder = Path(op_dir) / protocol.PERF_DIR / VERSIONS_DIR / version_id
    for record in files:
        target = fsio.safe_join(folder.parent, f"{version_id}/{record['path']}", field="saved copy")
        if target.exists():
            if fsio.sha256_file(target) != record["sha256"]:
                raise ContractError(target, "saved copy", "differs from the version's sources",
                                    "saved copies are immutable; choose a new version id")
            continue
        fsio.write_bytes(target, (Path(op_dir) / record["path"]).read_bytes(), overwrite=False)
    return fsio.display_path(folder, op_dir)


def _refusals(register: dict, man: manifest.Manifest, rnd: Any, version_id: str, sha: str, op_dir: Path) -> None:
    src = "select_best.py record"
    if not _ID.match(version_id):
        raise ContractError(src, "--version-id", f"{version_id!r} is not a safe id", "use [A-Za-z0-9._-]")
    if any(c["version_id"] == version_id for c in register["candidates"]):
        raise ContractError(src, "--version-id", f"{version_id!r} is already recorded", "version ids are immutable")
    if any(c["formal_collection_id"] == rnd.collection_id for c in register["candidates"]):
        raise ContractError(src, "--round", f"{rnd.collection_id} already belongs to another version",
                            "one formal round per version")
    newest = max((c["round"] for c in register["candidates"]), default="")
    if rnd.path.name < newest:
        raise ContractError(src, "--round", f"{rnd.path.name} is older than recorded {newest}",
                            "record versions in the order of their formal rounds")
    if rnd.collection["executable_sha256"] != sha:
        raise ContractError(src, "--round", "the round measured other code than the current sources",
                            "record a version right after its formal round, before editing")
    frozen = comparable.frozen_fields(man, fsio.sha256_file(Path(op_dir) / protocol.MANIFEST_NAME))
    for key, recorded, value in comparable.mismatches(rnd, frozen):
        what = "another manifest" if key == comparable.MANIFEST_FIELD else f"{key} {recorded!r}, frozen {value!r}"
        raise ContractError(src, "--round", f"round was collected under {what}", "re-collect the round")


def superseded(register: dict) -> dict[str, str]:
    """``{version_id: the id of the re-measurement that replaces it}``."""
    return {c["supersedes"]: c["version_id"] for c in register["candidates"] if c.get("supersedes")}


def _same_code(register: dict, sha: str, supersedes: str | None, limit: int) -> None:
    """One live entry per code: recording the same code twice would let ``choose`` keep the more
    flattering round; a re-measurement names the entry it replaces (``--supersedes``)."""
    src, gone = "select_best.py record", superseded(register)
    live = [c["version_id"] for c in register["candidates"] if c["executable_sha256"] == sha and c["version_id"] not in gone]
    if supersedes is None:
        if live:
            raise ContractError(src, "--version-id", f"this code is already recorded as {live[-1]!r}",
                                f"a re-measurement of it uses --supersedes {live[-1]}")
        return
    by_id = {c["version_id"]: c for c in register["candidates"]}
    if supersedes not in by_id:
        raise ContractError(src, "--supersedes", f"no recorded version {supersedes!r}", "name a recorded version id")
    if supersedes in gone:
        raise ContractError(src, "--supersedes", f"{supersedes!r} is already superseded by {gone[supersedes]!r}",
                            f"supersede {gone[supersedes]} instead")
    if by_id[supersedes]["executable_sha256"] != sha:
        raise ContractError(src, "--supersedes", f"{supersedes!r} is other code than the current sources",
                            "a re-measurement is of the same code; record changed code as a new version")
    done = sum(1 for c in register["candidates"] if c.get("supersedes") and c["executable_sha256"] == sha)
    if done >= limit:
        raise ContractError(src, "--supersedes", f"this code was already re-measured {done} time(s); the frozen "
                            f"limit is protocol.max_remeasurements = {limit}",
                            "report the version as unresolved; the limit is frozen before any result")


def record(op_dir: str | Path, *, version_id: str, round_ref: str, items: list[str], correctness_id: str,
           compliance: str | None, at: str, supersedes: str | None = None) -> dict[str, Any]:
    """Append a version to candidates.json (under the lock); returns the new entry.

    With ``supersedes`` the entry is a re-measurement (a newer formal round) of that version's
    code: it inherits its ledger items when none are given, and ``choose`` ranks only the newest.
    """
    root = Path(op_dir)
    if _is_quick(root, round_ref):
        raise ContractError(round_ref, "--round", "is a quick result; quick results never rank",
                            "run a formal compare round (collect_perf.py formal)")
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    rnd = evidence.load_round(root, round_ref)
    sha, files = _code(root, man)
    problem = _correctness_problem(root, correctness_id, sha)
    if problem:
        raise ContractError(correctness_id, "--correctness", problem, "run check_correctness.py on this code")
    led = ledger.load_ledger(ledger.ledger_path(root))
    known = {i["item_id"]: i for i in led["items"]}
    unknown = [i for i in items if i not in known]
    if unknown:
        raise ContractError("ledger.json", "--items", f"unknown item ids {unknown}", "link ledger item ids")
    path = paths(root)[0]
    with fsio.file_lock(path):
        register = load_candidates(root, required=False)
        _refusals(register, man, rnd, version_id, sha, root)
        if register["candidates"] and not items and not supersedes:
            raise ContractError("select_best.py record", "--items", "a non-baseline version links no ledger item",
                                "name the item ids this version implements")
        _same_code(register, sha, supersedes, man.protocol.max_remeasurements)
        if supersedes and not items:
            items = next(c["items"] for c in register["candidates"] if c["version_id"] == supersedes)
        entry = {
            "version_id": version_id, "evaluation_order": len(register["candidates"]),
            "executable_sha256": sha, "source_files": files, "saved_copy": _save_copy(root, version_id, files),
            "items": list(dict.fromkeys(items)), "correctness": {"run_id": correctness_id, "executable_sha256": sha},
            "compliance": compliance or None, "formal_collection_id": rnd.collection_id, "round": rnd.path.name,
            "kb_gaps_open": any(i["status"] not in protocol.KB_TERMINAL_STATUSES for i in led["items"]
                                if i["source_kind"] == "kb_selected"),
            "recorded_at": at, **({"supersedes": supersedes} if supersedes else {})}
        register["candidates"].append(entry)
        schemas.validate(register, "candidates", path)
        fsio.write_json(path, register)
    return entry


def rejected_items(cand: dict, ledger_items: list[dict]) -> list[str]:
    """The items ``cand`` links that are closed ``rejected``: such a version never ranks (after a
    stage5_check FAIL its items are rejected, decide/way_forward.py)."""
    status = {i["item_id"]: i["status"] for i in ledger_items}
    return [i for i in cand["items"] if status.get(i) == "rejected"]


def _copy_problem(op_dir: Path, cand: dict) -> str | None:
    for rec in cand["source_files"]:
        saved = {**rec, "path": f"{cand['saved_copy']}/{rec['path']}"}
        if not fsio.record_matches(saved, op_dir):
            return f"saved_copy_mismatch: {rec['path']}"
    return None


def _evidence(op_dir: Path, cand: dict) -> tuple[Any, str | None]:
    """(the round recomputed from raw files, ineligibility problem) of one candidate."""
    try:
        rnd = evidence.load_round(op_dir, cand["formal_collection_id"])
    except ContractError as exc:
        return None, f"round_invalid: {exc.problem}"
    problems = [
        "code_hash_mismatch: round measured other code" if rnd.collection["executable_sha256"] != cand["executable_sha256"] else None,
        _correctness_problem(op_dir, cand["correctness"]["run_id"], cand["executable_sha256"]),
        None if cand["compliance"] else "no_compliance_evidence",
        "kb_gaps_open" if cand["kb_gaps_open"] else None,
        _copy_problem(op_dir, cand)]
    found = [p for p in problems if p]
    return rnd, "; ".join(found) if found else None


def rank(op_dir: str | Path) -> dict[str, Any]:
    """Recompute the ranking from disk (pure read): the selection.json content, nothing written."""
    root = Path(op_dir)
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    register = load_candidates(root)
    if not register["candidates"]:
        raise ContractError(paths(root)[0], "candidates", "is empty", "record the baseline first")
    rounds, links, entries, gone = {}, {}, [], superseded(register)
    led = ledger.ledger_path(root)
    items = ledger.load_ledger(led)["items"] if led.is_file() else []
    for cand in register["candidates"]:
        rnd, problem = _evidence(root, cand)
        if rejected_items(cand, items):
            problem = "; ".join(filter(None, [f"item_rejected: {', '.join(rejected_items(cand, items))}", problem]))
        if cand["version_id"] in gone:
            problem = "; ".join(filter(None, [f"superseded by {gone[cand['version_id']]} (re-measured)", problem]))
        partner = None
        if rnd is not None:
            rounds[cand["version_id"]] = {cid: case.samples_us for cid, case in rnd.cases.items()}
            if rnd.paired and cand["evaluation_order"] > 0:
                partner, links[cand["version_id"]] = confirm_partner(register, cand, rnd), _arms(rnd)
                if partner is None:
                    problem = "; ".join(filter(None, [problem, "paired_partner_unknown: the ranking round's partner "
                                                      "code is no recorded version"]))
        entries.append(selection.Entry(cand["version_id"], cand["evaluation_order"], problem, partner))
    base = register["candidates"][0]
    if base["version_id"] not in rounds:
        raise ContractError(paths(root)[0], "candidates[0]", f"baseline round {base['formal_collection_id']} "
                            "is not loadable", "the frozen baseline must stay on disk")
    man, calibrated = calibration.apply(root, man)
    try:
        result = selection.select(entries, rounds, man, links, calibrated=calibrated is not None)
    except ValueError as exc:
        raise ContractError(paths(root)[0], "candidates", str(exc), "record versions in round order") from None
    result["inputs"] = {"candidates": fsio.file_record(paths(root)[0], root),
                        "manifest": fsio.file_record(root / protocol.MANIFEST_NAME, root),
                        "rounds": {c["version_id"]: c["formal_collection_id"] for c in register["candidates"]}}
    result["schema_version"] = SCHEMA_VERSION
    schemas.validate(result, "selection", paths(root)[1])
    return result


def confirm_partner(register: dict, cand: dict, rnd: Any) -> str | None:
    """The version a confirm round of ``cand`` is paired with: the recorded version whose code is the
    partner of its paired ranking round (None if no recorded version has that code); the baseline
    itself for the baseline (A/A); None (an independent round) for another version ranked on an
    independent round."""
    first = register["candidates"][0]
    if not rnd.paired:
        return first["version_id"] if cand["executable_sha256"] == first["executable_sha256"] else None
    sha = rnd.collection["paired"]["baseline_executable_sha256"]  # by code, never by folder name
    return next((c["version_id"] for c in register["candidates"] if c["executable_sha256"] == sha), None)


def choose(op_dir: str | Path) -> dict[str, Any]:
    """Recompute the ranking from disk and write selection.json; returns its content."""
    root = Path(op_dir)
    result = rank(root)
    register = load_candidates(root)
    chosen = next((c for c in register["candidates"] if c["version_id"] == result["chosen"]), None)
    result["confirm_partner"] = None if chosen is None else confirm_partner(
        register, chosen, evidence.load_round(root, chosen["formal_collection_id"]))
    schemas.validate(result, "selection", paths(root)[1])
    fsio.write_json(paths(root)[1], result)
    return result


def _kind(rnd: Any) -> str:
    return "paired" if rnd.paired else "independent"


def confirm_path(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / CONFIRM_NAME


def _arms(rnd: Any) -> dict[str, tuple]:
    """Per case (partner arm, own arm, process groups, process groups) of a paired round."""
    return {cid: c.arms for cid, c in rnd.cases.items()}


def evaluate_confirm(op_dir: str | Path, final_round: str) -> dict[str, Any]:
    """The confirm attempt of ``final_round`` for the chosen version (pure read; nothing stored).

    The round must repeat the chosen version's ranking comparison: a paired ranking round needs a
    round paired with the same partner code; an independent one an independent round, or, for the
    baseline version itself, a round paired with the baseline (A/A: ranking score 1 by definition).
    """
    root = Path(op_dir)
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    chosen = fsio.read_json(paths(root)[1], what="selection").get("chosen")
    register = load_candidates(root)
    cands = {c["version_id"]: c for c in register["candidates"]}
    if chosen not in cands:
        raise ContractError(paths(root)[1], "chosen", "no chosen version", "run 'select_best.py choose' first")
    if _is_quick(root, final_round):
        raise ContractError(final_round, "--final-round", "is a quick result", "run a formal round")
    final = evidence.load_round(root, final_round)
    ranking = cands[chosen]
    if final.collection_id == ranking["formal_collection_id"]:
        raise ContractError(final_round, "--final-round", "is the ranking round itself",
                            "collect an independent final formal round")
    if final.collection["executable_sha256"] != ranking["executable_sha256"]:
        raise ContractError(final_round, "--final-round", f"measured other code than the chosen {chosen}",
                            "restore the chosen version and collect the final round again")
    ranked = evidence.load_round(root, ranking["formal_collection_id"])
    base = register["candidates"][0]
    partner = confirm_partner(register, ranking, ranked)
    partner_sha = cands[partner]["executable_sha256"] if partner in cands else None
    man, _ = calibration.apply(root, man)
    try:
        if final.paired and partner_sha and final.collection["paired"]["baseline_executable_sha256"] == (
                ranked.collection["paired"]["baseline_executable_sha256"] if ranked.paired else partner_sha):
            out = selection.confirm_paired(_arms(ranked) if ranked.paired else None, _arms(final), man)
        elif not final.paired and not ranked.paired and partner is None:
            as_samples = lambda rnd: {cid: c.samples_us for cid, c in rnd.cases.items()}  # noqa: E731
            out = selection.confirm(as_samples(ranked), as_samples(final),
                                    as_samples(evidence.load_round(root, base["formal_collection_id"])), man)
        else:
            raise ContractError(final_round, "--final-round", f"does not repeat the ranking comparison of {chosen} "
                                f"(ranking round {ranking['round']}: {_kind(ranked)}, partner {partner})",
                                "collect_perf.py formal " + (f"--paired-with DIR/docs/perf/versions/{partner}"
                                if partner else "without --paired-with") + " (the choose output's confirm_partner) "
                                "and confirm on that round")
    except ValueError as exc:
        raise ContractError(final_round, "--final-round", str(exc), "re-collect a complete formal round") from None
    return {"chosen": chosen, "executable_sha256": ranking["executable_sha256"], "round_kind": _kind(final),
            "partner": partner, "ranking_collection_id": ranking["formal_collection_id"],
            "final_collection_id": final.collection_id, **out}


def confirm(op_dir: str | Path, final_round: str) -> dict[str, Any]:
    """Evaluate the confirm round of the chosen version and append the attempt to confirm.json."""
    root = Path(op_dir)
    attempt = evaluate_confirm(root, final_round)
    limit = manifest.load_manifest(root / protocol.MANIFEST_NAME).protocol.max_remeasurements
    return _store_attempt(root, attempt, limit)


def _store_attempt(root: Path, attempt: dict[str, Any], limit: int) -> dict[str, Any]:
    """Append a confirm attempt (the same rounds again return the stored attempt; never overwritten)."""
    path = confirm_path(root)
    with fsio.file_lock(path):
        log = fsio.read_json(path, what="confirm log") if path.exists() else {"schema_version": 1, "attempts": []}
        for old in log["attempts"]:
            if (old["final_collection_id"], old["ranking_collection_id"]) == (
                    attempt["final_collection_id"], attempt["ranking_collection_id"]):
                return old
        same = [a for a in log["attempts"] if a["executable_sha256"] == attempt["executable_sha256"]]
        if len(same) > limit:
            raise ContractError(path, "attempts", f"the chosen code was confirmed {len(same)} time(s); the frozen "
                                f"limit is 1 + protocol.max_remeasurements = {limit + 1}",
                                "report the result as unresolved; never re-measure until consistent")
        attempt = {**attempt, "attempt": len(same) + 1, "limit": limit + 1, **_verdict(attempt, len(same) + 1, limit + 1)}
        log["attempts"].append(attempt)
        fsio.write_json(path, log)
    return attempt


def _verdict(attempt: dict[str, Any], number: int, limit: int) -> dict[str, Any]:
    """The stated end of confirm: consistent; re-measure (attempts left); or, at the limit, the final status
    disclosed. ``refuted`` is never final-and-fine: the choice does not hold."""
    partner = attempt.get("partner") or "v000"
    left = limit - number
    if attempt["refuted"]:
        verdict, action = "refuted", ("the confirm round proves the chosen version slower than its partner: "
                                      "report it; the choice does not hold")
    elif attempt["consistent"]:
        verdict, action = "consistent", "none"
    elif left > 0:
        verdict, action = "remeasure", (f"collect_perf.py formal --paired-with DIR/docs/perf/versions/{partner}, then "
                                        f"select_best.py confirm on that round ({left} attempt(s) left)")
    else:
        verdict, action = f"final_{attempt['status']}", (f"none: the limit of {limit} confirm attempt(s) "
                                                         f"(1 + protocol.max_remeasurements) is reached; disclose "
                                                         f"the {attempt['status']} confirm in the report")
    return {"verdict": verdict, "limit_reached": left <= 0, "attempts_left": max(left, 0),
            "confirm_partner": partner, "action": action}


def _close(a: float, b: Any) -> bool:
    return isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(1.0, abs(a))


def confirm_problems(op_dir: str | Path, chosen_sha: str, limit: int) -> list[str]:
    """What stage5_check verifies about confirm: it ran on the chosen code, within the limit, recomputes, and
    its round does not refute the choice."""
    path = confirm_path(op_dir)
    if not path.exists():
        return [f"{CONFIRM_NAME} is missing: run 'select_best.py confirm' on the confirm round of the chosen version"]
    attempts = [a for a in fsio.read_json(path, what="confirm log").get("attempts", [])
                if a.get("executable_sha256") == chosen_sha]
    if not attempts:
        return ["confirm never ran on the chosen version's code"]
    out = [] if len(attempts) <= limit + 1 else [f"{len(attempts)} confirm attempts exceed the frozen limit {limit + 1}"]
    last = attempts[-1]
    try:
        again = evaluate_confirm(op_dir, last.get("final_collection_id") or "")
    except ContractError as exc:
        return out + [f"the last confirm attempt cannot be recomputed from its rounds: {exc}"]
    if (again["status"], again["refuted"]) != (last.get("status"), last.get("refuted")) or not _close(
            again["ratio"], last.get("ratio")):
        out.append(f"confirm.json's last attempt (status {last.get('status')}, refuted {last.get('refuted')}, ratio "
                   f"{last.get('ratio')}) differs from its recomputation from the rounds (status {again['status']}, "
                   f"refuted {again['refuted']}, ratio {again['ratio']:.6g})")
    if again["refuted"]:  # the confirm round reverses the comparison the version was chosen on
        out.append(f"the last confirm round proves {again['chosen']} slower than {again['partner'] or 'the baseline'} "
                   f"(score {again['final_score']:.4g}, CI {again['final_score_ci']}): the choice does not hold")
    return out
