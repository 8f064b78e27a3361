"""The end-to-end demo driver and its experiment plan; it runs the real scripts as subprocesses.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure
"""
