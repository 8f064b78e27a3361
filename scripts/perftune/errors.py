"""One error style for every script: expected failures carry their exit category.

Exit codes (DESIGN §5): 0 success/PASS, 1 a check ran and failed, 2 usage or contract error,
3 environment error. Only the CLI edge (:func:`run_cli`) prints, as exactly one line::

    error: <file>: <field>: <what is wrong> (<how to fix>)
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONTRACT = 2
EXIT_ENV = 3

# The 24 verifier failure categories (upstream verifier table), in a stable order.
FAILURE_CATEGORIES: tuple[str, ...] = (
    "missing_file", "incomplete_structure", "unsupported", "golden_failure",
    "design_violation", "import_violation", "cheating", "perf_violation",
    "precision_failure", "runtime_failure", "performance_evidence_invalid",
    "performance_item_coverage_invalid", "stage5_contract_blocked", "env_error",
    "false_gap", "confirmed_gap", "capability_inconclusive", "signature_mismatch",
    "delivery_import_unsafe", "dispatch_invalid", "kb_selection_invalid",
    "kb_usage_invalid", "wrapper_boundary_violation", "other",
)

# Primary-category priority: the named head first, then every other specific category in table
# order, then ``env_error`` (only when it is the sole blocker) and ``other`` last.
_PRIORITY_HEAD = (
    "kb_selection_invalid", "golden_failure", "design_violation", "cheating",
    "wrapper_boundary_violation", "kb_usage_invalid",
)
CATEGORY_PRIORITY: tuple[str, ...] = _PRIORITY_HEAD + tuple(
    c for c in FAILURE_CATEGORIES if c not in _PRIORITY_HEAD and c not in ("env_error", "other")
) + ("env_error", "other")


def primary_category(categories: Sequence[str], *, stage5: bool = False) -> str | None:
    """Choose the one primary failure category of a verdict.

    In stage5-check an unrecoverable frozen-input problem (``stage5_contract_blocked``) wins;
    ``env_error`` is chosen only when it is the sole category present.
    """
    present = set(categories)
    if not present:
        return None
    unknown = present - set(FAILURE_CATEGORIES)
    if unknown:
        raise ValueError(f"unknown failure categories: {sorted(unknown)}")
    if stage5 and "stage5_contract_blocked" in present:
        return "stage5_contract_blocked"
    ranked = [c for c in CATEGORY_PRIORITY if c in present and c != "env_error"]
    return ranked[0] if ranked else "env_error"


class PerftuneError(Exception):
    """An expected failure; ``exit_code`` says which category it belongs to."""

    exit_code = EXIT_CONTRACT

    def __init__(self, file: str | None, field: str | None, problem: str, fix: str = "") -> None:
        self.file = str(file) if file is not None else "-"
        self.field = field or "-"
        self.problem = problem
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line message of DESIGN §5 (without the ``error:`` prefix)."""
        text = f"{self.file}: {self.field}: {self.problem}"
        return f"{text} ({self.fix})" if self.fix else text


class ContractError(PerftuneError):
    """Usage or contract error: bad input, frozen input missing or corrupt (exit 2)."""

    exit_code = EXIT_CONTRACT


class CheckFailed(PerftuneError):
    """A check ran and failed (exit 1)."""

    exit_code = EXIT_FAILED


class EnvError(PerftuneError):
    """The environment is missing a tool or a device (exit 3, category ``env_error``)."""

    exit_code = EXIT_ENV


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a CLI ``main`` and turn expected errors into one stderr line and an exit code."""
    try:
        return main(argv)
    except PerftuneError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: -: -: interrupted (re-run the command)", file=sys.stderr)
        return 130
    except OSError as exc:  # a filesystem refusal that no module turned into a PerftuneError
        error = os_error(exc)
        print(f"error: {error.line()}", file=sys.stderr)
        return error.exit_code


# The machine refuses (permissions, space, read-only or failing storage, no locks): environment.
ENV_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO,
                        errno.ENOLCK, errno.EMFILE, errno.ENFILE})


def os_error(exc: OSError) -> PerftuneError:
    """One-line error for an ``OSError``: exit 3 when the machine refuses (``ENV_ERRNOS``), else
    exit 2 (a path that is not what it must be, e.g. a file where a folder belongs)."""
    where = exc.filename if exc.filename is not None else "-"
    problem = exc.strerror or type(exc).__name__
    if exc.errno in ENV_ERRNOS:
        return EnvError(where, "-", problem, "check permissions, free space and the file system")
    return ContractError(where, "-", problem, "fix or remove what is at this path")


# The third-party packages every script may import (pyproject.toml dependencies, by module name).
REQUIRED_PACKAGES = ("numpy", "pandas", "jsonschema", "yaml", "matplotlib")


def install_import_guard() -> None:
    """Make a missing or broken required package an environment error, wherever it is imported.

    An ``ImportError`` of one of :data:`REQUIRED_PACKAGES` that reaches the top of a script (at
    import time, before :func:`run_cli` runs, or from a lazy import inside it) prints one line,
    ``error: <package>: import: env_error: ... (<fix>)``, and exits 3 — never a traceback with
    exit 1, which means "a check ran and failed". Other exceptions keep the default hook.
    """
    previous = sys.excepthook
    if getattr(previous, "_perftune_guard", False):
        return

    def hook(kind, exc, tb):
        name = (getattr(exc, "name", None) or "").split(".")[0]
        if isinstance(exc, ImportError) and not name:
            name = next((p for p in REQUIRED_PACKAGES if p in str(exc)), "")
        if isinstance(exc, ImportError) and name in REQUIRED_PACKAGES:
            root = __file__.rsplit("/scripts/", 1)[0] if "/scripts/" in __file__ else "<plugin root>"
            print(f"error: {name}: import: env_error: {exc} in {sys.executable} (install the plugin's "
                  f"packages into this interpreter: {sys.executable} -m pip install -e {root}, or run "
                  "the scripts with the interpreter that has them)", file=sys.stderr)
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(EXIT_ENV)
        previous(kind, exc, tb)

    hook._perftune_guard = True  # type: ignore[attr-defined]
    sys.excepthook = hook
