"""Rendering only: turn the dicts the decision modules return into text, markdown and figures.

- :mod:`.text` — ``performance.log``, the fixed-width table of a formal compare.
- :mod:`.compare_md` — ``perf_report.md``, the human report of one compare.
- :mod:`.plots` — matplotlib figures (Agg, PNG); each function takes plain data and an output
  path and returns the path, so other reports (``PERFORMANCE_REPORT.md``) reuse them.

Renderers never compute a statistic; a missing number is shown as ``n/a``, never as 0.
"""
