"""Gate P9 of stage5-check on pypto-sim: the work is in the simulated launch (issue 28 item 7).

On a pypto-sim round the simulator times only the jit launch; whatever the op function computes on
the host around it costs nothing. Each timed call's ``attestation.json`` carries the pypto-sim
runner's ``sim`` record (``measure/backends/sim_guard.py``) and each repeat folder the launch's
simulator files. Every check is ``cheating`` except a missing record (``performance_evidence_invalid``):

- ``P9.host_compute``: the op function called a torch function or ``Tensor`` method outside the jit
  launch that is not allocation, a view or reshape, a copy or metadata (``sim_guard.ALLOWED``):
  part of the maths done on the host, untimed.
- ``P9.launch_output``: an output of the timed call (a written argument or the returned tensor) is
  not a tensor a launch of that call wrote (its bytes at the op's return equal no launch output's
  bytes at the end of the launch): the result was computed or finished on the host. A call that
  launched nothing fails too.
- ``P9.launch_work``: the launch moved fewer bytes between global memory and the cores than
  :data:`WORK_SHARE` of what the frozen work model requires for the case's shapes, per direction
  (MTE_IN tile ops against the model's read bytes, MTE_OUT against its write bytes;
  ``pypto_sim_files.moved_bytes``): a launch that processes a fraction of the data. An honest
  launch reads every input byte and writes every output byte at least once (padded tiles and
  re-reads only add), so the bound is generous; without a frozen work model it is not checked
  (``P8.work_model`` reports that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import manifest as manifest_mod, work_model
from ..errors import PerftuneError
from ..measure import attestation, evidence
from ..measure.backends import pypto_sim

WORK_SHARE = 0.5
Problem = tuple[str, str, str, str | None, str | None]


def _backend(rnd: evidence.RoundEvidence) -> str | None:
    return (rnd.collection.get("environment") or {}).get("backend") or rnd.collection.get("backend")


def _folders(rnd: evidence.RoundEvidence, case_id: str) -> list[tuple[str, int, Path]]:
    """``(where, repeat number, folder)`` of every timed launch of one case (both arms when paired)."""
    out = []
    for index in range(1, int(rnd.collection.get("repeats") or 0) + 1):
        for arm in (("candidate", "baseline") if rnd.paired else ("",)):
            folder = rnd.cases[case_id].path / f"repeat_{index:03d}" / arm
            out.append((f"{rnd.collection_id}/{case_id}{'/' + arm if arm else ''} repeat {index}", index, folder))
    return out


def record_problems(where: str, record: dict[str, Any]) -> list[Problem]:
    """``P9.host_compute`` / ``P9.launch_output`` of one timed call's attestation record."""
    sim = record.get("sim")
    if not isinstance(sim, dict):
        return [("P9.launch_output", "performance_evidence_invalid", f"{where}: the timed call has no pypto-sim "
                 "launch record (re-collect the round with this collector)", "sim record", None)]
    out: list[Problem] = []
    host = sim.get("host_torch") or {}
    if host:
        names = ", ".join(f"{name} x{count}" for name, count in sorted(host.items())[:5])
        out.append(("P9.host_compute", "cheating", f"{where}: the op computed with torch on the host outside the "
                    f"simulated launch ({names}); only allocation, views, copies and metadata are allowed",
                    "no host torch compute", names))
    launched = set(sim.get("launch_outputs") or [])
    if not int(sim.get("launches") or 0):
        out.append(("P9.launch_output", "cheating", f"{where}: the op call launched no jit kernel",
                    ">= 1 launch", "0 launches"))
        return out
    for item in record.get("outputs", []):
        if item.get("kind") == "tensor" and item.get("sha256") not in launched:
            out.append(("P9.launch_output", "cheating", f"{where}: output {item.get('arg')} is not what a launch "
                        "wrote (its bytes at the op's return equal no launch output: computed or finished on the "
                        "host)", "a launch's output", f"{(item.get('sha256') or 'none')[:12]}"))
    return out


def work_problems(where: str, folder: Path, need: dict[str, Any]) -> list[Problem]:
    """``P9.launch_work`` of one archived launch against the work model's bytes of its case."""
    try:
        moved = pypto_sim.moved_bytes(folder)
    except PerftuneError as exc:
        return [("P9.launch_work", "performance_evidence_invalid", f"{where}: {exc.line()}", "readable", None)]
    out = []
    for direction, key in (("read", "read_bytes"), ("write", "write_bytes")):
        want = int(need.get(key) or 0)
        if want and moved[direction] < WORK_SHARE * want:
            out.append(("P9.launch_work", "cheating", f"{where}: the launch moved {moved[direction]} bytes "
                        f"({direction}, {moved['transfers']} transfers) where the work model needs {want} "
                        f"(a launch that processes a fraction of the data)", f">= {WORK_SHARE} x {want} bytes",
                        f"{moved[direction]} bytes"))
    return out


def _record(folder: Path) -> dict[str, Any] | None:
    try:
        obj = fsio.read_json(folder / attestation.ATTESTATION_JSON, what="attestation")
    except PerftuneError:
        return None   # P9.attestation reports a missing record
    return obj if isinstance(obj, dict) and "unavailable" not in obj else None


def problems(man: manifest_mod.Manifest, rounds: list[evidence.RoundEvidence]) -> list[Problem]:
    """Every check of the module docstring on the pypto-sim ``rounds``."""
    out: list[Problem] = []
    model = man.raw.get("work_model")
    for rnd in (r for r in rounds if _backend(r) == "pypto-sim"):
        for case in (c for c in man.cases if c.id in rnd.cases):
            need = work_model.case_work(model, case.id, case.shape, case.dtype) if model else None
            for where, index, folder in _folders(rnd, case.id):
                record = _record(folder)
                if record is not None:
                    out += record_problems(where, record)
                if need and index == 1:   # every repeat of a deterministic launch moves the same bytes
                    out += work_problems(where, folder, need)
    return out
