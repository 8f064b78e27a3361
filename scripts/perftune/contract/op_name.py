"""The cpu Op Name, defined once and checked at freeze (pure, ``ast``; nothing is imported).

Definition (help, SKILL and docs use this sentence): on the cpu backend the Op Name is **the kernel
function: the top-level function of test_<op>.py that the wrapper launches exactly once per test
call**. The cpu backend replaces that module global with a timing shim, so it must be a plain
top-level ``def`` reached by name.

Checks (:func:`check_cpu_op_name`), each refusal names the function and the fix:
- it is a top-level ``def`` of the test file and not a ``test_*`` function;
- it has exactly one call site in the module's functions, inside a top-level function that is not a
  test (the wrapper), and that call is not inside a loop or comprehension;
- every P0 test function reaches it exactly once through the module's static call graph (calls by
  name to top-level functions; a call inside a loop counts as many).
- when SPEC.md declares the wrapper (a line ``wrapper: <function>``, docs/operator-format.md), the
  call site is in that function, so the wrapper itself (or a test helper) cannot pass as the kernel.
Module-level code (e.g. an ``if __name__ == "__main__"`` block) is not part of a test call.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..errors import ContractError

DEFINITION = "the kernel function: the top-level function of test_<op>.py that the wrapper launches exactly once per test call"
_MANY = 2  # "more than once" is all the count needs to know
_WRAPPER = re.compile(r"^\s*[-*]?\s*wrapper\s*:\s*`?([A-Za-z_][A-Za-z0-9_]*)`?\s*$", re.M)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _calls(function: ast.FunctionDef, names: set[str]) -> list[tuple[str, bool, int]]:
    """(callee, inside a loop, line) for every call by name to a top-level function of the module."""
    found: list[tuple[str, bool, int]] = []

    def walk(node: ast.AST, looped: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue  # nested definitions run only when called; not followed
            inner = looped or isinstance(child, _LOOPS)
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in names:
                found.append((child.func.id, inner, child.lineno))
            walk(child, inner)

    walk(function, False)
    return found


def _launches(graph: dict[str, list[tuple[str, bool, int]]], start: str, target: str) -> int:
    """How often one call of ``start`` calls ``target`` (0, 1 or _MANY), through the static graph."""
    memo: dict[str, int] = {}

    def count(name: str, stack: tuple[str, ...]) -> int:
        if name in memo:
            return memo[name]
        total = 0
        for callee, looped, _ in graph.get(name, []):
            if callee in stack:
                continue  # recursion: not followed
            inner = 1 if callee == target else count(callee, stack + (callee,))
            total += inner * (_MANY if looped else 1)
        memo[name] = min(total, _MANY)
        return memo[name]

    return count(start, (start,))


def declared_wrapper(spec_text: str, source: str) -> str | None:
    """The ``wrapper: <function>`` line of SPEC.md (None when absent; twice is refused)."""
    found = _WRAPPER.findall(spec_text)
    if len(found) > 1:
        raise ContractError(source, "wrapper", "declared more than once", "keep one 'wrapper: <function>' line")
    return found[0] if found else None


def kernel_candidates(graph: dict[str, list[tuple[str, bool, int]]], tests: list[str],
                      wrapper: str | None) -> list[str]:
    """Functions that satisfy every rule (offered in the refusal, never chosen for the agent)."""
    names = [n for n in graph if not n.startswith("test_")]
    return sorted(n for n in names if _problem(graph, n, tests, wrapper) is None)


def _problem(graph: dict[str, list[tuple[str, bool, int]]], op_name: str, tests: list[str],
             wrapper: str | None) -> str | None:
    if op_name not in graph:
        return "is not a top-level function of the test file"
    if op_name.startswith("test_"):
        return "is a test function, not the kernel"
    if op_name == wrapper:
        return "is the wrapper SPEC.md declares, not the kernel it launches"
    sites = [(caller, looped, line) for caller, calls in graph.items() for callee, looped, line in calls
             if callee == op_name]
    if len(sites) != 1:
        return f"has {len(sites)} call sites in the module's functions (the wrapper launches it at exactly one)"
    caller, looped, line = sites[0]
    if caller.startswith("test_"):
        return f"is called directly by {caller}() (line {line}), not by a wrapper"
    if wrapper is not None and caller != wrapper:
        return f"is launched by {caller}(), not by the wrapper {wrapper}() that SPEC.md declares"
    if looped:
        return f"is called inside a loop or comprehension of {caller}() (line {line})"
    for test in tests:
        times = _launches(graph, test, op_name)
        if times != 1:
            return f"is reached {'never' if times == 0 else 'more than once'} by one call of {test}()"
    return None


def check_cpu_op_name(text: str, source: str, op_name: str, tests: list[str],
                      wrapper: str | None = None) -> dict[str, Any]:
    """Refuse an Op Name that is not the kernel the wrapper launches once; the facts found otherwise."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ContractError(source, f"line {exc.lineno}", f"syntax error: {exc.msg}", "fix the test file") from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    graph = {name: _calls(node, set(functions)) for name, node in functions.items()}
    if wrapper is not None and wrapper not in functions:
        raise ContractError(source, "wrapper", f"SPEC.md declares wrapper {wrapper!r}, which is not a top-level "
                            "function of the test file", "fix the 'wrapper:' line of SPEC.md or the test file")
    problem = _problem(graph, op_name, tests, wrapper)
    if problem:
        offer = kernel_candidates(graph, tests, wrapper)
        raise ContractError(source, "--op-name", f"{op_name!r} {problem}",
                            f"the cpu Op Name is {DEFINITION}; candidates: {offer or 'none found'}")
    caller, _, line = next((c, lp, ln) for c, calls in graph.items() for callee, lp, ln in calls if callee == op_name)
    return {"op_name": op_name, "definition": DEFINITION, "defined_at_line": functions[op_name].lineno,
            "launched_by": caller, "wrapper_declared_in_spec": wrapper is not None, "launch_line": line, "tests_checked": sorted(tests)}


def msprof_launcher(text: str, source: str, op_name: str, tests: list[str], wrapper: str | None) -> dict[str, Any]:
    """msprof: the Op Name is the device kernel's name from discovery, not a Python function. The
    runner function that launches that kernel (what the case adapter and the probes wrap) is resolved
    once, at freeze, by the rule above: the one function that satisfies it, or among several the one
    whose name the device name contains. None found, or several left, is refused."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ContractError(source, f"line {exc.lineno}", f"syntax error: {exc.msg}", "fix the test file") from None
    functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    graph = {n.name: _calls(n, functions) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = kernel_candidates(graph, tests, wrapper)
    named = [n for n in found if n in op_name] if len(found) > 1 else found
    if len(named) != 1:
        raise ContractError(source, "launcher", f"cannot tell which function launches the device op {op_name!r}: "
                            f"{len(found)} functions satisfy '{DEFINITION}' ({found or 'none'})",
                            "declare 'wrapper: <function>' in SPEC.md and let it launch the kernel once")
    return {"function": named[0], "rule": DEFINITION, "candidates": found, "wrapper_declared_in_spec": wrapper is not None}


def python_op(manifest) -> str | None:
    """The runner function standing for the frozen op in Python: the Op Name itself (cpu, pypto-sim),
    the launcher resolved at freeze on msprof (None for a manifest frozen without one)."""
    proto = manifest.protocol
    if proto.backend != "msprof":
        return proto.op_name
    launcher = manifest.raw.get("launcher")
    return launcher.get("function") if isinstance(launcher, dict) else None
