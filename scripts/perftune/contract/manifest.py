"""The frozen measurement contract ``PERFORMANCE_CASES.json`` (DESIGN §4.1).

Pure parts: shape/dtype canonicalisation, the SPEC.md P0 table parser, test-function discovery
from source text (``ast``, no import), manifest building and semantic validation. Thin I/O: :func:`load_manifest`
(writing it: :mod:`.freeze`).

SPEC.md table format (see ``docs/spec-format.md``): the first markdown table under a heading that
contains "performance" (case-insensitive) whose header has the columns ``id``, ``shape`` and
``dtype``; optional columns ``p0`` (yes/no, default yes), ``test_function`` and ``params``.
A line ``user_target: <metric> >= <number>`` anywhere in SPEC.md declares the user's numeric target
(``speedup`` per target case, or ``golden_reference_ratio`` per target case).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import fsio
from . import frozen_inputs, protocol, schemas
from ..errors import ContractError

_DTYPE_ALIASES = {
    "half": "float16", "fp16": "float16", "f16": "float16", "float16": "float16",
    "float": "float32", "fp32": "float32", "f32": "float32", "float32": "float32",
    "double": "float64", "fp64": "float64", "f64": "float64", "float64": "float64",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "int8": "int8", "i8": "int8", "uint8": "uint8", "u8": "uint8",
    "int16": "int16", "i16": "int16", "short": "int16",
    "int32": "int32", "i32": "int32", "int": "int32",
    "int64": "int64", "i64": "int64", "long": "int64",
    "bool": "bool", "boolean": "bool",
}
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_GROUP = re.compile(rf"(?:({_NAME})\s*:\s*)?[\[(]([^\])]*)[\])]")


def canonical_dtype(text: str) -> str:
    """Canonical dtype name: ``fp16``→``float16``, ``torch.bf16``→``bfloat16``; names kept.

    Several named dtypes (``x:fp16,w:fp32``) canonicalise each part. Unknown names raise
    ``ValueError``.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("dtype is empty")
    parts = []
    for piece in re.split(r"[;,]", text):
        piece = piece.strip()
        name, _, value = piece.rpartition(":") if ":" in piece else ("", "", piece)
        base = value.strip().lower()
        for prefix in ("torch.", "np.", "numpy."):
            if base.startswith(prefix):
                base = base[len(prefix):]
        if base not in _DTYPE_ALIASES:
            raise ValueError(f"unknown dtype {value.strip()!r}")
        canon = _DTYPE_ALIASES[base]
        parts.append(f"{name.strip()}:{canon}" if name.strip() else canon)
    return ",".join(parts)


def _dims(body: str, original: str) -> list[int]:
    body = body.strip()
    if not body:
        return []
    dims = []
    for token in re.split(r"\s*[,xX*]\s*", body):
        if not re.fullmatch(r"[0-9]+", token) or int(token) <= 0:
            raise ValueError(f"shape {original!r} has a non-positive or non-integer dim {token!r}")
        dims.append(int(token))
    return dims


