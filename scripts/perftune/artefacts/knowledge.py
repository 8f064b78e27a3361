"""KB_SELECTION.json, DESIGN_BINDINGS.json and KB_USAGE.json: schema plus cross-references (pure).

The selection is the frozen list of requirements (Stage 1); the bindings say where DESIGN.md meets
each of them (Stage 3); the usage says where the delivered code meets each obligation (Stage 4).
``exists(reference_path) -> bool`` and ``symbols(file) -> set | None`` are the only facts from disk
the checks need; the caller passes them in. Formats: docs/stage-artefacts.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..contract import schemas
from .problems import Problem, placeholders

SELECTION, BINDINGS, USAGE = "KB_SELECTION.json", "DESIGN_BINDINGS.json", "KB_USAGE.json"
FIELDS = ("optional_patterns", "required_constraints")
USAGE_STATUS = {"obligation": ("implemented", "not_triggered"), "precondition": ("holds",),
                "validation_scope": ("validated",)}
MAX_SCHEMA_PROBLEMS = 5


def schema_problems(obj: Any, name: str, file: str, category: str) -> list[Problem]:
    found = schemas.errors(obj, name)
    return [Problem(file, msg.split(": ", 1)[0], f"does not match schema {name}: {msg.split(': ', 1)[-1][:160]}",
                    f"see schemas/{name}.schema.json", category) for msg in found[:MAX_SCHEMA_PROBLEMS]]


def requirements(selection: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(class_id, req_id) -> requirement, over both selection fields (schema-valid input)."""
    out = {}
    for cls in selection["classes"]:
        for fld in FIELDS:
            for req in cls.get(fld, []):
                out[(cls["class_id"], req["req_id"])] = req
    return out


def _json_placeholders(obj: Any, file: str) -> list[Problem]:
    import json
    return placeholders(json.dumps(obj, indent=1, ensure_ascii=False), file)[:1]


def check_selection(obj: Any, p0_ids: tuple[str, ...], exists: Callable[[str], bool]) -> list[Problem]:
    cat = "kb_selection_invalid"
    problems = schema_problems(obj, "kb_selection", SELECTION, cat)
    if problems:
        return problems
    problems = _json_placeholders(obj, SELECTION)
    classes = [c["class_id"] for c in obj["classes"]]
    problems += [Problem(SELECTION, f"classes[{cid}]", "class id is listed twice", "merge the two entries", cat)
                 for cid in sorted({c for c in classes if classes.count(c) > 1})]
    for cls in obj["classes"]:
        reqs = [r for f in FIELDS for r in cls.get(f, [])]
        ids = [r["req_id"] for r in reqs]
        problems += [Problem(SELECTION, f"classes[{cls['class_id']}].{rid}", "req_id is listed twice",
                             "give each requirement of a class its own id", cat)
                     for rid in sorted({i for i in ids if ids.count(i) > 1})]
        source = cls.get("source")
        if source and not exists(source["path"]):
            problems.append(Problem(SELECTION, f"classes[{cls['class_id']}].source.path",
                                    f"{source['path']} does not exist", "cite the KB file the class came from", cat))
        for req in reqs:
            where = f"classes[{cls['class_id']}].{req['req_id']}"
            target = req["reference"].split("#", 1)[0]
            if target and not exists(target):
                problems.append(Problem(SELECTION, f"{where}.reference", f"{target} does not exist",
                                        "reference a file of the op dir or ${CLAUDE_PLUGIN_ROOT}/...", cat))
            scope = str(req.get("case_scope", "all")).strip()
            if scope.lower() not in ("", "all", "all_p0", "*"):
                unknown = [c for c in re.split(r"[,\s]+", scope) if c and c not in p0_ids]
                if unknown:
                    problems.append(Problem(SELECTION, f"{where}.case_scope", f"unknown case ids {unknown}",
                                            f"use 'all' or SPEC P0 ids {list(p0_ids)}", cat))
    return problems


