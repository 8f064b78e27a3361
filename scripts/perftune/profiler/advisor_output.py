"""``msprof-analyze advisor`` output: whether its advice applies to the folder it was given.

On a plain msprof ``PROF_*`` folder the advisor (msprof-analyze 8.x) prints ``Unknown profiling
type, the default value is set pytorch`` and then gives torch tips about data it never read. Such
output is recorded as not applicable (its files are still archived), never as advice.
"""

from __future__ import annotations

NOT_RECOGNISED = ("Unknown profiling type",)


def applicability(output: str) -> tuple[bool, str | None]:
    """``(applicable, reason)`` from the advisor's stdout + stderr."""
    for marker in NOT_RECOGNISED:
        if marker in output:
            line = next(l.strip() for l in output.splitlines() if marker in l)
            return False, f"the advisor did not recognise the folder: {line[:200]}"
    return True, None
