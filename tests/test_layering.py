"""The package layout is the architecture: subpackages by the Stage 5 flow, imports only downward.

Every ``perftune`` subpackage's ``__init__`` docstring ends with a ``May import:`` line; the
imports of its modules (read with ``ast``, function-level imports included) must stay inside the
subpackage or go to a package on that line. The shared ground (``errors``, ``fsio``, ``argv``)
imports only itself. No import cycle between modules. Sizes: at most 6 modules at the top of
``perftune``, at least 5 subpackages, no library module over 450 lines, no CLI over 120 lines.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PACKAGE = SCRIPTS / "perftune"
GROUND = {"perftune.errors", "perftune.fsio", "perftune.argv"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SCRIPTS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    base = SCRIPTS.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """Every perftune module ``path`` imports (``from pkg import mod`` resolves to ``pkg.mod``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "perftune")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "perftune":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if is_module(full) else target)
    found.discard(name)
    return found


def room(dotted: str) -> str:
    """``perftune.measure.backends.cpu`` -> ``perftune.measure``; ground modules are their own room."""
    return ".".join(dotted.split(".")[:2])


def allowed_rooms(init: Path) -> set[str]:
    match = re.search(r"^May import:(.*)$", ast.get_docstring(ast.parse(init.read_text())) or "", re.M)
    assert match, f"{init}: the docstring has no 'May import:' line"
    return set(re.findall(r"perftune(?:\.\w+)?", match.group(1)))


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(root.rglob("*.py"))}


def layering_violations(edges: dict[str, set[str]]) -> list[str]:
    rules = {module_name(p.parent): allowed_rooms(p) for p in PACKAGE.glob("*/__init__.py")}
    bad = []
    for source, targets in edges.items():
        for target in sorted(targets):
            src_room, dst_room = room(source), room(target)
            if src_room == dst_room or target == "perftune":
                continue
            if src_room in GROUND or source == "perftune":  # the package root: ground only
                ok = dst_room in GROUND
            elif src_room in rules:
                ok = dst_room in rules[src_room]
            else:
                ok = False
            if not ok:
                bad.append(f"{source} imports {target}")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return out


def test_every_subpackage_states_what_it_may_import():
    inits = sorted(PACKAGE.glob("*/__init__.py"))
    assert len(inits) >= 5
    for init in inits:
        assert allowed_rooms(init) <= GROUND | {room(module_name(p.parent)) for p in inits}, init


def test_no_upward_or_undeclared_import():
    assert layering_violations(graph()) == []


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_sizes():
    top = [p for p in PACKAGE.glob("*.py")]
    assert len(top) <= 6, sorted(p.name for p in top)
    long = {p.relative_to(SCRIPTS).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}
    clis = {p.name: n for p in SCRIPTS.glob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 120}
    assert clis == {}


@pytest.mark.parametrize("source, target, expected", [
    ("perftune.contract.manifest", "perftune.decide.stats", ["perftune.contract.manifest imports perftune.decide.stats"]),
    ("perftune.measure.collect", "perftune.verify.stage5", ["perftune.measure.collect imports perftune.verify.stage5"]),
    ("perftune.fsio", "perftune.contract.protocol", ["perftune.fsio imports perftune.contract.protocol"]),
    ("perftune.decide.stats", "perftune.contract.protocol", []),
])
def test_the_check_fails_on_an_upward_import(source, target, expected):
    edges = graph()
    edges[source] = edges[source] | {target}
    assert layering_violations(edges) == expected


def test_the_check_finds_a_cycle():
    edges = graph()
    edges["perftune.contract.protocol"] = edges["perftune.contract.protocol"] | {"perftune.contract.manifest"}
    assert ["perftune.contract.manifest", "perftune.contract.protocol"] in cycles(edges)
