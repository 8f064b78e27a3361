"""What the validators read from Python files with ``ast`` (never importing them): top-level
functions with their parameters, and imported module names (pure)."""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Param:
    name: str
    has_default: bool
    default_is_none: bool


@dataclass(frozen=True)
class PyFacts:
    functions: dict[str, tuple[Param, ...]]
    classes: frozenset[str]
    imports: frozenset[str]

    @property
    def symbols(self) -> set[str]:
        return set(self.functions) | set(self.classes)


def _params(args: ast.arguments) -> tuple[Param, ...]:
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [Param(a.arg, d is not None, isinstance(d, ast.Constant) and d.value is None)
           for a, d in zip(positional, defaults)]
    out += [Param(a.arg, d is not None, isinstance(d, ast.Constant) and d.value is None)
            for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return tuple(out)


def read(text: str) -> PyFacts:
    """Facts of a module; raises SyntaxError for unparseable text."""
    tree = ast.parse(text)
    functions = {n.name: _params(n.args) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    classes = frozenset(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    imports: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.add(node.module)
    return PyFacts(functions, classes, frozenset(imports))
