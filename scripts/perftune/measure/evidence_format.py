"""The format version of raw evidence (issue 29): one field, one rule, every reader dispatches on it.

``collection.json``, ``quick_performance.json``, ``measurement.json``, ``evidence_status.json`` and the
cpu ``samples.csv`` (a ``format_version`` column) carry ``format_version`` =
``protocol.EVIDENCE_FORMAT_VERSION``. Version 0 is everything written before the field (its files
simply lack it); docs/architecture.md ("Evidence layout") states once what version 0 may lack. A
version this code does not know is refused with one line, and a measurement.json of another version
than its round's collection.json is stitched evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from ..errors import ContractError


def format_version(path: Path, obj: Any, what: str) -> int:
    """The ``format_version`` of a raw evidence record (absent: 0); an unknown one is refused."""
    version = obj.get("format_version", 0) if isinstance(obj, dict) else 0
    if isinstance(version, bool) or version not in protocol.EVIDENCE_FORMAT_VERSIONS:
        raise ContractError(path, "format_version", f"unknown {what} format version {version!r} (known: "
                            f"{list(protocol.EVIDENCE_FORMAT_VERSIONS)})", "read it with the perftune version that "
                            "wrote it, or re-collect the round")
    return version


def read_measurement(path: Path, case_id: str, collection: dict[str, Any]) -> dict[str, Any]:
    """``measurement.json`` of ``case_id``: its round's format version, valid, and of this round/case."""
    measurement = fsio.read_json(path, what="measurement.json")
    if format_version(path, measurement, path.name) != collection.get("format_version", 0):
        raise ContractError(path, "format_version", "differs from its round's collection.json",
                            "evidence was stitched; re-collect the round")
    schemas.validate(measurement, "measurement", path)
    if measurement["case"] != case_id or measurement["collection_id"] != collection["collection_id"]:
        raise ContractError(path, "case", "does not belong to this round/case",
                            "evidence was stitched; re-collect the round")
    return measurement
