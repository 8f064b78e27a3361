"""The demo's experiment plan and decisions (pure): what to try, how to close items, the summary.

The plan is the operator folder's ``variants/variants.json`` (docs/operator-format.md): ``protocol``
(what the dispatch and the engineer decide before freezing: backend, op name, target case ids or
``all_p0``, selection mode, warm-up and repeats (optional: the backend's own defaults), noise band), optional ``golden`` (function, factory),
``variants[]`` (one experiment per version: exactly ``version_id, item_id, source_kind,
hypothesis, expected_metric``; each runs on the current best, so there is no ``parent``), ``closures[]`` (items closed without an experiment: a status with
its note/grounds, or ``same_as`` another item's conclusion and evidence; each names its ``item_id`` or
closes by rule, ``match: {source_kind, gate, keyword}``, so a plan can be written before any ledger
exists) and ``sweep`` (scope and findings of the final candidate sweep). It stands in for the agent's
judgement, nothing else.

Which entry covers a ledger item (:meth:`Plan.closure_for`): its experiment; else the closure naming its
id; else the first rule, in plan order, whose every given key matches: ``source_kind`` equals the item's,
``gate`` names one of its recorded gates (``gates.<name>``), ``keyword`` is a case-insensitive part of
its title, or of that gate's text when ``gate`` is given.

The plan decides nothing a rule decides: promotion is ``compare_perf.py quick``'s
``promotion.promote`` and the item decision ``compare_perf.py formal``'s ``item_acceptance``, both by
the rules frozen in PERFORMANCE_CASES.json (``perftune.decide.acceptance``, docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ContractError


EXPERIMENT_FIELDS = ("version_id", "item_id", "source_kind", "hypothesis", "expected_metric")
RULE_KEYS = ("source_kind", "gate", "keyword")
CLOSURE_FIELDS = ("item_id", "match", "note", "status", "same_as", "applicability", "grounds")


@dataclass(frozen=True)
class Experiment:
    version_id: str
    item_id: str
    source_kind: str
    hypothesis: str
    expected_metric: str
    search: tuple[str, ...] | None = None    # tune.py declare's arguments: a search instead of one edit


@dataclass(frozen=True)
class Rule:
    """A closure's ``match``: every given key must hold for a ledger item (module docstring)."""
    source_kind: str | None = None
    gate: str | None = None
    keyword: str | None = None

    def matches(self, item: dict[str, Any]) -> bool:
        gates = item.get("gates") or {}
        if self.source_kind is not None and item.get("source_kind") != self.source_kind:
            return False
        if self.gate is not None and self.gate not in gates:
            return False
        text = str(gates[self.gate]) if self.gate is not None else str(item.get("title", ""))
        return self.keyword is None or self.keyword.casefold() in text.casefold()


@dataclass(frozen=True)
class Closure:
    item_id: str | None
    note: str
    status: str | None = None
    same_as: str | None = None
    applicability: str | None = None
    grounds: str | None = None
    match: Rule | None = None


@dataclass(frozen=True)
class Protocol:
    backend: str
    op_name: str
    target_case_ids: tuple[str, ...] | str
    selection_mode: str
    warmup: int | None       # None: the backend's own default (flow.Agent.judgement)
    repeats: int | None
    noise_band: float


@dataclass(frozen=True)
class Plan:
    experiments: tuple[Experiment, ...]
    closures: tuple[Closure, ...]
    sweep_scope: str
    sweep_findings: tuple[dict[str, str], ...] = field(default_factory=tuple)
    protocol: Protocol | None = None
    golden: dict[str, str] = field(default_factory=dict)
    compliance: str = "single kernel, wrapper unchanged"

    def closure_for(self, item: dict[str, Any]) -> Closure | None:
        """The closure that covers a ledger item: by its id, else the first matching rule; None for an
        item with an experiment (it is tried, never closed by rule) or one the plan does not cover."""
        by_id = next((c for c in self.closures if c.item_id == item["item_id"]), None)
        if by_id is not None or any(e.item_id == item["item_id"] for e in self.experiments):
            return by_id
        return next((c for c in self.closures if c.match is not None and c.match.matches(item)), None)

    def covers(self, item: dict[str, Any]) -> bool:
        return any(e.item_id == item["item_id"] for e in self.experiments) or self.closure_for(item) is not None


