#!/usr/bin/env python3
"""Edit the Stage 5 optimisation-item ledger docs/perf/ledger.json (lock + atomic write + history).

`init` enumerates KB_SELECTION.json obligations and the general-method, knowledge-card and template INDEX
tables (active + eligible rows), never overwrites; `add` creates a bottleneck_derived item (refused while a
preset item is open); `update` changes status, reason and evidence and validates the transition; `reopen`
sends a closed item back to pending; `sweep` records the final sweep; `show` prints the table; `close-gated`
closes not_applicable every pending item whose gate (platform, dtype, bound) fails here. docs/ledger.md.

usage:
  ledger.py init --op-dir DIR [--sources-dir DIR]
  ledger.py add --op-dir DIR --item-id ID --title T --evidence-file F [--anchor A] --expected-metric M --hypothesis H
  ledger.py update --op-dir DIR --item ID [--status S] [--reason-code R] --note N [--hypothesis H]
                   [--expected-metric M] [--applicability A --grounds G] [--code-ref F] [--correctness RUN]
                   [--quick ID ...] [--formal ID ...] [--mechanism M] [--restore-point V] [--relation KIND ITEM]
  ledger.py reopen --op-dir DIR --item ID --note N [--by ITEM]
  ledger.py sweep --op-dir DIR --scope S --examined PATH ... [--finding TEXT MAPS_TO NOTE]...
  ledger.py show --op-dir DIR [--json]
  ledger.py close-gated --op-dir DIR [--json]

example:
  python3 scripts/ledger.py update --op-dir custom/softmax --item general-18 --status accepted --correctness c001-1a2b3c4d --formal round_003 round_001 --note "fp32 accumulation: 1.4x"

`update --status accepted` refuses unless the frozen rule accepts --formal CANDIDATE_ROUND BEST_ROUND and stage5_check's P9 passes the --correctness run's probes (verify/early.py; names the check id).
exit codes: 0 ok, 2 usage/contract error (refused transition, bad input; nothing written).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone

from perftune import fsio
from perftune.decide import citations, item_decision, ledger, ledger_gates, ledger_sources
from perftune.contract import manifest, protocol
from perftune.measure import correctness
from perftune.verify import early
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc, path_arg
from perftune.errors import run_cli

FLAGS = {
    "init": [("--sources-dir", {"type": path_arg})],
    "add": [("--item-id", {"required": True}), ("--title", {"required": True}), ("--anchor", {"default": "-"}),
            ("--evidence-file", {"required": True, "help": "bottleneck evidence file inside --op-dir"}),
            ("--case-scope", {"default": "all"}), ("--expected-metric", {"required": True}),
            ("--hypothesis", {"required": True, "help": "falsifiable mechanism, change, risk, stop condition"})],
    "update": [("--item", {"required": True}), ("--status", {"choices": protocol.NON_TERMINAL_STATUSES + ledger.TERMINAL}), ("--reason-code", {"choices": protocol.REASON_CODES}),
               ("--note", {"default": ""}), ("--code-ref", {}), ("--correctness", {}), ("--mechanism", {}),
               ("--restore-point", {}), ("--quick", {"nargs": "+", "default": []}),
               ("--formal", {"nargs": "+", "default": []}), ("--applicability", {"choices": ledger.APPLICABILITY}),
               ("--grounds", {}), ("--expected-metric", {}), ("--hypothesis", {"help": "PB-3 step 2: mechanism, metric, risk, stop condition (before editing)"}),
               ("--relation", {"nargs": 2, "action": "append", "default": [], "metavar": ("KIND", "ITEM")})],
    "reopen": [("--item", {"required": True}), ("--note", {"required": True}), ("--by", {})],
    "sweep": [("--scope", {"required": True}), ("--examined", {"nargs": "+", "required": True}),
              ("--finding", {"nargs": 3, "action": "append", "default": [], "metavar": ("TEXT", "MAPS_TO", "NOTE")})],
    "show": [], "close-gated": []}


def build_parser():
    parser = parser_from_doc(__doc__, "ledger.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, flags in FLAGS.items():
        command = sub.add_parser(name, help=f"{name} (see the module help)")
        add_op_dir(command)
        command.add_argument("--actor", default="pypto-pro-op-optimizer", help="who makes the change")
        for flag, options in flags:
            command.add_argument(flag, **options)
        add_json_flag(command)
    return parser


def edit(args, at: str):
    if args.command == "add":
        src = ledger_sources.derived_source(
            args.op_dir, item_id=args.item_id, title=args.title, evidence_file=args.evidence_file, anchor=args.anchor,
            case_scope=args.case_scope, expected_metric=args.expected_metric, case_ids=ledger.case_ids_of(args.op_dir))
        return lambda led: ledger.add_derived(led, src, hypothesis=args.hypothesis, at=at, actor=args.actor)
    if args.command == "close-gated":
        man = manifest.load_manifest(f"{args.op_dir}/{protocol.MANIFEST_NAME}")
        bounds = ledger_gates.bound_evidence(args.op_dir)
        return lambda led: ledger_gates.close_failed(led, man, at=at, actor=args.actor, bounds=bounds)
    if args.command == "reopen":
        return lambda led: ledger.reopen_item(led, args.item, note=args.note, by=args.by, at=at, actor=args.actor)
    if args.command == "sweep":
        found = [{"finding": f, "maps_to": m, "note": n} for f, m, n in args.finding]
        cited = citations.record(args.op_dir, args.examined)   # exists; files hashed, rounds by id
        return lambda led: ledger.record_sweep(led, scope=args.scope, examined=args.examined, findings=found,
                                               at=at, actor=args.actor, examined_files=cited)
    change = ledger.ItemChange(
        status=args.status, reason_code=args.reason_code, note=args.note, code_ref=args.code_ref,
        correctness=correctness.run_id_of(args.correctness), quick=tuple(args.quick), formal=tuple(args.formal), mechanism=args.mechanism,
        restore_point=args.restore_point, relations=tuple(map(tuple, args.relation)),
        applicability=args.applicability, grounds=args.grounds, expected_metric=args.expected_metric,
        hypothesis=args.hypothesis)
    return lambda led: item_decision.require_decided(args.op_dir, args.item, early.require_clean(
        args.op_dir, args.item, ledger.update_item(led, args.item, change, at=at, actor=args.actor)))


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    at, path = datetime.now(timezone.utc).isoformat(timespec="seconds"), ledger.ledger_path(args.op_dir)
    if args.command == "init":
        obj = ledger.init_file(args.op_dir, at=at, actor=args.actor, sources_dir=args.sources_dir)
    elif args.command == "show":
        obj = ledger.load_ledger(path)
    else:
        obj = ledger.modify_ledger(path, edit(args, at))
    if args.json:
        print(fsio.dumps(obj), end="")
        return 0
    for item in obj["items"]:
        ev = item["evidence"]
        print(f"{item['item_id']:<28} {item['source_kind']:<18} {item['status']:<19} "
              f"{item['reason_code'] or '-':<18} formal={','.join(ev['formal']) or '-'} quick={','.join(ev['quick']) or '-'}")
    print(f"{path}: revision {obj['revision']}, {len(obj['items'])} items, sweep {'recorded' if obj['sweep'] else 'missing'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
