"""The cpu platform probe as its own process, so it runs in the cpu runner's environment.

BLAS thread pools are set by the environment before numpy starts (``runner_env``: 1 thread unless
set), so the roof is measured under exactly the threading the kernels are measured under.

usage:
  python -m perftune.terminal.platform_probe --output FILE --measured-at TIME
"""

from __future__ import annotations

import sys

from .. import fsio
from ..argv import parser_from_doc
from ..errors import run_cli
from .probe import probe_platform


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__, "platform_probe")
    parser.add_argument("--output", required=True)
    parser.add_argument("--measured-at", required=True)
    args = parser.parse_args(argv)
    fsio.write_json(args.output, probe_platform(args.measured_at))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
