"""The correctness probe with the beyond-P0 probes, in one process (issue 35 Deliver 2).

``probe_runner``'s correctness mode (its steps 1-4) and, with ``--beyond-seed N``, step 5: on the case's
same first call, the tail inputs, the support shapes drawn with N and the accumulation dtypes
(``beyond_probe.after_first``, what stage5_check's ``verify/beyond_p0.py`` runs), recorded as ``beyond``.
Its own module so that ``probe_runner`` does not import ``beyond_probe``, which builds on it.
``check_correctness.py`` runs it per P0 case (``measure/correctness.run_all``, ``probes.run(beyond_seed=N)``).

usage:
  python -m perftune.measure.correctness_probe --op-dir DIR --runner FILE --manifest FILE --case-id ID
      --op-name NAME --output FILE --beyond-seed N [--mode correctness] [--calls N]
"""

from __future__ import annotations

import sys

from ..errors import run_cli
from . import beyond_probe, probe_runner


def main(argv=None) -> int:
    return probe_runner.main(argv, beyond=beyond_probe.correctness_step)


if __name__ == "__main__":
    sys.exit(run_cli(main))