def _field(entry: Any, key: str, source: str, where: str) -> str:
    value = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise ContractError(source, f"{where}.{key}", "is missing or empty", "fill it in variants.json")
    return value


def parse_plan(obj: Any, source: str = "variants.json") -> Plan:
    """Validate and parse the plan; ids unique, no field the run would ignore, closures either status or
    same_as. An experiment has no ``parent``: it runs on the current best, which the measured acceptances
    of the experiments before it decide (SKILL step 14), so a plan written before the results cannot name it."""
    if not isinstance(obj, dict) or not isinstance(obj.get("variants"), list):
        raise ContractError(source, "variants", "is missing", "list the experiments under 'variants'")
    experiments, seen = [], {"v000"}
    for i, entry in enumerate(obj["variants"]):
        where = f"variants[{i}]"
        exp = Experiment(*(_field(entry, k, source, where) for k in EXPERIMENT_FIELDS), _search(entry, source, where))
        extra = sorted(set(entry) - set(EXPERIMENT_FIELDS) - {"search"})
        if extra:
            raise ContractError(source, f"{where}.{extra[0]}", "is not a field of an experiment (each runs on the "
                                "current best; docs/operator-format.md)", f"remove it; the fields are {list(EXPERIMENT_FIELDS)}")
        if exp.version_id in seen:
            raise ContractError(source, f"{where}.version_id", f"{exp.version_id!r} duplicates an earlier id",
                                "give every variant its own version_id")
        seen.add(exp.version_id)
        experiments.append(exp)
    closures = [_closure(entry, source, f"closures[{i}]") for i, entry in enumerate(obj.get("closures", []))]
    sweep = obj.get("sweep") or {}
    findings = tuple(sweep.get("findings", []))
    for i, finding in enumerate(findings):
        for key in ("finding", "maps_to", "note"):
            _field(finding, key, source, f"sweep.findings[{i}]")
    return Plan(tuple(experiments), tuple(closures), _field(sweep, "scope", source, "sweep"), findings,
                _protocol(obj.get("protocol"), source), _golden(obj.get("golden"), source),
                obj.get("compliance") or "single kernel, wrapper unchanged")


def _closure(entry: Any, source: str, where: str) -> Closure:
    """One closure: ``item_id`` or ``match`` (exactly one), a note, and exactly one of status / same_as."""
    if not isinstance(entry, dict):
        raise ContractError(source, where, "is not an object", "give item_id or match, note, status or same_as")
    extra = sorted(set(entry) - set(CLOSURE_FIELDS))
    if extra:
        raise ContractError(source, f"{where}.{extra[0]}", "is not a field of a closure", f"the fields are {list(CLOSURE_FIELDS)}")
    if ("item_id" in entry) == ("match" in entry):
        raise ContractError(source, where, "needs exactly one of item_id / match",
                            "name the item, or close by rule: match {source_kind, gate, keyword}")
    rule = None
    if "match" in entry:
        raw = entry["match"]
        if not isinstance(raw, dict) or not raw or set(raw) - set(RULE_KEYS):
            raise ContractError(source, f"{where}.match", f"{raw!r} is not a rule", f"give one or more of {list(RULE_KEYS)}")
        rule = Rule(**{key: _field(raw, key, source, f"{where}.match") for key in raw})
    item_id = _field(entry, "item_id", source, where) if rule is None else None
    closure = Closure(item_id, _field(entry, "note", source, where), entry.get("status"), entry.get("same_as"),
                      entry.get("applicability"), entry.get("grounds"), rule)
    if (closure.status is None) == (closure.same_as is None):
        raise ContractError(source, where, "needs exactly one of status / same_as", "fix the closure")
    return closure


