"""A declared parameter search (issue 39): one ledger item's frozen space, its points and the choice.

A search is one ledger item (docs/ledger.md "Searches"). Its ``search`` block names the code file
whose constants the points set (a top-level ``NAME = <literal>`` or a keyword default
``function.keyword``), the space (explicit values; a range ``low:high:step`` is expanded when it is
declared), the Optuna sampler (``grid`` or ``tpe``) and its seed, the budget (points measured), the
batch (points asked before any is told: the sequence is reproducible from the seed, the batch and
the told objectives, whatever the parallelism), the objective (the frozen promotion statistic of a
screen paired with the base version, on the target cases: higher is better) and the base (the
current best when it was declared). Its ``sha256`` covers every field; it is written once, before
any point is measured, and never changed (``tune.py`` refuses a block whose hash differs).

The choice is a rule, fixed before any result: the points that passed correctness and the screen,
ranked by objective (higher first), ties by trial number; the first is the best point, and on a
noisy backend the runner-up follows it through the formal round (``finalists``). Pure, except the
readers at the bottom.
"""

from __future__ import annotations

import ast
import copy
import math
import re
from pathlib import Path
from typing import Any

from .. import fsio
from ..contract import protocol
from ..errors import ContractError

SAMPLERS = ("grid", "tpe")
SEARCH_DIR = f"{protocol.PERF_DIR}/search"
RECORD_NAME = "search.json"
DEFAULT_BATCH = 4
MAX_POINTS = 4096
_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")


