"""Argument-parsing conventions shared by every script: one-line usage errors (exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

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


def path_arg(value: str) -> Path:
    """A path argument, made absolute once at the CLI edge against the caller's working directory.

    The one owner of "relative and absolute paths give the same result": the library and the child
    processes it starts in other folders (a probe runs in the operator folder) and the commands it
    prints for the agent then see one absolute path, whatever form was typed (``custom/op``, ``.``,
    ``/abs/custom/op``). A path a script reads *inside* the operator folder (``--test-file``,
    ``--evidence-file``, a round) stays relative to it and is not passed through here.
    """
    return Path(value).expanduser().resolve()


def add_op_dir(parser: argparse.ArgumentParser, help: str = "operator directory (custom/<op>)",
               **kwargs) -> None:
    """``--op-dir`` (required unless ``required=False``), resolved by :func:`path_arg`."""
    kwargs.setdefault("required", True)
    parser.add_argument("--op-dir", type=path_arg, help=help, **kwargs)
