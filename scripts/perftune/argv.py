"""Argument-parsing conventions shared by every script: one-line usage errors (exit 2)."""

from __future__ import annotations

import argparse

from .errors import ContractError


class ArgParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, exit 2, no usage dump."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D401 - argparse API
        raise ContractError(self.prog, "arguments", message, f"see {self.prog} --help")


def parser_from_doc(doc: str | None, prog: str | None = None) -> ArgParser:
    """A parser whose description is the module docstring (purpose, usage, example)."""
    return ArgParser(prog=prog, description=doc)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout")
