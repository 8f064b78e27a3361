"""The selector preflight once per question on a deterministic backend (issue 30, item 1).

The preflight (:func:`.backends.base.preflight`) proves that the runner selects exactly one case
per process: an unknown id exits non-zero, every known id exits 0 with one marker. On a
deterministic backend only the unknown id is launched: the known ids' probe would simulate each case
once more, and every timed launch already must exit 0 with exactly one marker of its case
(``PyptoSimBackend._launch`` refuses any other), so the first timed launch of a case answers
it (``known_ids`` in the record). There (``protocol.DETERMINISTIC_BACKENDS``: pypto-sim) its answer
depends only on the code and the frozen manifest, so it is asked once per key and reused by every later round,
quick screen and arm: the key is the sha256 of ``{backend, executable_sha256 of the arm's code,
the manifest's sha256, the selector, the runner's file name, the case ids}``. A passed preflight is
written to ``docs/perf/preflight/<key>.json`` (never overwritten; a failed one raises and is not
kept); the round records per arm ``{arm, key, record, record_sha256, reused}``. Other backends run
it every time (``key`` null): their runners may depend on the machine.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from .. import fsio
from ..contract import protocol
from ..errors import ContractError
from .backends.base import Backend, RunSpec, preflight

CACHE_DIR = Path("docs/perf/preflight")
KNOWN_IDS = "checked by every timed launch: exit 0 and exactly one marker of its case"


def cache_key(backend: Backend, spec: RunSpec, code_sha256: str, manifest_sha256: str,
              case_ids: Sequence[str]) -> str:
    question = {"backend": backend.name, "executable_sha256": code_sha256, "performance_cases": manifest_sha256,
                "selector": spec.selector.as_dict(), "runner": spec.runner.name, "case_ids": list(case_ids)}
    return hashlib.sha256(json.dumps(question, sort_keys=True).encode("utf-8")).hexdigest()


def run(backend: Backend, spec: RunSpec, case_ids: Sequence[str], *, arm: str, code_sha256: str,
        manifest_sha256: str) -> dict[str, Any]:
    """Run (or reuse) the preflight of one arm; returns what the round records about it."""
    if backend.name not in protocol.DETERMINISTIC_BACKENDS:
        preflight(backend, spec, case_ids)
        return {"arm": arm, "key": None, "record": None, "record_sha256": None, "reused": False}
    key = cache_key(backend, spec, code_sha256, manifest_sha256, case_ids)
    path = spec.op_dir / CACHE_DIR / f"{key}.json"
    reused = path.is_file() and _valid(path, key)
    if not reused:
        rows = preflight(backend, spec, case_ids, known=False)   # raises on a failed one: nothing is cached
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fsio.write_json(path, {"key": key, "backend": backend.name, "executable_sha256": code_sha256,
                                   "performance_cases_sha256": manifest_sha256, "runner": spec.runner.name,
                                   "case_ids": list(case_ids), "rows": rows, "known_ids": KNOWN_IDS},
                           overwrite=False)
        except ContractError:
            if not path.is_file():
                raise   # else a concurrent round answered the same question first (kept, never overwritten)
    return {"arm": arm, "key": key, "record": (CACHE_DIR / f"{key}.json").as_posix(),
            "record_sha256": fsio.sha256_file(path), "reused": reused}


def _valid(path: Path, key: str) -> bool:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and obj.get("key") == key and bool(obj.get("rows")) and \
        all(isinstance(r, dict) and r.get("ok") is True for r in obj["rows"])
