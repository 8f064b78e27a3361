"""P8's model check: a terminal record must use the operator's frozen necessary-work model.

The verifier recomputes, per case, the necessary arithmetic and transcendental operations and bytes
from ``PERFORMANCE_CASES.json#work_model`` (:func:`perftune.terminal.roofline.case_work`) and
refuses a record whose model hash or numbers differ (a borrowed model gives other counts), and an
attained fraction above ``1 + roofline.ATTAINED_TOLERANCE`` (faster than the necessary work allows:
a wrong model or a wrong roof). Each message names the numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod, protocol, work_model
from ..errors import PerftuneError
from ..terminal import roofline

_COUNTS = (("arithmetic_ops", "arithmetic_ops"), ("transcendental_ops", "transcendental_ops"),
           ("necessary_bytes", "bytes"))


def load_record(op_dir: Path) -> dict[str, Any]:
    """``docs/perf/terminal_evidence.json`` or {} (an unreadable one is reported by the entry checks)."""
    try:
        obj = fsio.read_json(Path(op_dir) / protocol.PERF_DIR / "terminal_evidence.json", what="terminal evidence")
    except PerftuneError:
        return {}
    return obj if isinstance(obj, dict) else {}


def model_problems(man: manifest_mod.Manifest, record: dict[str, Any]) -> list[str]:
    """Every way ``record`` (terminal_evidence.json) departs from the frozen work model."""
    model = man.raw.get("work_model")
    if not record:
        return []
    if not model:
        return ["the manifest freezes no work_model (SPEC.md 'Necessary work' section): necessary work cannot be "
                "recomputed"]
    out = []
    frozen_sha, used = work_model.model_sha256(model), (record.get("work_model") or {}).get("sha256")
    if used != frozen_sha:
        out.append(f"terminal evidence used work model sha256 {str(used)[:12]}, the frozen model is {frozen_sha[:12]}")
    for entry in record.get("cases", []):
        try:
            case = man.case(entry.get("case"))
            work = roofline.case_work(case.id, case.shape, case.dtype, model)
        except (KeyError, PerftuneError):
            continue  # unknown cases are reported by the entry checks
        roof = entry.get("roofline_terminal") or {}
        for key, attr in _COUNTS:
            if roof.get(key) != getattr(work, attr):
                out.append(f"case {case.id}: {key} {roof.get(key)} != {getattr(work, attr)} recomputed from the "
                           "frozen work model")
    return out


def floor_problems(man: manifest_mod.Manifest, record: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(category, message, expected, actual) per case measured faster than the floor (attained fraction above
    ``1 + roofline.ATTAINED_TOLERANCE``). With the frozen work model's hash and counts the model is not the
    cause: the delivered code skips necessary work or its timing is not the call's (``cheating``); with
    another model the record is wrong (``performance_evidence_invalid``, reported by :func:`model_problems`)."""
    trusted = bool(record) and not model_problems(man, record)
    out = []
    for entry in record.get("cases", []) if record else []:
        roof = entry.get("roofline_terminal") or {}
        attained = roof.get("attained_fraction")
        if not (isinstance(attained, (int, float)) and attained > 1 + roofline.ATTAINED_TOLERANCE):
            continue
        head = (f"case {entry.get('case')}: measured {roof.get('measured_us')} us is below the floor of the frozen work "
                f"model on the platform roof ({roof.get('roof_us')} us; attained fraction {attained} > 1 + "
                f"{roofline.ATTAINED_TOLERANCE})")
        expected, actual = f"measured >= roof {roof.get('roof_us')} us / {1 + roofline.ATTAINED_TOLERANCE}", \
            f"measured {roof.get('measured_us')} us"
        out.append(("cheating", f"{head}: the delivered code does less than the necessary work on the timed calls "
                    "(a result cache, a skipped computation) or its timing is not the call's", expected, actual)
                   if trusted else ("performance_evidence_invalid", f"{head}: the terminal record's work model is not "
                                    "the frozen one", expected, actual))
    return out
