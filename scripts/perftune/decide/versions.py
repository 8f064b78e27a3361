"""Every tried version keeps its code (#27 Deliver 4): the archive of tried code and restoring any version.

A recorded candidate has its saved copy (``docs/perf/versions/<version_id>/``, candidates.py). An
experiment that was not accepted is archived when its ledger item closes (``ledger.py update`` with
``--correctness RUN`` while the tried code is still in place, i.e. close first, then restore the best):
its updatable sources are copied to ``docs/perf/versions/tried_<item_id>_<sha8>/`` with
``archive.json`` (the file records and the correctness run), and the item's ``evidence.code_ref``
names that folder (an accepted item: its candidate's saved copy; an item closed by another's
experiment: that archive), so every closed experiment's CODE_REF points at code that exists. :func:`restore` puts
either kind back in place, hash-checked (``select_best.py restore --version ID``; ID as printed:
the folder name or its path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import candidates
from .. import fsio
from ..contract import manifest, protocol
from ..errors import ContractError
from ..measure import correctness, evidence

ARCHIVE_JSON = "archive.json"


def versions_dir(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / candidates.VERSIONS_DIR


def archive_tried(op_dir: str | Path, item_id: str, run_id: str) -> str | None:
    """The folder (relative) holding the code ``run_id`` tested: a recorded candidate's saved copy, an earlier
    archive of the same code, or a new archive of the code in place; None when none holds it."""
    root = Path(op_dir)
    try:
        run = correctness.load_record(root, run_id)
    except ContractError:
        return None
    tested = run.get("executable_sha256")
    for cand in candidates.load_candidates(root, required=False)["candidates"]:
        if cand["executable_sha256"] == tested:
            return cand["saved_copy"]
    for old in sorted(versions_dir(root).glob(f"tried_*_{str(tested)[:8]}/{ARCHIVE_JSON}")):
        if fsio.read_json(old, what="archive").get("executable_sha256") == tested:
            return fsio.display_path(old.parent, root)
    man = manifest.load_manifest(root / protocol.MANIFEST_NAME)
    files = evidence.source_files(root, man)
    sha = evidence.executable_sha256(root, files)
    if tested != sha:
        return None           # the tried code is no longer in place (already restored) and was never archived
    folder = versions_dir(root) / f"tried_{item_id}_{sha[:8]}"
    records = [fsio.file_record(p, root) for p in files]
    for rec in records:
        fsio.write_bytes(folder / rec["path"], (root / rec["path"]).read_bytes())
    fsio.write_json(folder / ARCHIVE_JSON, {"schema_version": 1, "item_id": item_id, "correctness": run_id,
                                            "executable_sha256": sha, "source_files": records})
    return fsio.display_path(folder, root)


def restore(op_dir: str | Path, version: str) -> dict[str, Any]:
    """Put a recorded or archived version's code back in place (hash-checked; the copy is never changed)."""
    root = Path(op_dir)
    name = str(version).rstrip("/").rsplit("/", 1)[-1]
    register = candidates.load_candidates(root, required=False)["candidates"]
    cand = next((c for c in register if c["version_id"] == name), None)
    if cand is not None:
        folder, records, sha = root / cand["saved_copy"], cand["source_files"], cand["executable_sha256"]
    elif (versions_dir(root) / name / ARCHIVE_JSON).is_file():
        folder = versions_dir(root) / name
        rec = fsio.read_json(folder / ARCHIVE_JSON, what="archive")
        records, sha = rec["source_files"], rec["executable_sha256"]
    else:
        raise ContractError(versions_dir(root), "--version", f"{name!r} is neither recorded nor archived",
                            f"use one of {[c['version_id'] for c in register]} or a tried_* folder")
    for rec in records:
        if fsio.sha256_file(folder / rec["path"]) != rec["sha256"]:
            raise ContractError(folder / rec["path"], "saved copy", "differs from its recorded hash",
                                "the copy was changed; it cannot be restored")
    for rec in records:
        fsio.write_bytes(root / rec["path"], (folder / rec["path"]).read_bytes())
    return {"version_id": name, "executable_sha256": sha, "restored": [r["path"] for r in records],
            "from": fsio.display_path(folder, root)}
