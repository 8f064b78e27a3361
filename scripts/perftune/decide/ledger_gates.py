"""Gates close what cannot apply: recorded applicability gates evaluated against the frozen operator (#27).

An enumerated item carries its source file's gates (``ledger_sources.parse_gates``). Three of them are
decidable from the frozen manifest alone, so they need no judgement:

- ``platform``: the measuring platform is the backend's (cpu: no Ascend unit at all; pypto-sim: the
  frozen ``simulator.device_arch``; msprof: the card, not recorded in the manifest → never decided
  here). A gate that names Ascend hardware (``Ascend``, ``950``, ``cube``) fails on cpu; a gate
  for 950PR/950DT only (``A2/A3 not applicable``, ``950PR/950DT only``) fails on an A2A3 simulator.
- ``backend``: ``not <backend>[/<backend>] (why)`` fails when the frozen backend is one of them (a
  method whose action a pypto-sim kernel cannot express: docs/pypto-sim-backend.md "Which knowledge
  applies to a simulated kernel"); checked after ``platform``, so a cpu item keeps its platform grounds.
- ``dtype``: a gate that is a plain list of dtypes (``FP16/BF16/FP32``, ``FP32``) fails when no
  frozen case has one of them.

- ``bound``: only once bound evidence exists (the newest step-11 profile,
  ``docs/perf/bottleneck/terminal_evidence_<round>.json``) and only a gate that is a plain list of bound
  labels (``data_movement_candidate``, ``compute_candidate or scalar_candidate``): it fails when every case
  of that evidence has a decided roofline status (:data:`SATISFIES`) and none satisfies a named label.
  ``balanced_compute_movement`` satisfies both compute and data movement; ``unattributed_residual`` and
  ``insufficient_evidence`` decide nothing.

- ``occupancy``: a gate text starting with ``limited`` (the block_dim / imbalance cards: general-04,
  general-14, scalar-03) fails when every case of that profile has a decided occupancy that is not
  limited: the blocks against the chip's cores fill every core with no short last wave
  (``profiler.diagnosis.figures.occupancy``, msprof with a probed chip) and no per-block / per-core spread
  above ``DIAGNOSIS_BLOCK_SPREAD`` (``block_spread``; pypto-sim: ``hotspots.core_spread``). A case without
  such evidence decides nothing (:func:`occupancy_of`).

Every other gate text (``any``, shapes, qualified bounds such as ``… on aic``, "dtypes supported by …")
stays the agent's judgement. An item already under experiment (a hypothesis recorded) is never closed.
:func:`close_failed` closes each pending non-kb item with a failing gate as ``not_applicable`` with
``gate:<key> — <why>`` as grounds (``ledger.py close-gated``, one command instead of one per item).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..contract.manifest import Manifest
from .ledger import ItemChange, update_item

_DTYPES = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16", "INT8": "int8", "FP64": "float64"}
_ASCEND = re.compile(r"\bAscend\b|\b950|\bcube\b", re.I)
_950_ONLY = re.compile(r"A2/A3 not applicable|950PR/950DT only|other SoCs differ", re.I)
_NOT_ON = re.compile(r"^not ([a-z][a-z-]*(?:\s*/\s*[a-z][a-z-]*)*)\b")


# roofline status (terminal/roofline.py) -> the bound labels of a gate it satisfies
SATISFIES = {"compute_bound": {"compute_candidate"}, "data_movement_bound": {"data_movement_candidate"},
             "balanced_compute_movement": {"compute_candidate", "data_movement_candidate"},
             "scalar_bound": {"scalar_candidate"}, "wait_bound": {"wait"}}
_LABELS = sorted({label for labels in SATISFIES.values() for label in labels} - {"wait"})
_BOUND_LIST = re.compile(r"^(?:%s)(?:\s+or\s+(?:%s))*$" % ("|".join(_LABELS), "|".join(_LABELS)))
BOTTLENECK_GLOB = f"{protocol.PERF_DIR}/bottleneck/terminal_evidence_*.json"


def bound_evidence(op_dir: str | Path) -> dict[str, Any] | None:
    """``{file, cases: {case: roofline status}, occupancy: {case: occupancy_of}}`` of the newest bottleneck
    profile, None before any."""
    root = Path(op_dir)
    found = sorted(root.glob(BOTTLENECK_GLOB))
    if not found:
        return None
    data = fsio.read_json(found[-1], what="terminal evidence")
    return {"file": found[-1].relative_to(root).as_posix(),
            "cases": {c["case"]: (c.get("roofline_terminal") or {}).get("status") for c in data.get("cases", [])},
            "occupancy": {c["case"]: occupancy_of(c) for c in data.get("cases", [])}}


def occupancy_of(case: dict[str, Any]) -> dict[str, Any] | None:
    """``{limited, reason}`` of one profiled case (module docstring), None when nothing is decided."""
    figures = ((case.get("profiler") or {}).get("diagnosis") or {}).get("figures") or {}
    occ = figures.get("occupancy") or {}
    spreads = [s for s in (figures.get("block_spread"), (case.get("hotspots") or {}).get("core_spread")) if s]
    if spreads and any(s["severe"] for s in spreads):
        worst = max(spreads, key=lambda s: s["spread"])
        return {"limited": True, "reason": f"spread {worst['spread']:.1%} ({worst['what']})"}
    if occ.get("decided"):
        return {"limited": bool(occ["limited"]), "reason": occ["reason"]}
    if spreads:
        return {"limited": False, "reason": f"spread {spreads[0]['spread']:.1%} ({spreads[0]['what']})"}
    return None


def _occupancy_fails(gate: str, bounds: dict[str, Any] | None) -> str | None:
    if bounds is None or not bounds.get("occupancy") or not gate.strip().startswith("limited"):
        return None
    found = bounds["occupancy"]
    if any(v is None or v["limited"] for v in found.values()):
        return None
    shown = "; ".join(f"{c}: {v['reason']}" for c, v in sorted(found.items()))
    return f"no case of {bounds['file']} is occupancy-limited ({shown}); the item needs: {gate.strip()}"


def _bound_fails(gate: str, bounds: dict[str, Any] | None) -> str | None:
    if bounds is None or not bounds["cases"] or not _BOUND_LIST.match(gate.strip()):
        return None
    named = set(re.split(r"\s+or\s+", gate.strip()))
    statuses = bounds["cases"]
    if any(s not in SATISFIES or SATISFIES[s] & named for s in statuses.values()):
        return None
    shown = ", ".join(f"{c} {s}" for c, s in sorted(statuses.items()))
    return f"every case of {bounds['file']} contradicts it ({shown}); the item needs: {gate.strip()}"


def failed_gate(gates: dict[str, str], man: Manifest, bounds: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """(gate key, why it fails for this operator) of the first decidable failing gate, else None."""
    proto = man.protocol
    platform = gates.get("platform", "")
    if not platform.lower().startswith("any (operator-independent)") and _ASCEND.search(platform):
        if proto.backend == "cpu":
            return "platform", f"the frozen backend is cpu (no Ascend unit); the item needs: {platform}"
        arch = (proto.simulator or {}).get("device_arch")
        if proto.backend == "pypto-sim" and arch == "A2A3" and _950_ONLY.search(platform):
            return "platform", f"the frozen simulator chip is {arch}; the item needs: {platform}"
    excluded = _NOT_ON.match(gates.get("backend", "").strip())
    if excluded and proto.backend in [b.strip() for b in excluded.group(1).split("/")]:
        return "backend", f"the frozen backend is {proto.backend}; the item: {gates['backend']}"
    dtype = gates.get("dtype", "").strip()
    names = [d.strip().upper() for d in dtype.split("/")]
    if dtype and all(n in _DTYPES for n in names):
        frozen = sorted({c["dtype"] for c in man.raw["cases"]})
        if not {_DTYPES[n] for n in names} & set(frozen):
            return "dtype", f"the frozen cases are {frozen}; the item needs {dtype}"
    why = _bound_fails(gates.get("bound", ""), bounds)
    if why:
        return "bound", why
    why = _occupancy_fails(gates.get("occupancy", ""), bounds)
    return ("occupancy", why) if why else None


def gate_failures(ledger: dict[str, Any], man: Manifest, bounds: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """Pending non-kb items (none under experiment) whose recorded gates fail here: item id, gate, why."""
    out = []
    for item in ledger["items"]:
        if item["status"] != "pending" or item["source_kind"] == "kb_selected" or not item.get("gates") \
                or item.get("hypothesis"):
            continue
        found = failed_gate(item["gates"], man, bounds)
        if found:
            out.append({"item_id": item["item_id"], "gate": found[0], "why": found[1]})
    return out


def close_failed(ledger: dict[str, Any], man: Manifest, *, at: str, actor: str,
                 bounds: dict[str, Any] | None = None) -> dict[str, Any]:
    """Close every item of :func:`gate_failures` as ``not_applicable`` with its gate as grounds."""
    out = ledger
    for row in gate_failures(ledger, man, bounds):
        grounds = f"gate:{row['gate']} — {row['why']}"
        change = ItemChange(status="not_applicable", note=f"closed by ledger.py close-gated: {grounds}",
                            applicability="not_applicable", grounds=grounds)
        out = update_item(out, row["item_id"], change, at=at, actor=actor)
    return out
