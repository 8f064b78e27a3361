"""The knowledge base the agent reads: integrity of the shipped references and the case library.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.decide
"""
