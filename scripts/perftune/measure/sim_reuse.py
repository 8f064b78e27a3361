"""Recorded reuse on a deterministic backend: one simulation per distinct question (issue 30, items 1-2).

On a deterministic backend (``protocol.DETERMINISTIC_BACKENDS``: pypto-sim) the repeats of a case
only prove determinism. A question is the arm's ``executable_sha256``, the case, the frozen
manifest's sha256 (the protocol and the simulator identity) and the round's environment fingerprint
(pypto, torch, chip, config hash). A later formal round or quick screen asking the same question
reuses the recorded result instead of simulating the same code again, and a paired round whose two
arms are byte-identical code simulates one arm and reuses it for the other. Determinism is shown once
per case: the first round or quick screen that asks a case simulates every repeat (each a fresh
process, required identical); every later new question of that case is one launch, its other repeats
a recorded reuse of it. A kernel that is not deterministic itself is caught by P10, which
re-simulates the final and the baseline in fresh processes and needs the recorded cycles again. The
source is always an original launch: the first complete round (then quick screen), in order, whose
arm answered the question (a reused repeat stands for the original it copied), never a copy.

A reused repeat is a copy of the source's raw files into the round's own layout (so compare, P4
and terminal evidence read it like any repeat) plus ``reused.json``: ``{source, source_collection_id,
case_id, executable_sha256, files: {name: sha256}}``; the round lists every reuse under ``reused``
(``{case, arm, repeat, source, source_collection_id, record_sha256}``). :func:`problems` is the
verifier's side: the record must match the copy's files and the source's files byte for byte, and
the source must be an original launch of the same code and case; a reuse that does not is refused.
P10 never reuses: it re-simulates in fresh processes.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import CheckFailed, ContractError
from . import evidence
from .backends.base import Backend, RepeatResult, RunSpec, repeat_dir_name

REUSED_JSON = "reused.json"
PERF = Path("docs/perf")


def applies(backend: str) -> bool:
    return backend in protocol.DETERMINISTIC_BACKENDS


def _arms(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(arm folder, code sha256) of a round or quick record: '' for an unpaired round or a quick screen."""
    if record.get("paired"):
        return [("candidate", record["executable_sha256"]), ("baseline", record["paired"]["baseline_executable_sha256"])]
    return [("", record["executable_sha256"])]


