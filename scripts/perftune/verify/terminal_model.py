"""P8's model check: a terminal record must use the operator's frozen necessary-work model.

The verifier recomputes, per case, the necessary arithmetic, transcendental and matmul operations and bytes
from ``PERFORMANCE_CASES.json#work_model`` (:func:`perftune.terminal.roofline.case_work`) and
refuses a record whose model hash or numbers differ (a borrowed model gives other counts), and an
attained fraction above ``1 + roofline.ATTAINED_TOLERANCE`` (faster than the necessary work allows:
a wrong model or a wrong roof). Each message names the numbers.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod, protocol, work_model
from ..errors import PerftuneError
from ..terminal import records, roofline

_COUNTS = (("arithmetic_ops", "arithmetic_ops"), ("transcendental_ops", "transcendental_ops"),
           ("matmul_ops", "matmul_ops"), ("necessary_bytes", "bytes"))


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
            if roof.get(key, 0 if key == "matmul_ops" else None) != getattr(work, attr):  # absent before cube work
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


def confirmed_floor_problems(op_dir: Path, man: manifest_mod.Manifest,
                             record: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """:func:`floor_problems`, with the cpu roof re-probed at check time before a case is called ``cheating``.

    The platform step measured the cpu roof once, under whatever load it met; an honest kernel timed at
    a quieter moment can then look faster than that roof allows. A case stays below the floor only if it
    is below the floor of the faster of both roofs (peak by peak). A probe that cannot run keeps the
    recorded verdict."""
    problems = floor_problems(man, record)
    if man.protocol.backend != "cpu" or not any(c == "cheating" for c, *_ in problems):
        return problems
    try:
        recorded, _ = records.load_platform(Path(op_dir) / record["platform"]["file"]["path"], "cpu")
        with tempfile.TemporaryDirectory(prefix="p8_roof_") as scratch:
            _, obj = records.probe(Path(scratch) / "platform.json")
        fresh = roofline.parse_platform(obj)
    except (PerftuneError, KeyError, TypeError):
        return problems
    peaks = {k: max(p, fresh.peaks.get(k, p), key=lambda peak: peak.value) for k, p in recorded.peaks.items()}
    best = roofline.Platform(recorded.platform_id, recorded.backend, peaks)
    cases = []
    for entry in record.get("cases", []):
        roof = dict(entry.get("roofline_terminal") or {})
        try:
            case = man.case(entry.get("case"))
            work = roofline.case_work(case.id, case.shape, case.dtype, man.raw["work_model"])
            faster = max(roofline.floors_us(work, best)[k] for k in ("compute_floor_us", "memory_floor_us"))
            roof.update(attained_fraction=round(roof["attained_fraction"] * faster / roof["roof_us"], 6),
                        roof_us=round(faster, 6))   # the recorded fraction, on the faster roof
        except (KeyError, PerftuneError, TypeError, ZeroDivisionError):
            pass
        cases.append({**entry, "roofline_terminal": roof})
    return floor_problems(man, {**record, "cases": cases})
