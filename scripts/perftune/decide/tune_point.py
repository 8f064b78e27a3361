"""One point of a frozen search (issue 39), measured in a private copy of the operator folder.

The point's code is the base version's file with the point's values (:func:`search.apply`); in a
scratch copy of the operator folder (the search records and quick screens left out) it runs the
frozen correctness gate (a point whose code is the base's, same sha256, is the base itself: its
correctness record is the base's own recorded run, ``correctness.base_code``, not run again; else
``correctness.run_all``, stopped at the first test when that test fails: the
point is out of the ranking either way; the record's ``stopped`` lists the tests not run) and, once its
first test passed, beside the other tests on pypto-sim (exact cycles: the screen takes the cores the
gate leaves idle; ranked only when every test passed, archived either way), else after them, a quick screen
paired with the base version (``collect.run_quick``: pypto-sim exact cycles with each question once,
cpu the paired quick protocol) and its quick compare against the base round (the frozen promotion
rule). The objective is that compare's ``promotion.score`` (higher is better). Whatever happens,
the point is archived under ``docs/perf/search/<item>/points/t_NNN/`` with its code, its
correctness record, its screen and compare files and ``point.json``; a failure is a point status,
never a dropped point. Runs in a worker process (local pool or a Dask worker): arguments and result
are plain data.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import quick, search
from .. import fsio
from ..contract import manifest, protocol
from ..errors import PerftuneError
from ..measure import collect, correctness, evidence

POINT_NAME = "point.json"
_SKIP = ("search", evidence.QUICK_DIR, "stage5_remeasure", "__pycache__")


def point_dir(op_dir: str | Path, item_id: str, trial: int) -> Path:
    return Path(op_dir) / search.SEARCH_DIR / item_id / "points" / f"t_{trial:03d}"


def evaluate(op_dir: str, item_id: str, block: dict[str, Any], trial: int, values: dict[str, Any],
             jobs: int = 1, slot_dir: str | None = None) -> dict[str, Any]:
    """Measure one point and archive it; returns the point (``status``: measured, correctness_failed,
    screen_failed or failed with the one-line reason). ``jobs``: the point's processes side by side (its
    probes, tests and screen cases; ``PERFTUNE_JOBS``); ``slot_dir``: the search's shared slots, one held
    by each process the point starts (:mod:`measure.slots`)."""
    os.environ[protocol.JOBS_ENV] = str(max(1, int(jobs)))
    if slot_dir:
        os.environ[protocol.SLOTS_ENV] = slot_dir
    else:
        os.environ.pop(protocol.SLOTS_ENV, None)
    root = Path(op_dir).resolve()
    out = point_dir(root, item_id, trial)
    out.mkdir(parents=True, exist_ok=False)
    point = {"trial": trial, "values": values, "status": "failed", "objective": None, "created_at": evidence.utc_now()}
    scratch = Path(tempfile.mkdtemp(prefix=f"tune_{item_id}_{trial:03d}_"))
    try:
        work = scratch / root.name
        shutil.copytree(root, work, ignore=_ignore(root), symlinks=True)
        base_file = root / protocol.PERF_DIR / "versions" / block["base"]["version"] / block["file"]
        code = search.apply(base_file.read_text(encoding="utf-8"), values, str(base_file))
        (work / block["file"]).write_text(code, encoding="utf-8")
        (out / block["file"]).write_text(code, encoding="utf-8")
        point["code_sha256"] = evidence.executable_sha256(work, evidence.source_files(work))
        _measure(work, block, point, out)
    except PerftuneError as exc:
        point.update(status="failed", failure=exc.line())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    point["completed_at"] = evidence.utc_now()
    fsio.write_json(out / POINT_NAME, point, overwrite=False)
    return point


def _ignore(root: Path):
    perf = (root / protocol.PERF_DIR).resolve()

    def skip(folder: str, names: list[str]) -> list[str]:
        inside = Path(folder).resolve() == perf
        return [n for n in names if n == "__pycache__" or (inside and n in _SKIP)]
    return skip


class _Beside:
    """The point's screen in a thread of its own, started once the first test passed (beside the others)."""

    def __init__(self, work: Path, base: Path) -> None:
        self.work, self.base, self.thread, self.result, self.error = work, base, None, None, None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="screen")
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = collect.run_quick(collect.prepare(self.work, collect.Overrides()), paired_with=self.base)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the point's thread by screen()
            self.error = exc

    def screen(self) -> dict[str, Any]:
        if self.thread is None:   # one test, no process (a reused question) or the base's code: screen now
            self.start()
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def _base_run(work: Path, block: dict[str, Any], code_sha256: str) -> dict[str, Any] | None:
    """The base version's own recorded correctness run (its candidates.json entry) when the point's code
    is the base's, byte for byte (same executable sha256): the base itself, gated when it was recorded."""
    if code_sha256 != block["base"]["executable_sha256"]:
        return None
    path = work / protocol.PERF_DIR / protocol.CANDIDATES_NAME
    try:
        entry = next((c for c in fsio.read_json(path, what="candidates.json")["candidates"]
                      if c["version_id"] == block["base"]["version"]), None)
        record = correctness.load_record(work, entry["correctness"]["run_id"]) if entry else None
    except (PerftuneError, KeyError, TypeError):   # no usable record of the base: the gate runs as for any point
        return None
    return record if record and record["executable_sha256"] == code_sha256 and record["all_passed"] else None


