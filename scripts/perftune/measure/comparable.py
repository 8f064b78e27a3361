"""Which rounds may be compared: the one owner of "this round used the frozen protocol" (issue 29).

A formal round records the manifest it measured (sha256), the measuring fields and the protocol;
:func:`mismatches` lists every ``(field, recorded, frozen)`` where it departs from what the manifest
froze (:func:`frozen_fields`) or from another round (:func:`recorded_fields` of that round).
Callers: ``decide.compare.check_rounds`` (exit 2), ``decide.candidates`` (``select_best.py record``,
exit 2) and stage5-check's P2 (findings ``P2.manifest_hash``, ``P2.protocol``).
"""

from __future__ import annotations

from typing import Any

from ..contract.manifest import Manifest

MANIFEST_FIELD = "performance_cases.sha256"
MEASURING_FIELDS = ("backend", "device_id", "seed", "warmup", "repeats", "target_op_name")


def recorded_fields(rnd: Any) -> dict[str, Any]:
    """What makes ``rnd`` (a ``RoundEvidence``) comparable, as it recorded it."""
    col = rnd.collection
    return {MANIFEST_FIELD: (col.get("performance_cases") or {}).get("sha256"),
            **{key: col.get(key) for key in MEASURING_FIELDS},
            "selector.kind": (col.get("selector") or {}).get("kind"),
            **{f"protocol.{key}": value for key, value in rnd.protocol.items()}}


def frozen_fields(manifest: Manifest, manifest_sha256: str, *, protocol_keys: bool = True) -> dict[str, Any]:
    """What every formal round under ``manifest`` (v2: a frozen protocol) must have recorded; without
    ``protocol_keys`` only the manifest hash and the measuring fields (compare: a calibrated noise band,
    ``decide.calibration``, changes the manifest's decision rule after the rounds)."""
    proto = manifest.protocol.as_dict()
    measuring = {"backend": proto["backend"], "device_id": proto["device_id"], "seed": proto["seed"],
                 "warmup": proto["warmup"], "repeats": proto["repeats"], "target_op_name": proto["op_name"]}
    return {MANIFEST_FIELD: manifest_sha256, **measuring,
            **({f"protocol.{key}": value for key, value in proto.items()} if protocol_keys else {})}


def mismatches(rnd: Any, frozen: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(field, recorded, frozen)`` of every field of ``frozen`` that ``rnd`` recorded otherwise."""
    recorded = recorded_fields(rnd)
    return [(key, recorded.get(key), value) for key, value in frozen.items() if recorded.get(key) != value]
