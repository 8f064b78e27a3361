"""perftune: the library behind the pypto-pro-op-orchestrator scripts.

Subpackages follow the Stage 5 flow (docs/architecture.md has the map): ``contract`` (what is
frozen) → ``measure`` → ``decide`` → ``terminal`` → ``report`` → ``verify``, beside
``orchestrate`` and ``demo``. At the top only the shared ground: ``errors``, ``fsio``, ``argv``.
Each subpackage's ``__init__`` names what it may import; tests/test_layering.py holds the code to it.
The thin CLIs in ``scripts/`` parse arguments, call one library function and map the result to
an exit code.

May import: (the shared ground imports only itself: argv and fsio may import errors; this root
imports errors to install the import guard)
"""

__version__ = "0.2.45"

from .errors import install_import_guard

install_import_guard()  # a missing numpy/pandas/jsonschema/pyyaml/matplotlib: one line, exit 3
