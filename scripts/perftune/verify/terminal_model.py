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
        attained = roof.get("attained_fraction")
        if isinstance(attained, (int, float)) and attained > 1 + roofline.ATTAINED_TOLERANCE:
            out.append(f"case {case.id}: attained fraction {attained} of the roof (roof {roof.get('roof_us')} us, "
                       f"measured {roof.get('measured_us')} us) exceeds 1 + {roofline.ATTAINED_TOLERANCE}: the timed "
                       "code skips necessary work, or the work model or the platform roof is wrong")
    return out
