"""Measuring under the contract: collection, the round layout (evidence), correctness runs, backends.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler
"""
