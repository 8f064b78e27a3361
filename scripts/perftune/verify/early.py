"""P9 where it first can: the verifier's own rules on a correctness run's probes (issue 35 Deliver 2).

stage5_check judges the delivered code's correctness probe (``P9.precision_gate``: the applied gate and the
fresh-seed caching probes; ``P9.reference_call``, ``P9.deferred_output``) and its beyond-P0 probes
(``P9.tail_inputs``, ``P9.support_shapes``, ``P9.kb_obligation``) at the very end. The same rules, the same
functions (``soundness.precision_problems``, ``timed_calls.probe_problems``, ``beyond_p0.judge``: one owner),
run here on every correctness run of a frozen operator and again at each acceptance, so an experiment the
verifier would FAIL is rejected at step 1 or refused as ``accepted``, naming the check id:

- :func:`judge` (``check_correctness.py``, through ``measure.correctness.run_all(judge=...)``): the
  probes ran with the beyond-P0 step on the same first call (``probe_runner --beyond-seed``; pypto-sim:
  no second compile, no shape drawn). A beyond-P0 failure is compared with the saved v000 code (its own
  probe process, only when something fails), or, while no v000 is recorded or the code is v000, with
  itself (a limit of the code Stage 4 delivered, disclosed in ``early.limits``).
- :func:`require_clean` (``ledger.py update --status accepted``): the item's correctness record judged
  again from its probe results (never its stored verdict), plus on pypto-sim the accumulation widths of
  the item's formal round (``beyond_p0.sim_reductions``; the verifier reads the final round's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract import manifest as manifest_mod, protocol
from ..decide import candidates
from ..decide.ledger import find_item
from ..errors import ContractError, PerftuneError
from ..measure import correctness, evidence
from ..measure.backends.case_adapter import find_runner
from . import beyond_p0, soundness, timed_calls


def _baseline(op_dir: Path, man, sha: str, seed: int, sigmas: float):
    """(what the beyond-P0 failures are compared with, the callback ``beyond_p0.judge`` runs)."""
    try:
        base = candidates.load_candidates(op_dir)["candidates"][0]
    except (PerftuneError, IndexError):
        base = None
    if base is None or base["executable_sha256"] == sha or not (op_dir / base["saved_copy"]).is_dir():
        return "this code (no other baseline: its failures are Stage 4's limits)", None
    runner = find_runner(op_dir / base["saved_copy"])
    return base["version_id"], lambda case, shapes: beyond_p0._probe(op_dir, runner, man, case.id, seed, shapes,
                                                                     sigmas)


def _rows(man, cases: list[dict[str, Any]]) -> list[tuple]:
    rows = []
    for case in cases:
        beyond = (case.get("probe") or {}).get("beyond")
        if case.get("p0") and beyond and case["id"] in man.case_ids:
            rows.append((man.case(case["id"]), [(e["shape"], e["dtype"]) for e in beyond.get("shapes", [])], beyond))
    return rows


def judge(op_dir: str | Path, man: manifest_mod.Manifest, cases: list[dict[str, Any]], seed: int | None,
          rounds: tuple | None = None) -> dict[str, Any]:
    """The ``early`` block of a correctness record: ``findings`` (check, category, message) stage5_check's P9
    would report from these probes, and the disclosed ``limits``. ``rounds`` (pypto-sim, at acceptance):
    ``(delivered round, baseline round)`` whose simulator files give the accumulation widths."""
    root = Path(op_dir)
    record = {"cases": cases}
    found = [("P9.precision_gate", cat, msg) for cat, msg in soundness.precision_problems(root, man, record)]
    found += [(check, cat, msg) for check, cat, msg, _, _ in timed_calls.probe_problems(man, record)]
    note = beyond_p0.new_note(man, seed or 0)
    rows = _rows(man, cases)
    if rounds is not None:
        for case, _, result in rows:
            result["reductions"] = beyond_p0.sim_reductions(rounds[0], case.id)
    sha = evidence.executable_sha256(root, evidence.source_files(root, man))
    against, run = _baseline(root, man, sha, seed or 0, note["tail_sigmas"])
    own = {case.id: result for case, _, result in rows}

    def baseline(case, shapes):
        again = own[case.id] if run is None else run(case, shapes)
        if rounds is not None and run is not None:
            again["reductions"] = beyond_p0.sim_reductions(rounds[1], case.id)
        return again

    found += [(check, cat, msg) for check, cat, msg, _, _ in beyond_p0.judge(root, rows, baseline, note)]
    return {"seed": seed or 0, "baseline": against, "limits": note["limits"],
            "findings": [{"check": check, "category": cat, "message": msg} for check, cat, msg in found]}


def require_clean(op_dir: str | Path, item_id: str, led: dict[str, Any]) -> dict[str, Any]:
    """``led`` unless ``item_id`` is now ``accepted`` and its correctness run holds what P9 fails (refused,
    naming the check id)."""
    item = find_item(led, item_id)
    if item["status"] != "accepted":
        return led
    root = Path(op_dir)
    man = manifest_mod.load_manifest(root / protocol.MANIFEST_NAME)
    record = correctness.load_record(root, correctness.run_id_of(item["evidence"]["correctness"]))
    rounds = _sim_rounds(root, man, item["evidence"].get("formal") or [])
    early = judge(root, man, record["cases"], (record.get("early") or {}).get("seed"), rounds)
    if early["findings"]:
        first = early["findings"][0]
        raise ContractError("ledger.json", f"{item_id}.status", f"accepted refused: {first['check']} "
                            f"({first['category']}): {first['message']}", "stage5_check would FAIL this code: close "
                            "it rejected/contract_violation with --restore-point BEST_VERSION and restore the best")
    return led


def _sim_rounds(root: Path, man, formal: list[str]) -> tuple | None:
    """pypto-sim: (the item's candidate round, the v000 round) for the simulator's accumulation widths."""
    if man.protocol.backend not in protocol.DETERMINISTIC_BACKENDS or not formal:
        return None
    base = candidates.load_candidates(root)["candidates"][0]["formal_collection_id"]
    return evidence.load_round(root, formal[0]), evidence.load_round(root, base)
