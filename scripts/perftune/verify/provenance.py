"""Where Stage 5's starting point came from: the baseline is what Stage 4 delivered (issue 28 item 4).

Stage 4's check (``validate_stage.py 4``) writes ``docs/stages/stage4_check.json`` with the file record
(path, sha256) of every input it validated: ``test_<op>.py``, the goldens, SPEC.md, KB_SELECTION.json,
module_interfaces.yaml, ... When that record exists and says PASS (the last stage4-check PASS):

- ``P3.baseline_origin``: every source file of the baseline round (``collection.json``
  ``source_files``) that Stage 4 validated must have the sha256 Stage 4 saw; a slowed Stage 4 kernel
  measured as the baseline is ``cheating``. A baseline source file Stage 4 never saw (a module added
  by Stage 5) leaves the origin ``unverified`` for that file.
- ``P2.stage4_inputs``: every file of ``FROZEN_INPUTS.json`` that Stage 4 validated must have the
  sha256 Stage 4 saw: a SPEC with a loosened gate or an easier shape under a target id, frozen by a
  Stage 5 restarted from scratch, is ``stage5_contract_blocked`` here, not only in ``complete_stage 5``.

Without the record (a standalone perf-tune run), or with one that does not say PASS, nothing is
compared and the verdict's ``provenance`` says the baseline's origin is ``unverified``; in an
orchestrated run (``.orchestrator_state.json``) that is itself ``P3.baseline_origin``
(``stage5_contract_blocked``): ``complete_stage 4`` needed the PASS record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import frozen_inputs, null_outputs, protocol
from ..measure import round_chain
from ..errors import PerftuneError

STAGE4_CHECK = "docs/stages/stage4_check.json"
Problem = tuple[str, str, str, str, str]   # (check id, category, message, expected, actual)


def stage4_record(op_dir: Path) -> tuple[dict[str, str] | None, str]:
    """``{path: sha256}`` of the files the last stage4-check PASS validated, or None and why not."""
    path = Path(op_dir) / STAGE4_CHECK
    if not path.is_file() or path.is_symlink():
        return None, f"no {STAGE4_CHECK} (standalone run): the baseline's origin is unverified"
    try:
        obj = fsio.read_json(path, what="stage 4 check")
        verdict, inputs = obj.get("verdict"), obj.get("inputs")
        files = {rec["path"]: rec["sha256"] for rec in inputs.values()}
    except (PerftuneError, AttributeError, KeyError, TypeError):
        return None, f"{STAGE4_CHECK} is unreadable (no inputs with path and sha256): the baseline's origin is unverified"
    if verdict != "PASS":
        return None, f"{STAGE4_CHECK} says {verdict}, not PASS: the baseline's origin is unverified"
    return files, f"compared with the last stage4-check PASS ({STAGE4_CHECK})"


def baseline_problems(op_dir: Path, baseline: dict[str, Any]) -> tuple[list[Problem], dict[str, Any]]:
    """The baseline round's source files against Stage 4's record; the problems and the verdict's note."""
    validated, why = stage4_record(op_dir)
    if validated is None:
        orchestrated = (Path(op_dir) / protocol.STATE_NAME).is_file()   # Stage 4 completed only with a PASS record
        return ([("P3.baseline_origin", "stage5_contract_blocked", f"orchestrated run: {why}; complete_stage 4 needed "
                  "that PASS record (restore it, never re-run Stage 4 on Stage 5's code)", "a PASS record", why)]
                if orchestrated else []), {"baseline_origin": "unverified", "reason": why}
    out: list[Problem] = []
    unseen = []
    for rec in baseline.get("source_files") or []:
        seen = validated.get(rec.get("path"))
        if seen is None:
            unseen.append(rec.get("path"))
        elif seen != rec.get("sha256"):
            out.append(("P3.baseline_origin", "cheating",
                        f"baseline round {baseline.get('collection_id')} measured {rec['path']} with another content "
                        f"than the last stage4-check PASS validated ({STAGE4_CHECK}): the baseline is not the code "
                        "Stage 4 delivered (slowed before the baseline round?)", seen, rec.get("sha256")))
    status = "mismatch" if out else ("unverified" if unseen else "verified")
    note = {"baseline_origin": status, "reason": why}
    if unseen:
        note["not_validated_by_stage4"] = sorted(unseen)
    return out, note


def frozen_input_problems(op_dir: Path) -> list[Problem]:
    """Every frozen input Stage 4 validated is the file Stage 4 saw (no SPEC edit on a restart)."""
    validated, _ = stage4_record(op_dir)
    if validated is None:
        return []
    try:
        frozen = fsio.read_json(Path(op_dir) / frozen_inputs.RECORD_NAME, what="frozen inputs").get("files")
    except (PerftuneError, AttributeError):
        return []   # contract_history reports a missing or unreadable record
    out: list[Problem] = []
    for name, sha in sorted((frozen or {}).items()):
        if name in validated and validated[name] != sha:
            out.append(("P2.stage4_inputs", "stage5_contract_blocked",
                        f"{frozen_inputs.RECORD_NAME} froze {name} with another content than the last stage4-check "
                        f"PASS validated ({STAGE4_CHECK}): the contract changed after Stage 4 (a restarted Stage 5 "
                        "with an edited SPEC?); restore the Stage 4 file or re-run Stages 1-4", validated[name], sha))
    return out


def history_problems(op_dir: Path, final: Any) -> tuple[list[Problem], dict[str, Any]]:
    """The round hash chain has no gap or broken link, and the final round is the last of its code."""
    found, note = round_chain.problems(op_dir)
    out: list[Problem] = [("P3.history_chain", "performance_evidence_invalid", msg, "an unbroken chain of rounds",
                           "a gap or a broken link") for msg in found]
    out += [("P3.final_is_last", "performance_evidence_invalid", msg, final.path.name, "a later round")
            for msg in round_chain.last_round_problems(op_dir, final.collection, final.path)]
    return out, note


def p3_problems(op_dir: Path, base: Any, final: Any) -> tuple[list[Problem], dict[str, Any]]:
    """P3's provenance checks (baseline origin, history) and the verdict's ``provenance`` note."""
    problems, note = baseline_problems(op_dir, base.collection)
    chain, history = history_problems(op_dir, final)
    return problems + chain, {**note, "history": history}


def p2_problems(op_dir: Path, man: Any) -> list[Problem]:
    """P2's provenance checks: the frozen inputs are Stage 4's, and the frozen precision gate can fail."""
    out = frozen_input_problems(op_dir)
    for case_id, dtype, accepted in null_outputs.run(op_dir, man):
        out.append(("P2.precision_gate_null", "stage5_contract_blocked",
                    f"case {case_id}: the frozen precision gate ({dtype}) accepts {', '.join(accepted)} as the output: "
                    "a gate that cannot fail checks nothing (loosened tolerances); restore SPEC.md's gate",
                    "zeros, a constant and the input fail the gate", f"accepted: {', '.join(accepted)}"))
    return out
