"""A verdict file is a claim: its consumers re-derive stage5_check's verdict (issue 35 items 7 and 8).

``docs/perf/stage5_check.json`` is written by the verifier into the agent's folder, so its verdict
field, its failures and its input records can all be edited. Its consumers (``perf_next.py``'s
``done`` step and the state machine's Stage 5 gate, ``complete_stage 5``) never read the verdict
alone: :func:`rederive` re-runs every recomputing gate on the files as they are now (the Stage 4
gates, IN, P1-P9: nothing is measured) and re-derives P10 from the re-measurement archive the file
cites (``remeasure.replay``: its sha256, its seal, every rule recomputed from its raw files), then
adds two checks of the file itself:

- ``P1.edited_after_check``: a file the verdict judged (its ``inputs``: the manifest,
  ``performance.json``, ``PERFORMANCE_REPORT.md``, the ledger, candidates, selection, confirm log,
  terminal evidence, the delivered sources; ``verdict.judged_files``) no longer has the recorded
  sha256: it was edited after the verifier ran (re-run ``stage5_check.py``);
- ``P1.verdict_record``: the file's verdict or its set of failed checks is not the re-derived one (a
  FAIL edited to PASS, a finding removed).

The re-derived verdict is what counts. An edit that also rewrites the input records is caught by
the gates that recompute what was edited (``P1.report_rendering`` for the report's numbers, P4 for
``performance.json``, ``P7.item_decision`` for a ledger status); a ledger note's free text is only in
the report's rendering (docs/stage5-check.md, "cannot catch"). Cost: P1-P9 without the
re-measurement, seconds on cpu (docs/stage5-check.md, "Consumers re-derive the verdict").
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol, schemas
from ..errors import PerftuneError
from . import stage5
from .checks import finding


def verdict_path(op_dir: str | Path) -> Path:
    return Path(op_dir) / protocol.PERF_DIR / protocol.STAGE5_CHECK_NAME


def _claim(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        obj = fsio.read_json(path, what="stage5_check.json")
        schemas.validate(obj, "stage5_check", path)
    except PerftuneError as exc:
        return None, exc.line()
    return obj, None


def rederive(op_dir: str | Path) -> dict[str, Any]:
    """``{verdict, claimed, failures, categories, failed_checks, seconds}``: the verdict of the files now."""
    root, started = Path(op_dir), time.monotonic()
    claimed, problem = _claim(verdict_path(root))
    if claimed is None:
        bad = finding("P1.verdict_record", "performance_evidence_invalid", f"no usable verdict file: {problem}",
                      expected="a stage5_check.json written by stage5_check.py", actual=problem)
        return _result("FAIL", None, [bad], started)
    target = claimed["target"]
    result = stage5.check(root, target["case_ids"], target["selection_mode"], rerun_tests=True,
                          replay=claimed.get("remeasure") or {"status": "not_run"})
    found = list(result.findings)
    for rec in (r for _name, r in sorted(claimed["inputs"].items()) if not fsio.record_matches(r, root)):
        found.append(finding("P1.edited_after_check", "performance_evidence_invalid",
                             f"{rec['path']} changed after the verifier ran (re-run stage5_check.py)",
                             expected=f"sha256 {rec['sha256'][:12]} as judged", actual="another content or missing"))
    derived = sorted({f.check for f in result.findings})
    recorded = sorted({f.get("check", "") for f in claimed["failures"]})
    if claimed["verdict"] != result.verdict or recorded != derived:
        found.append(finding("P1.verdict_record", "performance_evidence_invalid",
                             f"stage5_check.json says {claimed['verdict']} {recorded}, the files re-derive "
                             f"{result.verdict} {derived} (an edited verdict)",
                             expected=f"{result.verdict} {derived}", actual=f"{claimed['verdict']} {recorded}"))
    return _result("PASS" if not found else "FAIL", claimed["verdict"], found, started)


def _result(verdict: str, claimed: str | None, found: list, started: float) -> dict[str, Any]:
    return {"verdict": verdict, "claimed": claimed, "failures": [f.as_dict() for f in found],
            "categories": sorted({f.category for f in found}),
            "failed_checks": sorted({f.check for f in found}), "seconds": round(time.monotonic() - started, 3)}


def gate_problem(op_dir: str | Path) -> str | None:
    """The Stage 5 gate's reason to refuse ``complete_stage 5`` (None: the re-derived verdict is PASS)."""
    got = rederive(op_dir)
    if got["verdict"] == "PASS":
        return None
    return (f"{protocol.PERF_DIR}/{protocol.STAGE5_CHECK_NAME} re-derives to {got['verdict']} "
            f"({', '.join(got['failed_checks'][:5])}); re-run stage5_check.py and fix what it names")


def done_step(op_dir: str | Path, done: dict[str, Any]) -> dict[str, Any]:
    """``perf_next.py``'s ``done`` step with the verdict re-derived: a verdict file that claims PASS but does not
    re-derive to it sends the agent back to ``verify`` (re-run stage5_check.py), naming the re-derived checks."""
    claimed = (_claim(verdict_path(op_dir))[0] or {}).get("verdict")
    if claimed != "PASS":
        return done
    got = rederive(op_dir)
    if got["verdict"] == "PASS":
        return {**done, "why": "stage5_check: PASS (re-derived from the files now)"}
    return {**done, "key": "verify", "why": f"stage5_check.json says PASS, the files re-derive FAIL "
            f"({', '.join(got['failed_checks'][:5])}): re-run the verifier", "rederived": got}