def _gate(work: Path, block: dict[str, Any], point: dict[str, Any], beside: "_Beside") -> dict[str, Any]:
    """The point's correctness record: the base's own run for the base's code, else the frozen gate
    (on pypto-sim the screen starts beside the tests once the first passed)."""
    base = _base_run(work, block, point["code_sha256"])
    if base is not None:
        return {**base, "base_code": block["base"]["version"]}
    exact = manifest.load_manifest(work / protocol.MANIFEST_NAME).protocol.backend in \
        protocol.DETERMINISTIC_BACKENDS   # exact cycles: no timing shares a core with the tests' noise
    try:
        return correctness.run_all(work, at=evidence.utc_now(), stop_at_first_failure=True,
                                   on_first_pass=beside.start if exact else lambda: None)[1]
    finally:
        if beside.thread is not None:
            beside.thread.join()


def _measure(work: Path, block: dict[str, Any], point: dict[str, Any], out: Path) -> None:
    beside = _Beside(work, work / protocol.PERF_DIR / "versions" / block["base"]["version"])
    record = _gate(work, block, point, beside)
    fsio.write_json(out / "correctness.json", record, overwrite=False)
    point["correctness"] = {"run_id": record["run_id"], "all_passed": record["all_passed"],
                            "failed": [c["id"] for c in record["cases"] if not correctness.case_passed(c)],
                            **({"not_run": record["stopped"]["not_run"]} if "stopped" in record else {}),
                            **({"base_code": record["base_code"]} if "base_code" in record else {})}
    if not record["all_passed"]:
        if beside.result is not None:   # the screen ran beside a later test that failed: archived, never ranked
            fsio.write_json(out / protocol.QUICK_NAME, {k: v for k, v in beside.result.items() if k != "path"},
                            overwrite=False)
        point.update(status="correctness_failed", failure=_correctness_failure(record))
        return
    screen = beside.screen()
    fsio.write_json(out / protocol.QUICK_NAME, {k: v for k, v in screen.items() if k != "path"}, overwrite=False)
    if screen["status"] != "complete":
        point.update(status="screen_failed", failure=screen.get("failure"))
        return
    compare, _ = quick.load_quick_compare(work, block["base"]["round"], screen["collection_id"])
    fsio.write_json(out / quick.QUICK_COMPARE_NAME, compare, overwrite=False)
    promo = compare["promotion"]
    point.update(status="measured", objective=promo["score"], promote=promo["promote"],
                 cases=[{"case": r["case"], "baseline_us": r["baseline_us"], "quick_us": r["quick_us"],
                         "samples": r["samples"]} for r in compare["per_case"]])


def _correctness_failure(record: dict[str, Any]) -> str:
    """The one line of a failed correctness run: its first failed test and why (its error, probe
    failure or early finding), and the tests a stopped run did not run."""
    case = next((c for c in record["cases"] if not correctness.case_passed(c)), None)
    if case is None:
        first = ((record.get("early") or {}).get("findings") or [{}])[0]
        return f"correctness: {first.get('check', 'early')}: {first.get('message', 'an early finding')}"
    why = correctness.probe_failure(case) or (case.get("probe") or {}).get("test_error") \
        or (case["output_tail"].strip().splitlines() or ["the test failed"])[-1]
    stopped = record.get("stopped")
    rest = f" (stopped: {len(stopped['not_run'])} tests not run)" if stopped else ""
    return f"correctness: {case['id']}: {why}{rest}"
