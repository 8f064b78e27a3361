"""perftune: the library behind the pypto-pro-op-orchestrator scripts.

Pure decision modules (statistics, comparison, routing, selection, ledger checks, gates) take
dataclasses and plain values; I/O lives in ``fsio``, ``schemas`` and the backends. The thin CLIs
in ``scripts/`` parse arguments, call one library function and map the result to an exit code.
"""

__version__ = "0.1.0"
