#!/usr/bin/env python3
"""Supplemental instruction timeline per P0 case of a formal round (msprof backend, final acceptance).

`collect` traces every case of a complete formal round of the current sources once more, on the
card (application profiler with instruction profiling, then the timeline export) or without a
card (`msprof op simulator`), and writes docs/perf/timeline/<round>/<case folder>/timeline.json:
per-pipe busy intervals inside the one target-kernel window, overlap counted only within one lane,
completeness checks and the hashes of the archived exports. Timeline durations never replace
formal numbers. `parse` reads one Chrome trace file (a simulator per-core or all-core trace.json,
an msprof_*.json export or its slices, a torch_npu trace_view.json) and prints the per-pipe model
(no profiling): the window is the one event named --op-name, or, when no event names the kernel
(simulator traces never do), the whole capture, and the output says which.

usage:
  instruction_timeline.py collect --op-dir DIR --round ROUND [--source card|simulator]
                          [--kernel-name NAME] [--soc-version SOC] [--json]
  instruction_timeline.py parse --trace FILE [--trace SLICE ...] [--op-name NAME] [--core NAME] [--json]

example:
  python3 scripts/instruction_timeline.py collect --op-dir custom/softmax --round round_007

exit codes: 0 every case has a complete timeline, 1 a case failed (named, nothing half-written),
2 usage/contract error, 3 environment error (msprof missing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc, path_arg
from perftune.errors import ContractError, run_cli
from perftune.measure import timeline_collect
from perftune.profiler import timeline


def build_parser():
    parser = parser_from_doc(__doc__, "instruction_timeline.py")
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser("collect", help="trace every case of a formal round and write timeline.json files")
    add_op_dir(collect, "operator directory")
    collect.add_argument("--round", required=True, help="round_NNN, its path or collection id (the final round)")
    collect.add_argument("--source", choices=timeline_collect.SOURCES, default="card",
                         help="card: instruction profiling + export; simulator: msprof op simulator")
    collect.add_argument("--kernel-name", help="simulator only: the exact (mangled) kernel symbol")
    collect.add_argument("--soc-version", help="simulator only: the simulator model, e.g. Ascend950")
    add_json_flag(collect)
    parse = sub.add_parser("parse", help="print the per-pipe model of one Chrome trace file")
    parse.add_argument("--trace", required=True, action="append", type=path_arg,
                       help="a trace.json, msprof_*.json or trace_view.json (repeat for the slices of one export)")
    parse.add_argument("--op-name", help="the target kernel's exact name (its window); default: the whole capture")
    parse.add_argument("--core", help="the core a per-core simulator trace belongs to (default: its folder name)")
    add_json_flag(parse)
    return parser


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ContractError(path, "--trace", f"cannot read the trace: {exc.strerror}", "pass the right path") from None
    except UnicodeDecodeError:
        raise ContractError(path, "--trace", "is not UTF-8 text", "pass the JSON trace, not a .bin") from None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "parse":
        paths = [Path(p) for p in args.trace]
        names = timeline.slice_order([p.name for p in paths], args.trace[0]) if len(paths) > 1 else [paths[0].name]
        ordered = [next(p for p in paths if p.name == n) for n in names]
        trace = timeline.read_trace([(_text(p), str(p)) for p in ordered], args.op_name,
                                    core=args.core or paths[0].resolve().parent.name)
        model = timeline.summarise_trace(trace)
        window = model["window"]
        print(fsio.dumps(model), end="") if args.json else print("\n".join(
            [f"window [{window['start']}, {window['end']}] ({window['source']}: {trace.note}); lanes by "
             f"{model['lane_model']}"] + [f"{f}: busy {v['busy']} over {v['lanes']} lanes" for f, v in model["pipes"].items()]))
        return 0
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    rows = timeline_collect.collect_round(args.op_dir, args.round, source=args.source, kernel_name=args.kernel_name,
                                          soc_version=args.soc_version, progress=say)
    if args.json:
        print(fsio.dumps({"cases": rows}), end="")
    failed = [r for r in rows if r["status"] != "complete"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
