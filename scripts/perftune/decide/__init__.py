"""Pure decisions over measured evidence: statistics, compare, ledger, candidates and selection.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure
"""
