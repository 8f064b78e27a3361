#!/usr/bin/env python3
"""Collect Stage 5 performance evidence for one operator with its frozen protocol.

Every protocol value (backend, device, warmup, repeats, op name, seed) comes from the frozen
PERFORMANCE_CASES.json; --backend/--device/--warmup/--repeats/--op-name are only accepted when
they equal it (a contradiction exits 2). The selector preflight runs before any formal or quick
collection. Every subprocess gets TILE_FWK_DEVICE_ID and never ASCEND_RT_VISIBLE_DEVICES.

usage:
  collect_perf.py formal --op-dir DIR [--retry N] [--paired-with VERSION_DIR] [--json]
  collect_perf.py quick --op-dir DIR [--json]
  collect_perf.py list-op-names --op-dir DIR --case-id ID [--backend B --device N] [--json]
                                (before the freeze: a temporary manifest from SPEC.md; --backend needed)
  collect_perf.py preflight --op-dir DIR [--json]

example:
  python3 scripts/collect_perf.py formal --op-dir custom/softmax --retry 1

exit codes: 0 complete, 1 a round/preflight failed (kept, marked failed, with the reason),
2 usage/contract error, 3 environment error (e.g. msprof not on PATH).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from perftune.measure import collect
from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.errors import run_cli

HELP = {"formal": "a new docs/perf/round_NNN (formal compare evidence)", "preflight": "the selector preflight only",
        "quick": "a quick screen in docs/perf/quick/quick_NNN (never ranks)",
        "list-op-names": "discovery: the exact op names one case runs"}


def build_parser():
    parser = parser_from_doc(__doc__, "collect_perf.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in HELP.items():
        command = sub.add_parser(name, help=text, description=text)
        command.add_argument("--op-dir", required=True, help="operator directory holding PERFORMANCE_CASES.json")
        for flag, kind in (("--backend", str), ("--device", int), ("--warmup", int), ("--repeats", int), ("--op-name", str)):
            command.add_argument(flag, type=kind, help="must equal the frozen protocol value (checked)")
        add_json_flag(command)
    sub.choices["formal"].add_argument("--retry", type=int, default=0, help="extra attempts per failed case")
    sub.choices["formal"].add_argument("--paired-with", type=Path, metavar="VERSION_DIR", help="saved baseline "
                                       "sources; interleave baseline/candidate per repeat")
    sub.choices["list-op-names"].add_argument("--case-id", required=True, help="one known case id")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    given = collect.Overrides(args.backend, args.device, args.warmup, args.repeats, args.op_name)
    if args.command == "list-op-names":  # discovery also works before the freeze (a temporary manifest)
        with tempfile.TemporaryDirectory(prefix="perftune_discovery_") as scratch:
            ctx = collect.prepare_discovery(args.op_dir, given, Path(scratch))
            result = {"status": "complete", "rows": collect.list_op_names(ctx, args.case_id)}
        return show(args, result)
    ctx = collect.prepare(args.op_dir, given)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    if args.command == "formal":
        result = collect.run_formal(ctx, retry=args.retry, paired_with=args.paired_with, progress=say)
    elif args.command == "quick":
        result = collect.run_quick(ctx, progress=say)
    else:
        result = {"status": "complete", "probes": collect.run_preflight(ctx)}
    return show(args, result)


def show(args, result) -> int:
    if args.json:
        print(fsio.dumps(result), end="")
    elif args.command == "list-op-names":
        print("count\ttask_type\ttotal_duration_us\texact_op_name")
        for row in result["rows"]:
            total = row["total_duration_us"]  # missing is never zero
            print(f"{row['count']}\t{row['task_type']}\t{'N/A' if total is None else f'{total:.3f}'}\t{row['exact_op_name']}")
    elif args.command == "preflight":
        print(f"preflight ok: {len(result['probes']) - 1} cases select exactly one case; unknown id refused")
    else:
        print(f"{result['collection_id']}: {result['status']} ({result.get('round') or result.get('path')})"
              + (f": {result['failure']}" if result.get("failure") else ""))
    return 0 if result["status"] == "complete" else 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