def parse_param(text: str, source: str = "--param") -> dict[str, Any]:
    """``NAME=v1,v2,...`` (Python literals) or ``NAME=low:high:step`` (numbers, high included) -> a parameter."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name) or not spec.strip():
        raise ContractError(source, text, "is not NAME=v1,v2,... or NAME=low:high:step",
                            "e.g. --param TILE_BYTES=8192,16384 or --param _build.rows=8:64:8")
    if ":" in spec:
        parts = [_literal(p, source, text) for p in spec.split(":")]
        if len(parts) != 3 or not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts) \
                or parts[2] <= 0 or parts[1] < parts[0]:
            raise ContractError(source, text, "a range needs numbers low:high:step with step > 0 and high >= low",
                                "e.g. 8:64:8")
        low, high, step = parts
        count = int(round((high - low) / step)) + 1
        if count > MAX_POINTS:
            raise ContractError(source, text, f"{count} values", f"at most {MAX_POINTS}")
        values = [low + i * step if isinstance(step, int) and isinstance(low, int) else round(low + i * step, 12)
                  for i in range(count) if low + i * step <= high + 1e-12]
        return {"name": name, "values": values, "range": {"low": low, "high": high, "step": step}}
    values = [_literal(v, source, text) for v in spec.split(",")]
    if len(set(map(repr, values))) != len(values):
        raise ContractError(source, text, "repeats a value", "list each value once")
    return {"name": name, "values": values}


def _literal(text: str, source: str, where: str) -> Any:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        raise ContractError(source, where, f"{text.strip()!r} is not a Python literal", "quote strings: 'a'") from None
    if not isinstance(value, (int, float, str, bool)):
        raise ContractError(source, where, f"{value!r} is not an int, float, str or bool", "use plain values")
    if isinstance(value, float) and not math.isfinite(value):
        raise ContractError(source, where, f"{text.strip()} is not a finite number", "use finite values")
    return value


def space_size(block: dict[str, Any]) -> int:
    size = 1
    for param in block["parameters"]:
        size *= len(param["values"])
    return size


def make_block(parameters: list[dict[str, Any]], *, file: str, sampler: str, seed: int, budget: int | None,
               batch: int, objective: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """The frozen search block with its sha256 (refused when it cannot be searched as declared)."""
    names = [p["name"] for p in parameters]
    if not parameters or len(set(names)) != len(names):
        raise ContractError("--param", ",".join(names) or "-", "needs at least one parameter, each named once",
                            "pass --param NAME=VALUES per parameter")
    if sampler not in SAMPLERS:
        raise ContractError("--sampler", sampler, "is unknown", f"use one of {list(SAMPLERS)}")
    block = {"file": file, "parameters": parameters, "sampler": sampler, "seed": int(seed), "batch": int(batch),
             "objective": objective, "base": base}
    size = space_size(block)
    budget = size if budget is None and sampler == "grid" else budget
    if budget is None or not 1 <= budget <= min(size, MAX_POINTS) or batch < 1:
        raise ContractError("--budget", str(budget), f"must be 1..{min(size, MAX_POINTS)} (the space has {size} "
                            "points; each point is measured once) and --batch >= 1", "fix it")
    block["budget"] = int(budget)
    block["sha256"] = block_sha(block)
    return block


def block_sha(block: dict[str, Any]) -> str:
    return fsio.sha256_bytes(fsio.dumps({k: v for k, v in block.items() if k != "sha256"}).encode("utf-8"))


def _targets(tree: ast.Module, name: str) -> list[ast.expr]:
    """The literal nodes ``name`` sets: a top-level constant, or a top-level function's keyword default."""
    if "." not in name:
        return [node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value
                is not None and [getattr(t, "id", None) for t in
                                 (node.targets if isinstance(node, ast.Assign) else [node.target])] == [name]]
    func, keyword = name.split(".")
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + \
                [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [default for arg, default in pairs if arg.arg == keyword]
    return found


def apply(text: str, values: dict[str, Any], source: str) -> str:
    """``text`` with every parameter's literal replaced by the point's value (refused unless each names
    exactly one literal)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    edits = []
    for name, value in values.items():
        nodes = _targets(tree, name)
        if len(nodes) != 1 or not _is_literal(nodes[0]):
            raise ContractError(source, f"search.parameters[{name}]", f"names {len(nodes)} literal(s), not one "
                                "top-level NAME = <literal> or def f(..., keyword=<literal>)",
                                "declare a constant the kernel reads, or a keyword default")
        node = nodes[0]
        edits.append((offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset,
                      repr(value)))
    data = text.encode("utf-8")
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def ranked(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points the rule may choose (correctness passed, screen complete), best first: objective
    descending, ties by trial number."""
    ok = [p for p in points if p.get("status") == "measured" and p.get("objective") is not None]
    return sorted(ok, key=lambda p: (-float(p["objective"]), int(p["trial"])))


def finalists(points: list[dict[str, Any]], backend: str) -> list[dict[str, Any]]:
    """The best point and, on a noisy backend, the runner-up: the points that go to the formal round."""
    count = 1 if backend in protocol.DETERMINISTIC_BACKENDS else 2
    return ranked(points)[:count]


def declare(ledger: dict[str, Any], item_id: str, block: dict[str, Any], *, hypothesis: str, metric: str,
            at: str, actor: str) -> dict[str, Any]:
    """The ledger with ``block`` frozen on ``item_id`` (one history entry); refused once a search or an
    experiment exists on the item, or when the item is closed or a kb obligation."""
    from .ledger import find_item, is_terminal   # ledger imports this module
    out = copy.deepcopy(ledger)
    out["revision"] += 1
    item = find_item(out, item_id)
    where = f"{item_id}.search"
    if item.get("search"):
        raise ContractError("ledger.json", where, "a search is already declared (frozen)",
                            "a frozen search is never changed; measure it with tune.py")
    if is_terminal(item["status"]) or item["source_kind"] == "kb_selected" or item["evidence"]["quick"]:
        raise ContractError("ledger.json", where, f"{item['source_kind']} item in status {item['status']} with "
                            f"{len(item['evidence']['quick'])} quick screens", "declare a search on an open "
                            "optimisation item before any experiment on it")
    if not hypothesis.strip():
        raise ContractError("ledger.json", "hypothesis", "is empty", "state a falsifiable mechanism")
    item["search"] = block
    item["hypothesis"], item["expected_metric"] = hypothesis, metric or item["expected_metric"]
    item["history"].append({"revision": out["revision"], "at": at, "actor": actor, "action": "update",
                            "from": item["status"], "to": item["status"],
                            "note": f"search declared and frozen (sha256 {block['sha256']}): "
                                    f"{space_size(block)} points, {block['sampler']} seed {block['seed']}, "
                                    f"budget {block['budget']}"})
    return out


def record_rel(item_id: str) -> str:
    """The search record's path relative to the operator folder (cited by the item's close note)."""
    return f"{SEARCH_DIR}/{item_id}/{RECORD_NAME}"


def close_problem(item: dict[str, Any], note: str) -> str | None:
    """A search item closes only with a note that cites its record."""
    if item.get("search") and record_rel(item["item_id"]) not in note:
        return f"the close note of a search item must cite its record {record_rel(item['item_id'])}"
    return None


def load_record(op_dir: str | Path, item_id: str) -> dict[str, Any] | None:
    path = Path(op_dir) / record_rel(item_id)
    return fsio.read_json(path, what="search.json") if path.is_file() else None


def searched_items(ledger: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [i for i in (ledger or {}).get("items", []) if i.get("search")]
