"""P8 evidence: roofline, terminal-evidence records and the probes that measure fixed costs.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure
"""
