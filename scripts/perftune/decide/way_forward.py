"""The way forward after a stage5_check FAIL (issue 35 Deliver 3): perf_next never ends at a bare FAIL.

The rule, over the failures of ``docs/perf/stage5_check.json`` (first match wins):

1. **The delivered code is at fault**: a finding of category ``cheating`` or ``precision_failure`` of
   gate P5, P8, P9 or P10 (the code's behaviour on the frozen inputs). If the delivered version is
   an experiment, each of its accepted ledger items is reopened and closed ``rejected`` /
   ``contract_violation`` (the note names the check ids; the close cites the item's kept evidence), and the
   version it was measured after (its restore point, else the version recorded before it) is put
   back in place. ``select_best.py choose`` then ranks without it (a version linking a rejected item
   never ranks, decide/candidates.py) and the SKILL's steps 23-31 run again on the new choice. If
   the delivered code is the baseline v000 itself, stop: the contract and Stage 4's code disagree.
2. **Evidence a step rebuilds**: the first failing check in :data:`REBUILD` names the step that
   writes that evidence again; perf_next then prints every later step as usual.
3. Anything else (the contract, the dispatch, the ledger's own evidence, a broken history) stops
   with the check ids: it is not one experiment's fault, report it (failure-categories.md).

Nothing is deleted: the FAILed verdict, rounds, runs and tried versions stay on disk; the next
``stage5_check`` writes a new verdict over the newer evidence.
"""

from __future__ import annotations

from typing import Any

CODE_GATES = ("P5", "P8", "P9", "P10")
CODE_CATEGORIES = ("cheating", "precision_failure")
# check id (or gate) -> the step that writes its evidence again
REBUILD = {"P1": "report", "P4": "final_compare", "P6.target_status": "final_compare",
           "P8.terminal_evidence": "terminal", "P8.work_model": "terminal",
           "P2.fingerprint": "final_formal", "P10.reproduced": "final_formal"}


def _ids(failures: list[dict]) -> str:
    return ", ".join(dict.fromkeys(f"{f['check']} ({f['category']})" for f in failures))


def _code_faults(failures: list[dict]) -> list[dict]:
    return [f for f in failures if f["gate"] in CODE_GATES and f["category"] in CODE_CATEGORIES]


def plan(failures: list[dict], delivered: dict | None, register: list[dict],
         ledger_items: list[dict]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(step key, why, values)`` of the way forward; ``delivered``: the register entry of the code in place."""
    found = _ids(failures)
    faults = _code_faults(failures)
    if faults:
        if delivered is None or delivered["evaluation_order"] == 0:
            name = "the baseline v000" if delivered else "code that is no recorded version"
            return [("stop", f"stage5_check FAIL: {_ids(faults)} on {name}: the contract and Stage 4's code "
                             "disagree; report it (failure-categories.md), no experiment to reject", {})]
        return _reject(faults, delivered, register, ledger_items)
    for f in failures:
        key = REBUILD.get(f["check"]) or REBUILD.get(f["gate"])
        if key:
            return [("failed", f"stage5_check FAIL: {found}; {f['check']}'s evidence is rebuilt by step {key}", {}),
                    (key, f"rebuild the evidence {f['check']} judged", {})]
    return [("stop", f"stage5_check FAIL: {found}: not one experiment's fault; report it "
                     "(failure-categories.md), the history stays on disk", {})]


def _reject(faults: list[dict], delivered: dict, register: list[dict],
            ledger_items: list[dict]) -> list[tuple[str, str, dict[str, Any]]]:
    version = delivered["version_id"]
    by_id = {i["item_id"]: i for i in ledger_items}
    items = [i for i in delivered["items"] if by_id.get(i, {}).get("status") == "accepted"]
    before = register[register.index(delivered) - 1]["version_id"]
    restore = next((by_id[i]["evidence"].get("restore_point") for i in items
                    if by_id[i]["evidence"].get("restore_point")), None) or before
    note = f"stage5_check FAIL on {version}: {_ids(faults)}"
    out = [("failed", f"{note}: reject {', '.join(items) or 'its items'} and restore {restore}", {})]
    for item in items:
        out.append(("reopen", f"{item}: its accepted conclusion is invalidated by {note}",
                    {"ITEM_ID": item, "NOTE": note}))
        ev = by_id[item]["evidence"]     # kept by the reopen: the close cites the same evidence again
        out.append(("close_item", f"{item}: rejected, contract_violation ({version} is never delivered)", {
            "ITEM_ID": item, "STATUS": "rejected", "REASON_CODE": "contract_violation",
            "RUN_ID": ev.get("correctness"), "QUICK_ID": ev.get("quick") or None,
            "FORMAL_IDS": ev.get("formal") or None, "CODE_REF": ev.get("code_ref"), "BEST_VERSION": restore,
            "HYPOTHESIS": ev.get("mechanism") or by_id[item].get("hypothesis"), "RELATION": None, "NOTE": note}))
    out.append(("restore", f"{restore} back in place; choose then ranks without {version}", {"VERSION_ID": restore}))
    return out

