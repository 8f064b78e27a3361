"""Hashes of the frozen Stage 5 inputs, recorded at freeze and re-checked when a script starts.

The PreToolUse hook blocks tool edits of the frozen inputs, but a shell command (``sed -i``,
``cp``, a python one-liner) can still change them. So ``freeze_cases.py freeze`` records the
sha256 of every frozen input in ``FROZEN_INPUTS.json`` beside the manifest, and every
:func:`~perftune.contract.manifest.load_manifest` of a manifest re-checks them: a changed or missing
file stops the script at start with a one-line error naming the file (exit 2), before the first
round as well as after it.

Frozen inputs (DESIGN S5-1): ``PERFORMANCE_CASES.json`` itself, ``SPEC.md``, ``KB_SELECTION.json``,
``module_interfaces.yaml`` and every ``*_golden*.py`` in the operator directory (those present at
freeze). An operator frozen before this record existed has no ``FROZEN_INPUTS.json``; it is then not
re-checked here; stage5_check fails it (``verify/contract_history.py``). Every round records this
file's record (:func:`round_record`, ``frozen_inputs`` in ``collection.json``), so stage5_check
also sees the record rewritten after the baseline round.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .. import fsio
from ..errors import ContractError

RECORD_NAME = "FROZEN_INPUTS.json"
MANIFEST_NAME = "PERFORMANCE_CASES.json"
NAMED = ("PERFORMANCE_CASES.json", "SPEC.md", "KB_SELECTION.json", "module_interfaces.yaml")
PATTERNS = ("*_golden*.py",)


def frozen_files(op_dir: Path) -> list[Path]:
    found = [op_dir / name for name in NAMED if (op_dir / name).is_file()]
    for pattern in PATTERNS:
        found += sorted(p for p in op_dir.glob(pattern) if p.is_file())
    return found


def record(op_dir: str | Path) -> Path:
    """Write ``FROZEN_INPUTS.json`` (never overwritten: it is frozen with the manifest)."""
    root = Path(op_dir)
    files = {path.name: fsio.sha256_file(path) for path in frozen_files(root)}
    return fsio.write_json(root / RECORD_NAME, {"schema_version": 1, "files": files}, overwrite=False)


def round_record(op_dir: str | Path) -> dict[str, dict]:
    """``{"frozen_inputs": file record}`` for a round header; empty when there is no record."""
    path = Path(op_dir) / RECORD_NAME
    return {"frozen_inputs": fsio.file_record(path, op_dir)} if path.is_file() else {}


@contextlib.contextmanager
def recorded(op_dir: str | Path, *, replace: str | None = None) -> Iterator[None]:
    """Around a freeze: record the hashes once it succeeded. A re-freeze (``replace``) sets the
    old record aside first (the inputs may have been corrected for it) and puts it back if the
    freeze is refused."""
    path = Path(op_dir) / RECORD_NAME
    old = path.read_bytes() if replace is not None and path.is_file() else None
    if old is not None:
        path.unlink()
    try:
        yield
    except BaseException:
        if old is not None and not path.exists():
            fsio.write_bytes(path, old, overwrite=False)
        raise
    record(op_dir)


def verify(op_dir: str | Path) -> None:
    """Raise a ContractError naming the first frozen input that changed or vanished since freeze."""
    root = Path(op_dir)
    path = root / RECORD_NAME
    if not path.is_file():
        return
    obj = fsio.read_json(path, what="frozen input record")
    files = obj.get("files") if isinstance(obj, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ContractError(path, "files", "is not a name -> sha256 map", "restore FROZEN_INPUTS.json from freeze")
    for name in sorted(files):
        target = fsio.safe_join(root, name, field="files", source=path)
        if not target.is_file():
            raise ContractError(target, "-", "frozen Stage 5 input is missing since freeze (S5-1)",
                                "restore it (e.g. git checkout); a wrong frozen input is stage5_contract_blocked")
        actual = fsio.sha256_file(target)
        if actual != files[name]:
            raise ContractError(target, "sha256", f"frozen Stage 5 input changed after freeze (recorded "
                                f"{files[name][:12]}, now {actual[:12]}; S5-1)",
                                "restore the frozen file (e.g. git checkout); frozen inputs never change in Stage 5")
