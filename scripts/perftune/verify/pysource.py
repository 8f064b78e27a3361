"""Facts about one Python source file read with ``ast`` (nothing is imported or executed).

Used by the Stage 4 gates: module-level functions, import aliases, every import (including
``importlib.import_module("...")`` strings), the names a function loads and whether each load is a
call and sits inside a repeating construct, and reachability through module-level helpers.

A *repeating construct* is ``for``/``while`` (the ``for`` iterable itself runs once), a
comprehension or generator, a lambda or a nested def: code in it may run more than once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_REPEATED = (ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
             ast.FunctionDef, ast.AsyncFunctionDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: file name, 1-based line (None when the finding is an absence), text."""
    file: str
    line: int | None
    text: str

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "text": self.text}

    def __str__(self) -> str:
        return f"{self.file}:{self.line if self.line is not None else '-'}: {self.text}"


@dataclass(frozen=True)
class Ref:
    """A name loaded by a function: called or not, inside a repeating construct or not."""
    name: str
    line: int
    called: bool
    repeated: bool


class PySource:
    """One parsed file. ``ast.parse`` errors (SyntaxError/ValueError) propagate to the caller."""

    def __init__(self, name: str, text: str) -> None:
        self.name, self.tree, self.lines = name, ast.parse(text, filename=name), text.splitlines()
        self.funcs = {n.name: n for n in self.tree.body if isinstance(n, _FUNCS)}
        self.aliases: dict[str, str] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    root = a.name.split(".")[0]
                    self.aliases[a.asname or root] = a.name if a.asname else root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        self._refs: dict[str, list[Ref]] = {}

    def ev(self, line: int | None, text: str | None = None) -> Evidence:
        """Evidence at ``line``; the text defaults to that source line (stripped, ≤160 chars)."""
        if text is None and line and line <= len(self.lines):
            text = self.lines[line - 1].strip()[:160]
        return Evidence(self.name, line, text or "")

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of a Name/Attribute chain, its first part resolved through the imports."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        return ".".join([self.aliases.get(node.id, node.id), *reversed(parts)])

    def imports(self) -> list[tuple[int, str]]:
        """(line, module) of every import, including importlib.import_module/__import__ strings."""
        out = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                out += [(node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.append((node.lineno, node.module))
            elif (isinstance(node, ast.Call) and self.resolve(node.func) in ("importlib.import_module", "__import__")
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out.append((node.lineno, node.args[0].value))
        return sorted(out)

    def refs(self, func: str) -> list[Ref]:
        """Every name the module-level function ``func`` loads."""
        if func not in self._refs:
            out: list[Ref] = []
            for stmt in self.funcs[func].body:
                _collect_refs(stmt, False, out)
            self._refs[func] = out
        return self._refs[func]

    def reach(self, start: str, stop: set[str]) -> list[Ref]:
        """Refs of ``start`` and of every module-level helper it reaches, not entering ``stop``.

        A helper called inside a repeating construct, or referenced without a call (passed to
        ``map``, ``partial``...), marks everything it reaches as repeated.
        """
        out, seen, todo = [], {(start, False)}, [(start, False)]
        while todo:
            func, outer = todo.pop()
            for ref in self.refs(func):
                ref = Ref(ref.name, ref.line, ref.called, ref.repeated or outer)
                out.append(ref)
                key = (ref.name, ref.repeated or not ref.called)
                if ref.name in self.funcs and ref.name not in stop and key not in seen:
                    seen.add(key)
                    todo.append(key)
        return sorted(out, key=lambda r: (r.line, r.name))

    def tests(self) -> list[str]:
        """Module-level ``def test_*`` names, in source order."""
        return [name for name in self.funcs if name.startswith("test_")]

    def identifiers(self) -> list[tuple[str, int]]:
        """(identifier, line) of names, attributes, keywords, parameters, defs and import names."""
        out = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name):
                out.append((node.id, node.lineno))
            elif isinstance(node, ast.Attribute):
                out.append((node.attr, node.lineno))
            elif isinstance(node, ast.keyword) and node.arg:
                out.append((node.arg, node.value.lineno))
            elif isinstance(node, ast.arg):
                out.append((node.arg, node.lineno))
            elif isinstance(node, _FUNCS):
                out.append((node.name, node.lineno))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out += [(part, node.lineno) for a in node.names for part in (*a.name.split("."), a.asname) if part]
        return out


def params(fn: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """(parameter names in order, names whose default is not None); ``*args``/``**kw`` keep stars."""
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args)] + ([f"*{a.vararg.arg}"] if a.vararg else [])
    names += [x.arg for x in a.kwonlyargs] + ([f"**{a.kwarg.arg}"] if a.kwarg else [])
    positional = [*a.posonlyargs, *a.args]
    defaults = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    defaults += [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return names, [x.arg for x, d in defaults if not (isinstance(d, ast.Constant) and d.value is None)]


def _collect_refs(node: ast.AST, repeated: bool, out: list[Ref]) -> None:
    if isinstance(node, ast.Call):
        target = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        if isinstance(target, ast.Name):        # f(...) and kernel[grid](...)
            out.append(Ref(target.id, node.lineno, True, repeated))
            if isinstance(node.func, ast.Subscript):
                _collect_refs(node.func.slice, repeated, out)
        else:
            _collect_refs(node.func, repeated, out)
        for child in (*node.args, *node.keywords):
            _collect_refs(child, repeated, out)
    elif isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load):
            out.append(Ref(node.id, node.lineno, False, repeated))
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        _collect_refs(node.iter, repeated, out)
        for child in (node.target, *node.body, *node.orelse):
            _collect_refs(child, True, out)
    else:
        inner = repeated or isinstance(node, _REPEATED)
        for child in ast.iter_child_nodes(node):
            _collect_refs(child, inner, out)
