"""A cited path is real: it exists inside the operator folder and keeps the identity it had when cited (#27).

:func:`record` is what ``ledger.py sweep`` stores next to ``evidence_examined`` (``examined_files``): a
file's ``{path, sha256, size_bytes}``, a round folder's ``{path, collection_id}`` (its own seal covers
its files), a living file later steps rewrite (:data:`LIVING`: the ledger itself, candidates, selection)
or any other folder ``{path}`` (it must exist); a path that does not exist, is absolute, escapes the folder or is
a symlink is refused (one line, exit 2), so a placeholder left in a path (``terminal_evidence_BEST_ROUND.json``)
can no longer be cited. :func:`problems` re-checks the records, :func:`missing` plain cited paths
(stage5_check ``P7.cited_paths``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import ContractError, PerftuneError
from ..measure import evidence


LIVING = tuple(f"{protocol.PERF_DIR}/{name}" for name in (protocol.LEDGER_NAME, protocol.CANDIDATES_NAME,
                                                           protocol.SELECTION_NAME))


def _is_round(path: Path) -> bool:
    return path.parent.name == Path(protocol.PERF_DIR).name and path.name.startswith(protocol.ROUND_PREFIX)


def record(op_dir: str | Path, paths: list[str]) -> list[dict[str, Any]]:
    """The identity of every cited path (refused: a path that is not a file or folder inside ``op_dir``)."""
    root, out = Path(op_dir), []
    for rel in paths:
        path = fsio.safe_join(root, rel.rstrip("/"), field="--examined")
        if not path.exists() and (root / protocol.PERF_DIR / rel.rstrip("/")).is_dir() \
                and _is_round(root / protocol.PERF_DIR / rel.rstrip("/")):   # a round's folder name, as printed
            rel = f"{protocol.PERF_DIR}/{rel.rstrip('/')}"
            path = root / rel
        if path.is_file() and rel not in LIVING:
            out.append(fsio.file_record(path, root))
        elif path.is_dir() and _is_round(path):
            collection = fsio.read_json(path / evidence.COLLECTION_JSON, what="collection.json")   # P7 loads it whole
            out.append({"path": rel, "collection_id": collection.get("collection_id") if isinstance(collection, dict)
                        else None})
        elif path.exists():
            out.append({"path": rel})
        else:
            raise ContractError(root / rel, "--examined", "does not exist", "cite only evidence on disk "
                                "(a placeholder left in the path?)")
    return out


def problems(op_dir: str | Path, records: list[dict[str, Any]], where: str) -> list[str]:
    """Where a recorded citation no longer holds: missing, changed file, a round that no longer loads."""
    root, out = Path(op_dir), []
    for rec in records:
        path = root / rec["path"]
        if "sha256" in rec:
            if not path.is_file() or fsio.sha256_file(path) != rec["sha256"]:
                out.append(f"{where} cites {rec['path']} with sha256 {rec['sha256'][:12]}: the file is missing or "
                           "changed since it was cited")
        elif "collection_id" in rec:
            try:
                found = evidence.load_round(root, path.name).collection["collection_id"]
            except PerftuneError as exc:
                out.append(f"{where} cites {rec['path']}: {exc.line()}")
                continue
            if found != rec["collection_id"]:
                out.append(f"{where} cites {rec['path']} as collection {rec['collection_id']}: it is now {found}")
        elif not path.exists():
            out.append(f"{where} cites {rec['path']}: it does not exist")
    return out


def missing(op_dir: str | Path, paths: list[str], where: str) -> list[str]:
    """Cited paths (relative to ``op_dir``) that do not exist."""
    root = Path(op_dir)
    return [f"{where} cites {p}: it does not exist" for p in paths if not (root / p).exists()]