def _ref(entry: dict[str, Any]) -> tuple[str, str]:
    return entry["class_id"], entry["req_id"]


def check_bindings(obj: Any, selection: dict[str, Any] | None, design_sections: set[int]) -> list[Problem]:
    cat = "design_violation"
    problems = schema_problems(obj, "design_bindings", BINDINGS, cat)
    if problems or selection is None:
        return problems
    problems = _json_placeholders(obj, BINDINGS)
    reqs = requirements(selection)
    for i, b in enumerate(obj["bindings"]):
        if _ref(b) not in reqs:
            problems.append(Problem(BINDINGS, f"bindings[{i}]", f"{_ref(b)} is not a selected requirement",
                                    "bind only requirements of KB_SELECTION.json", "kb_selection_invalid"))
        section = int(re.match(r"^DESIGN\.md#§(\d+)$", b["design_ref"]).group(1))
        if section not in design_sections:
            problems.append(Problem(BINDINGS, f"bindings[{i}].design_ref", f"DESIGN.md has no §{section}",
                                    "point at an existing DESIGN.md section", cat))
    bound = {_ref(b) for b in obj["bindings"]}
    problems += [Problem(BINDINGS, "bindings", f"obligation {key} is not bound to the design",
                         "add a binding for every selected obligation", cat)
                 for key, req in reqs.items() if req["kind"] == "obligation" and key not in bound]
    for i, v in enumerate(obj.get("vector_selection", [])):
        tile = v["implementation"] == "tile_op"
        if tile != (v["decision_reason"] == "kb_template_required"):
            problems.append(Problem(BINDINGS, f"vector_selection[{i}]", "tile_op needs decision_reason "
                                    "kb_template_required and vf needs default_vf", "Vector work defaults to VF", cat))
        if tile and (not v.get("required_by") or _ref(v["required_by"]) not in reqs):
            problems.append(Problem(BINDINGS, f"vector_selection[{i}].required_by", "tile_op without the selected "
                                    "KB requirement that demands it", "name it or use vf", cat))
    return problems


def check_usage(obj: Any, selection: dict[str, Any] | None,
                symbols: Callable[[str], set[str] | None]) -> list[Problem]:
    cat = "kb_usage_invalid"
    problems = schema_problems(obj, "kb_usage", USAGE, cat)
    if problems or selection is None:
        return problems
    problems = _json_placeholders(obj, USAGE)
    reqs = requirements(selection)
    seen: set[tuple[str, str]] = set()
    for i, u in enumerate(obj["usages"]):
        key, where = _ref(u), f"usages[{i}]"
        if key not in reqs:
            problems.append(Problem(USAGE, where, f"{key} is not a selected requirement",
                                    "report only requirements of KB_SELECTION.json", cat))
            continue
        if key in seen:
            problems.append(Problem(USAGE, where, f"{key} is reported twice", "one entry per requirement", cat))
        seen.add(key)
        allowed = USAGE_STATUS[reqs[key]["kind"]]
        if u["status"] not in allowed:
            problems.append(Problem(USAGE, f"{where}.status", f"{u['status']!r} is not allowed for a "
                                    f"{reqs[key]['kind']}", f"use one of {list(allowed)}", cat))
        if u["status"] == "implemented":
            file, _, symbol = u.get("code_ref", "").partition("::")
            found = symbols(file) if file else None
            if found is None or symbol not in found:
                problems.append(Problem(USAGE, f"{where}.code_ref", f"{u.get('code_ref')!r} does not resolve to "
                                        "a top-level def/class of an op-dir file", "cite <file>::<function>", cat))
    problems += [Problem(USAGE, "usages", f"obligation {key} has no usage entry",
                         "report every selected obligation (implemented or not_triggered)", cat)
                 for key, req in reqs.items() if req["kind"] == "obligation" and key not in seen]
    return problems
