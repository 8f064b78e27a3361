#!/usr/bin/env python3
"""Show what Stage 5 would extract from a profiler output, before anything is frozen.

Reads any PROF_* folder (CANN >= 7 mindstudio_profiler_output/ or CANN <= 6.3 device_<n>/summary/,
slices merged), OPPROF_* folder (msOpProf OpBasicInfo.csv / PipeUtilization.csv), torch_npu
ASCEND_PROFILER_OUTPUT folder (kernel_details.csv) or one of their files, with the readers the
backends use, and prints: the tables found; per op its launches (rows per launch, task types,
compute / control streams, durations); with --op-name the target's duration per launch, whether a
formal round accepts the table (exactly one launch), the quick-mode duration (task_time joined on
stream / task ids) and its pipe ratios; kernel_details totals and device rule; msOpProf rows;
timeline lanes and window; every warning. Exit 0 when something was read, 2 (one line on stderr)
when nothing could be.

Usage:
  profiler_inspect.py PATH [--op-name NAME] [--json]

Example:
  python3 scripts/profiler_inspect.py output/PROF_000001_20260716124658116_00198324ACOLKAKA \
      --op-name PYPTO_add_binary_kernel
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import run_cli
from perftune.profiler import inspection


def build_parser():
    parser = parser_from_doc(__doc__, "profiler_inspect.py")
    parser.add_argument("path", metavar="PATH", type=path_arg, help="a PROF_*, OPPROF_*, ASCEND_PROFILER_OUTPUT folder or a file")
    parser.add_argument("--op-name", help="the exact Op Name of the target kernel")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    report = inspection.inspect_path(args.path, args.op_name)
    print(fsio.dumps(report) if args.json else inspection.render_text(report), end="")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