def _search(entry: dict, source: str, where: str) -> tuple[str, ...] | None:
    """An experiment's ``search``: the arguments of ``tune.py declare`` (``--param NAME=VALUES``, ``--sampler``,
    ``--seed``, ``--budget``, ``--batch``), a list of strings; the experiment then has no variant file."""
    raw = entry.get("search") if isinstance(entry, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, list) or "--param" not in raw or not all(isinstance(a, str) for a in raw):
        raise ContractError(source, f"{where}.search", "is not a list of tune.py declare arguments with --param",
                            'e.g. ["--param", "TILE_BYTES=8192,16384", "--sampler", "grid", "--seed", "0"]')
    return tuple(raw)


def _protocol(raw: Any, source: str) -> Protocol:
    if not isinstance(raw, dict):
        raise ContractError(source, "protocol", "is missing", "give backend, op_name, target_case_ids, "
                            "selection_mode, warmup, repeats, noise_band (docs/operator-format.md)")
    target = raw.get("target_case_ids")
    if not (target == "all_p0" or (isinstance(target, list) and target and all(isinstance(t, str) for t in target))):
        raise ContractError(source, "protocol.target_case_ids", f"{target!r} is not 'all_p0' or a list of ids",
                            "name the target cases")
    numbers = {}
    for key, kind in (("warmup", int), ("repeats", int), ("noise_band", float)):
        value = raw.get(key)
        if value is None and key != "noise_band":
            numbers[key] = None   # the backend's own default
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
            raise ContractError(source, f"protocol.{key}", f"{value!r} is not a {kind.__name__}", "fix it")
        numbers[key] = value
    return Protocol(_field(raw, "backend", source, "protocol"), _field(raw, "op_name", source, "protocol"),
                    target if target == "all_p0" else tuple(target), _field(raw, "selection_mode", source, "protocol"),
                    **numbers)


def _golden(raw: Any, source: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ContractError(source, "golden", "is not an object", "give function and factory")
    return {key: _field(raw, key, source, "golden") for key in ("function", "factory") if key in raw}


def unplanned(plan: Plan, ledger_items: list[dict[str, Any]]) -> list[str]:
    """Ids of the ledger items that the plan neither tests nor closes (the demo refuses to guess them)."""
    return sorted(i["item_id"] for i in ledger_items if not plan.covers(i))


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def summary(perf: dict[str, Any], selection: dict[str, Any], stage5: dict[str, Any] | None,
            report: str | None, verdict_line: str) -> dict[str, Any]:
    """The demo's JSON summary from the files the real scripts wrote."""
    cases = [{"case": r["case"], "baseline_us": r.get("baseline_us"), "final_us": r.get("final_us"),
              "speedup": r.get("speedup"), "speedup_ci": r.get("speedup_ci"), "verdict": r.get("verdict")}
             for r in perf["per_case"]]
    return {"cases": cases, "suite": perf.get("suite"), "chosen_version": selection.get("chosen"),
            "chosen_reason": selection.get("reason"), "verifier": verdict_line,
            "primary_failure_category": (stage5 or {}).get("primary_failure_category"), "report": report}


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = ["", "case                 baseline_us     final_us  speed-up  95% CI            verdict"]
    for c in result["cases"]:
        ci = c["speedup_ci"] or [None, None]
        lines.append(f"{c['case']:<20} {_num(c['baseline_us']):>11} {_num(c['final_us']):>12} "
                     f"{_num(c['speedup']):>9}  [{_num(ci[0])}, {_num(ci[1])}]  {c['verdict']}")
    suite = result.get("suite") or {}
    lines.append(f"suite mean speed-up {_num(suite.get('mean_case_speedup'))} CI "
                 f"[{_num((suite.get('ci') or [None, None])[0])}, {_num((suite.get('ci') or [None, None])[1])}]")
    lines.append(f"chosen version: {result['chosen_version']} ({result['chosen_reason']})")
    confirm = result.get("confirm") or {}
    if confirm:
        lines.append(f"final round vs ranking round of the chosen version: score ratio {_num(confirm.get('ratio'))}"
                     f" ({'consistent' if confirm.get('consistent') else 'NOT consistent: ' + str(confirm.get('action'))})")
    lines.append(f"verifier: {result['verifier']}")
    lines.append(f"report: {result['report']}")
    return lines
