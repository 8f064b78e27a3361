"""Every evidence file the ledger and the report cite exists and is still what was cited (issue 28 item 6).

- ``P7.cited_evidence``: per ledger item, every formal round it cites loads as a complete round with an
  intact evidence seal (``evidence.load_round``: a round edited, spliced or re-sealed by hand after it
  completed fails there), its correctness run is a readable record whose id names its code
  (``c<NNN>-<first 8 hex of executable_sha256>``), and a file its ``source_ref`` names with a sha256
  (the bottleneck evidence of a derived item) still has that sha256.
- ``P7.cited_paths``: every path the ledger cites as a path exists inside the operator folder: each
  ``sweep.evidence_examined`` entry (with ``examined_files``, recorded by ``ledger.py sweep``: a file keeps
  its sha256, a round folder loads as the same collection; ``decide/citations.py``) and each item's
  ``code_ref`` that names a folder or file under ``docs/perf/`` (a tried or recorded version).
- ``P1.cited_evidence``: every round folder and correctness record ``PERFORMANCE_REPORT.md`` cites loads
  the same way (P1 already checks that each cited path exists inside the operator folder).

The ledger's own rules (coverage, transitions, the decision behind ``accepted``) are ``ledger_check``'s.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import fsio
from ..contract import protocol
from ..decide import citations, ledger
from ..errors import PerftuneError
from ..measure import correctness, evidence

_ROUND = re.compile(rf"^{protocol.PERF_DIR}/({protocol.ROUND_PREFIX}\d+)/?$")
_RUN = re.compile(rf"^{protocol.PERF_DIR}/correctness/(c\d+-[0-9a-f]{{8}})\.json$")


def _round_problem(op_dir: Path, ref: str) -> str | None:
    try:
        evidence.load_round(op_dir, ref)
    except PerftuneError as exc:
        return exc.line()
    return None


def _run_problem(op_dir: Path, run_id: str) -> str | None:
    try:
        record = correctness.load_record(op_dir, run_id)
    except PerftuneError as exc:
        return exc.line()
    if not run_id.endswith("-" + record["executable_sha256"][:8]):
        return f"correctness run {run_id} records code {record['executable_sha256'][:12]}: its id names other code"
    return None


def ledger_problems(op_dir: Path) -> list[str]:
    """What the ledger's items cite, checked against the files (an unusable ledger is P7's other check)."""
    try:
        items = ledger.load_ledger(ledger.ledger_path(op_dir))["items"]
    except (PerftuneError, KeyError, TypeError):
        return []
    out, rounds, runs = [], {}, {}
    for item in items:
        where = f"ledger item {item.get('item_id')}"
        cited = item.get("evidence") or {}
        for ref in cited.get("formal") or []:
            rounds.setdefault(ref, _round_problem(op_dir, ref))
            if rounds[ref]:
                out.append(f"{where} cites formal round {ref}: {rounds[ref]}")
        run_id = cited.get("correctness")
        if run_id:
            runs.setdefault(run_id, _run_problem(op_dir, run_id))
            if runs[run_id]:
                out.append(f"{where} cites correctness run {run_id}: {runs[run_id]}")
        source = item.get("source_ref") or {}
        if source.get("file", "").startswith(protocol.PERF_DIR + "/") and source.get("sha256"):
            path = op_dir / source["file"]
            if not path.is_file() or fsio.sha256_file(path) != source["sha256"]:
                out.append(f"{where} cites {source['file']} with sha256 {source['sha256'][:12]}: the file is missing "
                           "or changed since it was cited")
    return out


def report_problems(op_dir: Path, cited: list[str]) -> list[str]:
    """Round folders and correctness records cited by the report still load (paths already exist: P1)."""
    out = []
    for path in sorted(set(cited)):
        if (match := _ROUND.match(path)) and (problem := _round_problem(op_dir, match.group(1))):
            out.append(f"{protocol.PERFORMANCE_REPORT_MD} cites {path}: {problem}")
        elif (match := _RUN.match(path)) and (problem := _run_problem(op_dir, match.group(1))):
            out.append(f"{protocol.PERFORMANCE_REPORT_MD} cites {path}: {problem}")
    return out


def path_problems(op_dir: Path) -> list[str]:
    """P7.cited_paths: the sweep's examined paths and the items' archived code refs exist (and keep their
    recorded identity); an unusable ledger is P7.ledger's."""
    try:
        led = ledger.load_ledger(ledger.ledger_path(op_dir))
    except (PerftuneError, KeyError, TypeError):
        return []
    out = []
    sweep = led.get("sweep") or {}
    if "examined_files" in sweep:
        out += citations.problems(op_dir, sweep["examined_files"], "the ledger sweep")
        unrecorded = sorted(set(sweep["evidence_examined"]) - {r["path"] for r in sweep["examined_files"]})
        out += [f"the ledger sweep cites {p} without a recorded identity" for p in unrecorded]
    elif sweep:
        out += citations.missing(op_dir, sweep.get("evidence_examined") or [], "the ledger sweep")
    for item in led["items"]:
        ref = (item.get("evidence") or {}).get("code_ref") or ""
        if ref.startswith(protocol.PERF_DIR + "/"):
            out += citations.missing(op_dir, [ref], f"ledger item {item.get('item_id')} (code_ref)")
    return out