def _records(op_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, record) of every complete round, then every complete quick screen, in order."""
    out = []
    for pattern, name in (("round_*", "collection.json"), ("quick/quick_*", protocol.QUICK_NAME)):
        for folder in sorted((op_dir / PERF).glob(pattern)):
            try:
                record = fsio.read_json(folder / name, what=name)
            except ContractError:
                continue
            if isinstance(record, dict) and record.get("status") == "complete":
                out.append((folder, record))
    return out


def _same(record: dict[str, Any], header: dict[str, Any], case_id: str, repeats: int) -> bool:
    """The record asked this case under the same backend, manifest, environment and repeats."""
    return (record.get("backend"), record.get("performance_cases", {}).get("sha256"), record.get("environment"),
            record.get("repeats"), record.get("warmup"), record.get("target_op_name")) == \
        (header["backend"], header["performance_cases"]["sha256"], header["environment"], repeats,
         header["warmup"], header["target_op_name"]) and case_id in record.get("expected_cases", [])


def _original(op_dir: Path, folder: Path, case_id: str, code_sha256: str) -> Path | None:
    """``folder`` when it is an original launch, the original it copied when it is a recorded reuse
    the verifier accepts (:func:`problems`), else None."""
    if not folder.is_dir():
        return None
    if not (folder / REUSED_JSON).exists():
        return folder
    if problems(op_dir, folder, case_id, code_sha256, folder.name):
        return None
    return fsio.safe_join(op_dir, str(fsio.read_json(folder / REUSED_JSON, what="reused.json")["source"]),
                          field="source", source=folder / REUSED_JSON)


def find(op_dir: Path, header: dict[str, Any], case_id: str, code_sha256: str, repeats: int
         ) -> tuple[list[Path], str] | None:
    """The original launches (one per repeat ``1..repeats``; a reused repeat stands for the original it
    copied) that answered this question, and the id of the collection that launched them; None when no
    complete round or quick screen asked it."""
    for folder, record in _records(op_dir):
        if not _same(record, header, case_id, repeats):
            continue
        for arm, code in _arms(record):
            if code != code_sha256:
                continue
            found = [_original(op_dir, folder / evidence.case_dir_name(case_id) / repeat_dir_name(i) / arm,
                               case_id, code) for i in range(1, repeats + 1)]
            owners = {(_owner(op_dir, f) or ("",))[0] for f in found} if all(found) else set()
            if len(owners) == 1 and "" not in owners:   # the collection that launched them
                return found, owners.pop()
    return None


def determinism_shown(op_dir: Path, header: dict[str, Any], case_id: str, repeats: int) -> bool:
    """An earlier complete round or quick screen simulated every repeat of this case in one arm, each
    an original launch (required identical when it was taken, :func:`check_deterministic`)."""
    return repeats > 1 and any(
        all((folder / evidence.case_dir_name(case_id) / repeat_dir_name(i) / arm).is_dir() and not
            (folder / evidence.case_dir_name(case_id) / repeat_dir_name(i) / arm / REUSED_JSON).exists()
            for i in range(1, repeats + 1))
        for folder, record in _records(op_dir) if _same(record, header, case_id, repeats)
        for arm, _ in _arms(record))


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: fsio.sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != REUSED_JSON}


def copy(op_dir: Path, sources: list[Path], dests: list[Path], *, collection_id: str, case_id: str, code_sha256: str,
         arm: str, cited: list[Path] | None = None, first: int = 1) -> list[dict[str, Any]]:
    """Copy each source repeat into its destination with its ``reused.json``; the round's ``reused`` rows.
    ``cited``: where the sources will be once their round is laid out (a source in this very round);
    ``first``: the repeat number of the first destination."""
    rows = []
    for index, (source, dest, where) in enumerate(zip(sources, dests, cited or sources), first):
        dest.mkdir(parents=True, exist_ok=True)
        for path in sorted(source.iterdir()):
            if path.is_file() and path.name != REUSED_JSON:
                shutil.copyfile(path, dest / path.name)
        shown = fsio.display_path(where, op_dir)
        fsio.write_json(dest / REUSED_JSON, {"source": shown, "source_collection_id": collection_id,
                                             "case_id": case_id, "executable_sha256": code_sha256,
                                             "files": _hashes(source)}, overwrite=False)
        rows.append({"case": case_id, "arm": arm or "measured", "repeat": index, "source": shown,
                     "source_collection_id": collection_id, "record_sha256": fsio.sha256_file(dest / REUSED_JSON)})
    return rows


def check_deterministic(results: list[RepeatResult], where: Path, case_id: str) -> None:
    times = sorted({r.duration_us for r in results})
    if len(times) > 1:
        raise CheckFailed(where, case_id, f"simulated times differ between repeats {times} us",
                          "the simulator must be deterministic; check the pypto install and the kernel inputs")


def measure_arm(backend: Backend, spec: RunSpec, case, dests: list[Path], header: dict[str, Any], code_sha256: str,
                arm: str, rows: list[dict[str, Any]], *, same_round: tuple[list[Path], list[Path]] | None = None,
                cited: list[Path] | None = None) -> list[RepeatResult]:
    """The repeats of one arm into ``dests`` (``cited``: where they will be once the round is laid out):
    reused when the question was answered (an earlier round or quick screen, else ``same_round``:
    (folders, cited paths) of this round's byte-identical arm), else simulated: every repeat one fresh
    process, required identical, while no earlier round showed this case deterministic; after that
    one launch, the other repeats a recorded reuse of it. Appends to ``rows``."""
    found = find(spec.op_dir, header, case.id, code_sha256, len(dests))
    if found is None and same_round is None:
        if not determinism_shown(spec.op_dir, header, case.id, len(dests)):
            results = [backend.run_repeat(spec, case, dest) for dest in dests]
            check_deterministic(results, dests[0].parent, case.id)
            return results
        first = backend.run_repeat(spec, case, dests[0])
        rows += copy(spec.op_dir, [dests[0]] * (len(dests) - 1), dests[1:], collection_id=header["collection_id"],
                     case_id=case.id, code_sha256=code_sha256, arm=arm, cited=[(cited or dests)[0]] * (len(dests) - 1),
                     first=2)
        return [first] + [backend.read_repeat(dest, spec.op_name) for dest in dests[1:]]
    if found:
        sources, source_id, where = *found, None
    else:   # the twin's own repeats may be copies of its first launch: cite that launch
        own = [not (s / REUSED_JSON).exists() for s in same_round[0]]
        sources, where = ([s if o else same_round[0][0] for s, o in zip(same_round[0], own)],
                          [c if o else same_round[1][0] for c, o in zip(same_round[1], own)])
        source_id = header["collection_id"]
    rows += copy(spec.op_dir, sources, dests, collection_id=source_id, case_id=case.id, code_sha256=code_sha256,
                 arm=arm, cited=where)
    return [backend.read_repeat(dest, spec.op_name) for dest in dests]


def problems(op_dir: Path, folder: Path, case_id: str, code_sha256: str, where: str) -> list[str]:
    """Why a reused repeat is not an honest copy of an original launch of the same question ([] if it is)."""
    try:
        record = fsio.read_json(folder / REUSED_JSON, what="reused.json")
        source = fsio.safe_join(op_dir, str(record["source"]), field="source", source=folder / REUSED_JSON)
    except (ContractError, KeyError, TypeError) as exc:
        return [f"{where}: unreadable reuse record ({exc})"]
    out = []
    if record.get("case_id") != case_id or record.get("executable_sha256") != code_sha256:
        out.append(f"{where}: reuse record names case {record.get('case_id')!r} / code "
                   f"{str(record.get('executable_sha256'))[:12]}, not this arm's")
    if not source.is_dir() or (source / REUSED_JSON).exists():
        return out + [f"{where}: reuse source {record['source']} is missing or not an original launch"]
    if _hashes(folder) != record.get("files") or _hashes(source) != record.get("files"):
        out.append(f"{where}: reused files do not match the sha256 of {record['source']} (reused evidence)")
    owner = _owner(op_dir, source)
    if owner is None or owner[0] != record.get("source_collection_id") or \
            code_sha256 not in owner[1] or evidence.case_dir_name(case_id) not in source.parts:
        out.append(f"{where}: reuse source {record['source']} is not a launch of this code and case by "
                   f"{record.get('source_collection_id')!r}")
    return out


def _owner(op_dir: Path, source: Path) -> tuple[str, dict[str, str]] | None:
    """(collection id, {arm folder: code sha256}) of the round or quick screen holding ``source``."""
    for folder, record in _records(op_dir) + _in_progress(source):
        if folder in source.parents:
            arm = source.name if source.name in ("baseline", "candidate") else ""
            codes = dict(_arms(record))
            return record["collection_id"], {codes[arm]: arm} if arm in codes else {}
    return None


def _in_progress(source: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The round holding ``source`` whatever its status (a same-round reuse is checked while it is written)."""
    for parent in source.parents:
        if (parent / "collection.json").is_file():
            return [(parent, fsio.read_json(parent / "collection.json", what="collection.json"))]
    return []

