"""P3.final_attempts: every final attempt counts (issue 35 item 6): the delivered figure is the rule's.

An attempt is a complete formal round of the delivered code paired with the baseline code, up to the
final round (the ranking round, a confirm paired with v000, every final round, kept or re-collected:
the chain keeps them, ``P3.history_chain``; a later one is ``P3.final_is_last``). The rule and its owner:
:mod:`perftune.decide.attempts` (docs/statistics.md, "Every final attempt counts"), which
``compare_perf.py formal`` applies to ``performance.json``. Here the rule is recomputed over every attempt
on disk: a delivered figure (a target case's speed-up and CI, the suite score) that is not the rule's
FAILs, naming the case, the delivered figure, the rule's and the rounds. The rounds weighed and every
attempt's point are stated in the verdict (``provenance.final_attempts``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..decide import attempts, compare
from ..errors import PerftuneError
from . import stage5_evidence as ev

BAD = "performance_evidence_invalid"


def _same(a: Any, b: Any) -> bool:
    return not ev.json_differences(a, b)   # P4's comparison: floats within its relative tolerance


def _rule_text(rule: dict[str, Any], point: float | None) -> str:
    how = f"median attempt {rule['median_round']}" if rule.get("figure") == "median" else "the final round's own"
    return f"{point} ({how}, {rule.get('attempts')} attempt(s): {', '.join(rule.get('rounds') or [])})"


def check(op_dir: Path, perf: dict[str, Any], recomputed: dict[str, Any] | None = None
          ) -> tuple[list[tuple], dict[str, Any]]:
    """(problems naming ``P3.final_attempts``, the provenance note); ``recomputed``: P4's recomputation when
    it ran (``compare.load_formal``), else the rule is recomputed up to the final round. The recomputation
    failing is another check's finding (``P3.final_is_last``, ``P4.inputs``): stated here, never a second FAIL."""
    try:
        rule = recomputed or compare.load_formal(op_dir, perf["baseline_collection_id"], perf["final_collection_id"],
                                                 newest=False)
    except PerftuneError as exc:
        return [], {"status": "unreadable", "reason": exc.line()}
    delivered = {row.get("case"): row for row in perf.get("per_case") or []}
    out, cases = [], {}
    for row in (r for r in rule["per_case"] if r["target"]):
        cases[row["case"]] = row["attempts"]
        got = delivered.get(row["case"]) or {}
        if not (_same(got.get("speedup"), row["speedup"]) and _same(got.get("speedup_ci"), row["speedup_ci"])):
            out.append((BAD, f"case {row['case']}: the delivered speed-up {got.get('speedup')} CI "
                        f"{got.get('speedup_ci')} is not the figure the rule gives over every final attempt "
                        f"({attempts.describe(row['attempts']) or 'the final round’s own'})",
                        "P3.final_attempts", _rule_text(row["attempts"], row["speedup"]), f"{got.get('speedup')}"))
    suite, got = rule["suite"], perf.get("suite") or {}
    if not all(_same(got.get(k), suite[k]) for k in attempts.SUITE_FIGURES):
        out.append((BAD, f"suite: the delivered score {got.get('score')} is not the figure the rule gives over "
                    "every final attempt", "P3.final_attempts", _rule_text(suite["attempts"], suite["score"]),
                    f"{got.get('score')}"))
    return out, {"rounds": suite["attempts"]["rounds"], "cases": cases, "suite": suite["attempts"]}


def lines(provenance: dict[str, Any] | None) -> str:
    """The text verdict's statement where the median attempt's figure is the delivered one."""
    note = (provenance or {}).get("final_attempts") or {}
    return "".join(f"Figure delivered (P3): case {case}: {attempts.describe(c)}\n"
                   for case, c in sorted((note.get("cases") or {}).items()) if attempts.describe(c))