def canonical_shape(text: str) -> str:
    """Canonical shape string: ``(4, 8)``, ``4x8`` → ``[4,8]``; ``x:[4,8] w:[8]`` → ``x:[4,8],w:[8]``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("shape is empty")
    stripped = text.strip()
    if not re.search(r"[\[(]", stripped):
        return "[" + ",".join(map(str, _dims(stripped, text))) + "]"
    groups, last = [], 0
    for match in _GROUP.finditer(stripped):
        gap = stripped[last:match.start()].strip(" ,;")
        if gap:
            raise ValueError(f"shape {text!r} has stray text {gap!r}")
        dims = ",".join(map(str, _dims(match.group(2), text)))
        groups.append(f"{match.group(1)}:[{dims}]" if match.group(1) else f"[{dims}]")
        last = match.end()
    if stripped[last:].strip(" ,;") or not groups:
        raise ValueError(f"shape {text!r} is not a list of dims")
    return ",".join(groups)


@dataclass(frozen=True)
class SpecCase:
    id: str
    shape: str
    dtype: str
    p0: bool
    test_function: str | None = None
    params: str | None = None


@dataclass(frozen=True)
class SpecInfo:
    cases: tuple[SpecCase, ...]
    user_target: dict[str, Any] | None


def _table_rows(lines: list[str], start: int) -> tuple[list[str], list[list[str]]]:
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = [c.lower().strip("` ") for c in cells(lines[start])]
    rows = []
    for line in lines[start + 2:]:
        if not line.strip().startswith("|"):
            break
        rows.append([c.strip("` ") for c in cells(line)])
    return header, rows


def parse_spec(text: str, source: str = "SPEC.md") -> SpecInfo:
    """Parse the performance P0 table and the optional ``user_target`` line of SPEC.md."""
    lines = text.splitlines()
    in_perf = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            in_perf = "performance" in line.lower()
            continue
        if not (in_perf and line.strip().startswith("|") and index + 1 < len(lines)):
            continue
        if not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[index + 1]):
            continue
        header, rows = _table_rows(lines, index)
        if not {"id", "shape", "dtype"} <= set(header):
            continue
        return SpecInfo(_spec_cases(header, rows, source), _user_target(text, source))
    raise ContractError(source, "performance table", "no P0 table with columns id, shape, dtype "
                        "under a 'Performance' heading", "see docs/spec-format.md")


def _spec_cases(header: list[str], rows: list[list[str]], source: str) -> tuple[SpecCase, ...]:
    cases = []
    for number, row in enumerate(rows, 1):
        if len(row) != len(header):
            raise ContractError(source, f"performance table row {number}",
                                f"has {len(row)} cells, header has {len(header)}", "fix the table")
        cell = dict(zip(header, row))
        p0_text = cell.get("p0", "yes").lower()
        if p0_text not in ("yes", "no", "true", "false", "y", "n", "p0", "-"):
            raise ContractError(source, f"performance table row {number}: p0",
                                f"{p0_text!r} is not yes/no", "write yes or no")
        try:
            shape, dtype = canonical_shape(cell["shape"]), canonical_dtype(cell["dtype"])
        except ValueError as exc:
            raise ContractError(source, f"performance table row {number}", str(exc),
                                "use a shape like [4,8] and a dtype like float16") from None
        cases.append(SpecCase(
            id=cell["id"], shape=shape, dtype=dtype, p0=p0_text in ("yes", "true", "y", "p0"),
            test_function=cell.get("test_function") or None, params=cell.get("params") or None))
    return tuple(cases)


_TARGET = re.compile(r"^\s*[-*]?\s*user_target\s*:\s*(\w+)\s*>=\s*([0-9]+(?:\.[0-9]+)?)\s*$", re.M)


def _user_target(text: str, source: str) -> dict[str, Any] | None:
    found = _TARGET.findall(text)
    if not found:
        return None
    if len(found) > 1:
        raise ContractError(source, "user_target", "declared more than once", "keep one line")
    metric, threshold = found[0]
    if metric not in ("speedup", "golden_reference_ratio"):
        raise ContractError(source, "user_target", f"unknown metric {metric!r}",
                            "use speedup or golden_reference_ratio")
    return {"metric": metric, "threshold": float(threshold)}


def find_test_functions(source_text: str, source: str = "test file") -> dict[str, int]:
    """Top-level ``def test_*`` functions without required parameters → line number."""
    try:
        tree = ast.parse(source_text)
    except SyntaxError as exc:
        raise ContractError(source, f"line {exc.lineno}", f"syntax error: {exc.msg}", "fix the test file") from None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            args = node.args
            required = len(args.args) - len(args.defaults) + sum(d is None for d in args.kw_defaults)
            if required == 0:
                found[node.name] = node.lineno
    return found


@dataclass(frozen=True)
class Decision:
    method: str
    confidence: float
    noise_band: float
    resamples: int
    rng_seed: int
    min_repeats: int
    multiplicity: str = "bonferroni"
    noise_band_reason: str | None = None   # why the band differs from the default (freeze --noise-band-reason)


@dataclass(frozen=True)
class Protocol:
    backend: str
    device_id: int
    seed: int
    warmup: int
    repeats: int
    op_name: str
    timing_scope: str
    aggregation: str
    decision: Decision
    promotion: dict[str, Any]
    aggregate_metric: str = protocol.AGGREGATE_METRIC
    tie_break: str = protocol.TIE_BREAK
    acceptance: dict[str, Any] = field(default_factory=lambda: dict(protocol.DEFAULT_ACCEPTANCE))
    max_remeasurements: int = protocol.DEFAULT_MAX_REMEASUREMENTS
    processes: int = protocol.DEFAULT_PROCESSES

    def rule(self, name: str) -> dict[str, Any]:
        """``promotion`` or ``acceptance`` with the documented defaults for absent keys."""
        default = protocol.DEFAULT_PROMOTION if name == "promotion" else protocol.DEFAULT_ACCEPTANCE
        return {**default, **getattr(self, name)}
    simulator: dict[str, Any] | None = None   # pypto-sim: the frozen chip, pypto version, config sha256
    remeasure_budget_s: float | None = None   # None: frozen before the field, the default applies
    launch: dict[str, Any] | None = None      # msprof: rows per launch, task types, basis (discovery record)

    @property
    def remeasure_budget(self) -> float:
        """The frozen P10 re-measurement budget in seconds (the default for older manifests)."""
        return protocol.DEFAULT_REMEASURE_BUDGET_S if self.remeasure_budget_s is None else self.remeasure_budget_s

    def as_dict(self) -> dict[str, Any]:
        extra = {"simulator": dict(self.simulator)} if self.simulator is not None else {}
        if self.remeasure_budget_s is not None:
            extra["remeasure_budget_s"] = self.remeasure_budget_s
        if self.launch is not None:
            extra["launch"] = dict(self.launch)
        return {**extra,
            "backend": self.backend, "device_id": self.device_id, "seed": self.seed,
            "warmup": self.warmup, "repeats": self.repeats, "op_name": self.op_name,
            "timing_scope": self.timing_scope, "aggregation": self.aggregation,
            "decision": {k: v for k, v in self.decision.__dict__.items() if k != "noise_band_reason" or v},
            "promotion": dict(self.promotion),
            "aggregate_metric": self.aggregate_metric, "tie_break": self.tie_break,
            "acceptance": dict(self.acceptance), "max_remeasurements": self.max_remeasurements,
            "processes": self.processes,
        }


@dataclass(frozen=True)
class Case:
    id: str
    shape: str
    dtype: str
    p0: bool = True
    test_function: str | None = None
    params: Any = None


@dataclass(frozen=True)
class Manifest:
    schema_version: int
    cases: tuple[Case, ...]
    target_case_ids: tuple[str, ...]
    selection_mode: str | None
    protocol: Protocol | None
    user_target: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def case_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)

    def case(self, case_id: str) -> Case:
        for item in self.cases:
            if item.id == case_id:
                return item
        raise KeyError(case_id)


def make_protocol(*, backend: str, device_id: int, warmup: int, repeats: int, op_name: str,
                  seed: int = protocol.SEED, aggregation: str = protocol.DEFAULT_AGGREGATION,
                  decision: dict[str, Any] | None = None, promotion: dict[str, Any] | None = None,
                  timing_scope: str | None = None, aggregate_metric: str = protocol.AGGREGATE_METRIC,
                  acceptance: dict[str, Any] | None = None,
                  max_remeasurements: int = protocol.DEFAULT_MAX_REMEASUREMENTS,
                  processes: int = protocol.DEFAULT_PROCESSES,
                  simulator: dict[str, Any] | None = None,
                  remeasure_budget_s: float = protocol.DEFAULT_REMEASURE_BUDGET_S,
                  launch: dict[str, Any] | None = None) -> Protocol:
    """A protocol with the DESIGN §4.1/§7 defaults filled in (deterministic backends: min_repeats 2)."""
    floor = {"min_repeats": protocol.DETERMINISTIC_MIN_REPEATS} if backend in protocol.DETERMINISTIC_BACKENDS else {}
    rule = {**protocol.DEFAULT_DECISION, **floor, **(decision or {})}
    return Protocol(
        backend=backend, device_id=device_id, seed=seed, warmup=warmup, repeats=repeats,
        op_name=op_name, timing_scope=timing_scope or protocol.TIMING_SCOPES.get(backend, ""),
        aggregation=aggregation, decision=Decision(**rule),
        promotion={**protocol.DEFAULT_PROMOTION, **(promotion or {})}, aggregate_metric=aggregate_metric,
        acceptance={**protocol.DEFAULT_ACCEPTANCE, **(acceptance or {})},
        max_remeasurements=max_remeasurements, processes=processes, simulator=simulator,
        remeasure_budget_s=float(remeasure_budget_s), launch=launch)


def build_manifest(spec: SpecInfo, tests: dict[str, int], *, target_case_ids: list[str],
                   selection_mode: str, proto: Protocol, spec_source: str = "SPEC.md",
                   test_source: str = "test file") -> dict[str, Any]:
    """Build the v2 manifest dict from the SPEC P0 table and the test functions (pure)."""
    p0 = [c for c in spec.cases if c.p0]
    if not p0:
        raise ContractError(spec_source, "performance table", "has no P0 case", "mark at least one row p0=yes")
    claimed: dict[str, str] = {}
    cases = []
    for case in p0:
        function = case.test_function or f"test_{re.sub(r'[^A-Za-z0-9_]', '_', case.id)}"
        if function not in tests:
            raise ContractError(test_source, case.id, f"P0 case has no test function {function}()",
                                "add the test or name it in the SPEC test_function column")
        if function in claimed:
            raise ContractError(spec_source, case.id, f"test {function}() is already claimed by "
                                f"case {claimed[function]}", "give each P0 case its own test")
        claimed[function] = case.id
        entry: dict[str, Any] = {"id": case.id, "shape": case.shape, "dtype": case.dtype,
                                 "p0": True, "test_function": function}
        if case.params:
            entry["params"] = case.params
        cases.append(entry)
    _check_target([c["id"] for c in cases], {"case_ids": list(target_case_ids), "selection_mode": selection_mode},
                  [c["id"] for c in cases], "--target-case-ids")
    obj = {
        "schema_version": protocol.MANIFEST_SCHEMA_VERSION,
        "cases": cases,
        "optimization_target": {"case_ids": list(target_case_ids), "selection_mode": selection_mode},
        "protocol": proto.as_dict(),
    }
    if spec.user_target:
        obj["user_target"] = dict(spec.user_target)
    parse_manifest(obj, spec_source)
    return obj


def _check_target(ids: list[str], target: dict[str, Any], p0_ids: list[str], source: str) -> None:
    chosen = target.get("case_ids", [])
    if not chosen:
        raise ContractError(source, "optimization_target.case_ids", "is empty", "name at least one P0 case id")
    if len(set(chosen)) != len(chosen):
        raise ContractError(source, "optimization_target.case_ids", "has duplicate ids", "list each id once")
    unknown = sorted(set(chosen) - set(ids))
    if unknown:
        raise ContractError(source, "optimization_target.case_ids", f"unknown case ids {unknown}",
                            f"choose from {sorted(ids)}")
    mode = target.get("selection_mode")
    if mode == "single_p0" and (len(p0_ids) != 1 or chosen != p0_ids):
        raise ContractError(source, "optimization_target.selection_mode",
                            "single_p0 needs exactly one P0 case, and it must be the target",
                            "use user_selected or all_p0_no_questions")
    if mode == "all_p0_no_questions" and sorted(chosen) != sorted(p0_ids):
        raise ContractError(source, "optimization_target.selection_mode",
                            "all_p0_no_questions needs every P0 case in the target", "list all P0 ids")


def parse_manifest(obj: Any, source: str | Path = "PERFORMANCE_CASES.json", *,
                   check_schema: bool = True) -> Manifest:
    """Validate a manifest (schema + semantics) and return it as a :class:`Manifest`.

    ``check_schema=False`` is for case-runner subprocesses re-reading a manifest their parent has
    just validated (it skips importing jsonschema); a structural surprise is still a ContractError.
    """
    if not check_schema:
        try:
            return _parse_manifest(obj, str(source), False)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ContractError(source, "-", f"malformed manifest ({type(exc).__name__}: {exc})",
                                "validate it with 'freeze_cases.py validate'") from None
    return _parse_manifest(obj, str(source), True)


def _parse_manifest(obj: Any, source: str, check_schema: bool) -> Manifest:
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if version not in (1, 2):
        raise ContractError(source, "schema_version", f"{version!r} is not 1 or 2",
                            "freeze a new manifest with freeze_cases.py")
    if check_schema:
        schemas.validate(obj, "performance_cases" if version == 2 else "performance_cases_v1", source)
    ids = [c["id"] for c in obj["cases"]]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ContractError(source, "cases[].id", f"duplicate ids {dup}", "give every case a unique id")
    cases = []
    for index, raw in enumerate(obj["cases"]):
        try:
            shape, dtype = canonical_shape(raw["shape"]), canonical_dtype(raw["dtype"])
        except ValueError as exc:
            raise ContractError(source, f"cases[{index}]", str(exc), "fix the shape or dtype") from None
        cases.append(Case(raw["id"], shape, dtype, raw.get("p0", True), raw.get("test_function"), raw.get("params")))
    target = obj.get("optimization_target")
    if target is not None:
        _check_target(ids, target, [c.id for c in cases if c.p0], source)
    proto = None
    if version == 2:
        raw_proto = dict(obj["protocol"])
        if raw_proto["seed"] != protocol.SEED:
            raise ContractError(source, "protocol.seed", f"{raw_proto['seed']} is not {protocol.SEED}",
                                "the frozen seed is always 42")
        raw_proto["decision"] = Decision(**raw_proto["decision"])
        proto = Protocol(**raw_proto)
    return Manifest(version, tuple(cases), tuple((target or {}).get("case_ids", ())),
                    (target or {}).get("selection_mode"), proto, obj.get("user_target"), obj)


def load_manifest(path: str | Path, *, check_schema: bool = True) -> Manifest:
    """Read and validate a manifest file (exit-2 error on any problem); the frozen inputs beside it
    must still have the hashes recorded at freeze (:mod:`.frozen_inputs`)."""
    man = parse_manifest(fsio.read_json(path, what="performance case manifest"), path, check_schema=check_schema)
    frozen_inputs.verify(Path(path).parent)
    return man


def check_protocol_values(proto: Protocol, source: str) -> None:
    """Refuse protocol values the schema cannot express as a clear message (seed, counts)."""
    if proto.seed != protocol.SEED:
        raise ContractError(source, "--seed", f"{proto.seed} is not {protocol.SEED}", "the frozen seed is 42")
    for name in ("warmup", "repeats", "device_id"):
        value = getattr(proto, name)
        if value < (1 if name == "repeats" else 0):
            raise ContractError(source, f"--{name.replace('_id', '')}", f"{value} is out of range",
                                "use a non-negative count (repeats >= 1)")
    for flag, bad in (("--processes", proto.processes < 1 or proto.repeats % proto.processes),
                      ("--max-remeasurements", not 0 <= proto.max_remeasurements <= 10)):
        if bad:  # processes must divide repeats (equal processes); a small frozen limit
            raise ContractError(source, flag, "is out of range", "processes divides --repeats; limit in 0..10")
    budget = proto.remeasure_budget
    if not (budget > 0 and math.isfinite(budget)):
        raise ContractError(source, "--remeasure-budget-s", f"{budget} is not a positive number of seconds",
                            f"use e.g. {protocol.DEFAULT_REMEASURE_BUDGET_S:g}")
    if not 0 <= proto.decision.noise_band < 1:
        raise ContractError(source, "--noise-band", f"{proto.decision.noise_band} not in [0, 1)",
                            "use a fraction such as 0.01")
