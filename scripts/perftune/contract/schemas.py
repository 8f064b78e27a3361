"""JSON Schema (Draft 2020-12) validation of every machine-readable artefact.

Schemas live in ``<plugin root>/schemas/<name>.schema.json``. :func:`validate` raises a one-line
:class:`ContractError` naming the file and the JSON path of the first (deepest) problem.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from .. import fsio
from ..errors import ContractError

if TYPE_CHECKING:  # jsonschema is imported lazily: case runner processes never validate
    from jsonschema import Draft202012Validator

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "schemas"


def schema_path(name: str) -> Path:
    return SCHEMA_DIR / f"{name}.schema.json"


def available() -> list[str]:
    """Names of all shipped schemas, sorted."""
    return sorted(p.name[: -len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json"))


@functools.lru_cache(maxsize=None)
def validator(name: str) -> "Draft202012Validator":
    """The validator of a shipped schema. The schemas are the plugin's own files (covered by the release
    hash), so they are not checked against the Draft 2020-12 meta-schema at each start (~25 ms a schema,
    ~0.3 s of every stage5_check): the test-suite checks each one (tests/contract/test_schemas.py)."""
    from jsonschema import Draft202012Validator
    path = schema_path(name)
    if not path.is_file():
        raise ContractError(path, "-", f"no schema named {name!r}", f"use one of {available()}")
    schema = fsio.read_json(path, what="JSON schema")
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _json_path(error) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"${parts}" if parts else "$"


def errors(obj: Any, name: str) -> list[str]:
    """Every schema violation as ``'<json path>: <message>'``, in a stable order."""
    found = sorted(validator(name).iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{_json_path(e)}: {e.message}" for e in found]


def validate(obj: Any, name: str, source: str | Path = "-") -> None:
    """Raise :class:`ContractError` for the most specific violation of schema ``name``."""
    from jsonschema.exceptions import best_match
    best = best_match(validator(name).iter_errors(obj))
    if best is not None:
        message = best.message if len(best.message) <= 200 else best.message[:197] + "..."
        raise ContractError(source, _json_path(best), f"does not match schema {name}: {message}",
                            f"see schemas/{name}.schema.json")
