#!/usr/bin/env python3
"""Show what Stage 5 would extract from a profiler output, before anything is frozen.

Reads any PROF_* folder (CANN >= 7 mindstudio_profiler_output/ or CANN <= 6.3 device_<n>/summary/,
slices merged), OPPROF_* folder (msOpProf OpBasicInfo.csv / PipeUtilization.csv), torch_npu
ASCEND_PROFILER_OUTPUT folder (kernel_details.csv) or one of their files, with the readers the
backends use, and prints: the tables found; per op its launches (rows per launch, task types,
compute / control streams, durations); with --op-name the target's duration per launch, whether a
formal round accepts the table (exactly one launch), the quick-mode duration (task_time joined on
stream / task ids) and its pipe ratios; kernel_details totals and device rule; msOpProf rows;
timeline lanes and window; every warning. Every op (and every msOpProf kernel folder) gets a
diagnosis over all its launches: a bound label, the rule and figures that decided it, the core side
read and the next step (cases.py; docs/ascend-stage5.md "Diagnosis"). A CSV is read by its header,
whatever its name. --platform (platforms/*.json) with --chip (npu-smi 'Chip Name') adds the core
counts the occupancy rule needs. Exit 0 when something was read, 2 (one line on stderr) when
nothing could be or the platform file has no cores for the chip.

Usage:
  profiler_inspect.py PATH [--op-name NAME] [--platform FILE [--chip NAME]] [--json]

Example:
  python3 scripts/profiler_inspect.py output/PROF_000001_20260716124658116_00198324ACOLKAKA \
      --op-name PYPTO_add_binary_kernel
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import run_cli
from perftune.profiler import inspection


def build_parser():
    parser = parser_from_doc(__doc__, "profiler_inspect.py")
    parser.add_argument("path", metavar="PATH", help="a PROF_*, OPPROF_*, ASCEND_PROFILER_OUTPUT folder or a file")
    parser.add_argument("--op-name", help="the exact Op Name of the target kernel")
    parser.add_argument("--platform", help="platform file with the chip's core counts (platforms/atlas-*.json)")
    parser.add_argument("--chip", help="npu-smi 'Chip Name' of the card (picks the platform file's core entry)")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    report = inspection.inspect_path(args.path, args.op_name, platform=args.platform, chip=args.chip)
    print(fsio.dumps(report) if args.json else inspection.render_text(report), end="")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
