"""module_interfaces.yaml, the golden files' functions and the P0 ↔ test mapping (pure).

Formats: docs/stage-artefacts.md. The wrapper signature of ``test_<op>.py`` is read with ``ast``
and must equal ``wrapper.params`` (names in order; ``optional: true`` ⇔ default ``None``).
"""

from __future__ import annotations

import re
from typing import Any

from ..contract import manifest
from .knowledge import schema_problems
from .problems import Problem
from .pyfacts import PyFacts

INTERFACES = "module_interfaces.yaml"
FORBIDDEN_GOLDEN_IMPORTS = ("pypto", "pypto_pro")
MAKE_INPUTS_PARAMS = ("device", "seed")


def check_interfaces(obj: Any, op: str) -> list[Problem]:
    problems = schema_problems(obj, "module_interfaces", INTERFACES, "design_violation")
    if problems:
        return problems
    out = []
    if obj["wrapper"]["name"] != f"{op}_wrapper":
        out.append(Problem(INTERFACES, "wrapper.name", f"{obj['wrapper']['name']!r} is not {op}_wrapper",
                           "the public entry is <op>_wrapper", "signature_mismatch"))
    ks = [m["k"] for m in obj["modules"]]
    if obj["module_count"] != len(ks) or ks != list(range(1, len(ks) + 1)):
        out.append(Problem(INTERFACES, "modules", f"module_count {obj['module_count']} but modules k={ks}",
                           "number the modules 1..module_count", "design_violation"))
    if obj["is_fusion"] and obj["module_count"] < 1:
        out.append(Problem(INTERFACES, "module_count", "a fusion operator needs at least one module",
                           "list the staged modules (L1)", "design_violation"))
    produced = {o for m in obj["modules"] for o in m["outputs"]} | set(obj["wrapper"]["outputs"])
    missing = [o for o in obj["final_outputs"] if o not in produced]
    if missing:
        out.append(Problem(INTERFACES, "final_outputs", f"{missing} are produced by no module nor the wrapper",
                           "name outputs the modules or the wrapper produce", "design_violation"))
    return out


def check_wrapper(obj: dict[str, Any], test: PyFacts, test_file: str) -> list[Problem]:
    """The wrapper in ``test_<op>.py`` has exactly the declared parameters."""
    name = obj["wrapper"]["name"]
    if name not in test.functions:
        return [Problem(test_file, name, "the declared wrapper is not defined", f"define {name}()", "signature_mismatch")]
    declared = [(p["name"], bool(p.get("optional", False))) for p in obj["wrapper"]["params"]]
    actual = [(p.name, p.default_is_none) for p in test.functions[name]]
    bad_default = [p.name for p in test.functions[name] if p.has_default and not p.default_is_none]
    if declared != actual or bad_default:
        return [Problem(test_file, name, f"signature {actual} differs from {INTERFACES} {declared}"
                        + (f"; non-None defaults {bad_default}" if bad_default else ""),
                        "keep the frozen wrapper signature (optional parameters default to None)",
                        "signature_mismatch")]
    return []


def check_golden(golden: PyFacts | None, cpu: PyFacts | None, op: str) -> list[Problem]:
    """Required functions and purity of ``<op>_golden.py`` and ``<op>_golden_cpu.py``."""
    gfile, cfile = f"{op}_golden.py", f"{op}_golden_cpu.py"
    out = []
    if golden is not None:
        for fn in ("_get_device", "_make_inputs", f"{op}_golden", "golden_cases", "_validate"):
            if fn not in golden.functions:
                out.append(Problem(gfile, fn, "is not defined", "see the golden format in docs/stage-artefacts.md",
                                   "golden_failure"))
        params = tuple(p.name for p in golden.functions.get("_make_inputs", ()))
        if "_make_inputs" in golden.functions and not set(MAKE_INPUTS_PARAMS) <= set(params):
            out.append(Problem(gfile, "_make_inputs", f"parameters {list(params)} lack {sorted(set(MAKE_INPUTS_PARAMS) - set(params))}",
                               "use _make_inputs(<case description>, device=None, seed=SEED)", "golden_failure"))
        if len(golden.functions.get("golden_cases", ())) not in (0, 1):
            out.append(Problem(gfile, "golden_cases", "must take exactly one argument (the manifest cases)",
                               "def golden_cases(manifest_cases)", "golden_failure"))
    if cpu is not None and f"{op}_golden_cpu" not in cpu.functions:
        out.append(Problem(cfile, f"{op}_golden_cpu", "is not defined", "define the CPU reference", "golden_failure"))
    for file, facts in ((gfile, golden), (cfile, cpu)):
        bad = sorted(i for i in (facts.imports if facts else ()) if i.split(".")[0] in FORBIDDEN_GOLDEN_IMPORTS)
        if bad:
            out.append(Problem(file, "imports", f"imports {bad}", "goldens never import pypto or pypto_pro (PL11)",
                               "golden_failure"))
    return out


def case_dicts(cases: tuple[manifest.SpecCase, ...]) -> list[dict[str, Any]]:
    """The SPEC P0 cases in the manifest's case form (what ``golden_cases`` receives in Stage 5)."""
    out = []
    for c in cases:
        entry = {"id": c.id, "shape": c.shape, "dtype": c.dtype, "p0": True,
                 "test_function": c.test_function or f"test_{re.sub(r'[^A-Za-z0-9_]', '_', c.id)}"}
        if c.params:
            entry["params"] = c.params
        out.append(entry)
    return out


def check_tests(cases: tuple[manifest.SpecCase, ...], tests: dict[str, int], test_file: str) -> list[Problem]:
    """SPEC P0 table ↔ ``test_*`` functions, one to one."""
    out, claimed = [], {}
    for entry in case_dicts(cases):
        fn = entry["test_function"]
        if fn not in tests:
            out.append(Problem(test_file, entry["id"], f"P0 case has no test function {fn}()",
                               "add the test or name it in the SPEC test_function column", "incomplete_structure"))
        elif fn in claimed:
            out.append(Problem("SPEC.md", entry["id"], f"test {fn}() is already claimed by {claimed[fn]}",
                               "give each P0 case its own test", "incomplete_structure"))
        claimed.setdefault(fn, entry["id"])
    return out
