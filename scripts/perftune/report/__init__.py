"""Rendering only: turn the dicts the decision modules return into text, markdown and figures.

- :mod:`.text` — ``performance.log``, the fixed-width table of a formal compare.
- :mod:`.compare_md`, :mod:`.formal` — ``perf_report.md`` and the files of one formal compare.
- :mod:`.plots` — matplotlib figures (Agg, PNG); each function takes plain data and an output
  path and returns the path, so other reports (``PERFORMANCE_REPORT.md``) reuse them.
- :mod:`.final_report`, :mod:`.final_md`, :mod:`.final_plots` — ``PERFORMANCE_REPORT.md``.

Renderers never compute a statistic; a missing number is shown as ``n/a``, never as 0.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure, perftune.decide
"""
