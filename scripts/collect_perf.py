#!/usr/bin/env python3
"""Collect Stage 5 performance evidence for one operator with its frozen protocol.

Every protocol value (backend, device, warmup, repeats, op name, seed) comes from the frozen
PERFORMANCE_CASES.json; --backend/--device/--warmup/--repeats/--op-name are only accepted when
they equal it (a contradiction exits 2). list-op-names (discovery) also works before freezing:
the case comes from SPEC.md, --backend and --device say where to run it, and the table is kept
in docs/perf/discovery/discovery_NNN.json for freeze_cases.py freeze --op-name-from. The selector preflight runs before any formal or quick
collection. Every subprocess gets TILE_FWK_DEVICE_ID and never ASCEND_RT_VISIBLE_DEVICES.

usage:
  collect_perf.py formal --op-dir DIR [--retry N] [--paired-with VERSION_DIR] [--devices 0,1,.. | --jobs N] [--json]
  collect_perf.py quick --op-dir DIR [--paired-with VERSION_DIR] [--json]
  collect_perf.py list-op-names --op-dir DIR --case-id ID [--backend B] [--device N] [--json]
  collect_perf.py preflight --op-dir DIR [--json]
  collect_perf.py batch --op-dirs DIR [DIR ...] --shared-dir DIR (--devices 0,1,.. | --emit slurm
                        --cards-per-task N --output FILE) [--json]
  collect_perf.py merge --shared-dir DIR [--json]

example:
  python3 scripts/collect_perf.py formal --op-dir custom/softmax --retry 1

exit codes: 0 complete, 1 a round/preflight failed (kept, marked failed, with the reason),
2 usage/contract error, 3 environment error (e.g. msprof not on PATH).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune.measure import batch, collect, devices, discovery
from perftune.profiler import msprof_csv
from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc, path_arg
from perftune.errors import ContractError, run_cli

HELP = {"formal": "a new docs/perf/round_NNN (formal compare evidence)", "preflight": "the selector preflight only",
        "quick": "a quick screen in docs/perf/quick/quick_NNN (never ranks)",
        "list-op-names": "discovery: the exact op names one case runs"}


def build_parser():
    parser = parser_from_doc(__doc__, "collect_perf.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in HELP.items():
        command = sub.add_parser(name, help=text, description=text)
        add_op_dir(command, "operator directory holding PERFORMANCE_CASES.json")
        for flag, kind in (("--backend", str), ("--device", int), ("--warmup", int), ("--repeats", int), ("--op-name", str)):
            command.add_argument(flag, type=kind, help="must equal the frozen protocol value (checked)")
        add_json_flag(command)
    sub.choices["formal"].add_argument("--retry", type=int, default=0, help="extra attempts per failed case")
    for name in ("formal", "quick"):
        sub.choices[name].add_argument("--paired-with", type=Path, metavar="VERSION_DIR", help="saved sources of "
                                       "the baseline (quick: the current best); interleave both arms per repeat")
    sub.choices["formal"].add_argument("--devices", help="cards to run cases on at the same time (case i on card "
                                       "i mod n, one case per card, a lock per card)")
    sub.choices["formal"].add_argument("--jobs", type=int, help="pypto-sim: cases simulated side by side (default: cores)")
    sub.choices["list-op-names"].add_argument("--case-id", required=True, help="one known case id")
    many = sub.add_parser("batch", help="formal rounds of several operators across the cards (or a Slurm array)")
    many.add_argument("--op-dirs", nargs="+", required=True, type=path_arg, help="frozen operator folders")
    for command in (many, sub.add_parser("merge", help="the consolidated summary of a batch's task results")):
        command.add_argument("--shared-dir", required=True, type=path_arg, help="folder of results/ and batch_summary.json")
        add_json_flag(command)
    many.add_argument("--devices", help="cards of this host, e.g. 0,1,2,3,4,5,6,7")
    many.add_argument("--emit", choices=("slurm",), help="write a Slurm job-array script instead of running")
    many.add_argument("--cards-per-task", type=int, default=8, help="Slurm: cards per array task (default 8)")
    many.add_argument("--output", type=path_arg, help="Slurm: the script file to write (never overwritten)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("batch", "merge"):
        return _batch(args)
    given = collect.Overrides(args.backend, args.device, args.warmup, args.repeats, args.op_name)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    if args.command == "list-op-names":
        if (Path(args.op_dir) / "PERFORMANCE_CASES.json").exists():
            collect.prepare(args.op_dir, given, check_env=False)  # a contradiction of the frozen protocol exits 2
        path, record = discovery.discover(args.op_dir, args.case_id, backend=args.backend, device=args.device)
        result = {"status": "complete", "rows": record["rows"], "record": str(path)}
    elif args.command == "formal":
        ctx = collect.prepare(args.op_dir, given)
        cards = devices.parse_devices(args.devices) if args.devices else None
        result = collect.run_formal(ctx, retry=args.retry, paired_with=args.paired_with, progress=say, devices=cards, jobs=args.jobs)
    elif args.command == "quick":
        result = collect.run_quick(collect.prepare(args.op_dir, given), paired_with=args.paired_with, progress=say)
    elif args.command == "preflight":
        result = {"status": "complete", "probes": collect.run_preflight(collect.prepare(args.op_dir, given))}
    if args.json:
        print(fsio.dumps(result), end="")
    elif args.command == "list-op-names":
        print(msprof_csv.discovery_tsv(result["rows"]), end="")  # missing is N/A, never zero
        print(f"discovery record: {result['record']}", file=sys.stderr)
    elif args.command == "preflight":
        known = sum(p["expect"] == "marker" for p in result["probes"])   # 0: each timed launch checks its own
        print(f"preflight ok: unknown id refused; {f'{known} cases select exactly one case' if known else 'each timed launch checks its case marker'}")
    else:
        print(f"{result['collection_id']}: {result['status']} ({result.get('round') or result.get('path')})"
              + (f": {result['failure']}" if result.get("failure") else ""))
    return 0 if result["status"] == "complete" else 1


def _batch(args) -> int:
    if args.command == "merge":
        result = batch.merge(args.shared_dir)
    elif args.emit:
        result = {"script": str(batch.slurm_script(args.op_dirs, args.shared_dir, args.cards_per_task, args.output or ""))}
    elif not args.devices:
        raise ContractError("collect_perf.py", "--devices", "is missing", "list this host's cards, or --emit slurm")
    else:
        result = batch.run_local(args.op_dirs, devices.parse_devices(args.devices), args.shared_dir)
    print(fsio.dumps(result), end="") if args.json else print(
        result.get("script") or f"{result['complete']} complete, {result['failed']} failed: {args.shared_dir}")
    return 0 if result.get("script") or not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
