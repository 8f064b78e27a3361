"""The end-to-end demo driver and its experiment plan; it runs the real scripts as subprocesses, on the
steps ``decide/next_step`` (perf_next) reads from the evidence.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure, perftune.decide
"""
