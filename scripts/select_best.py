#!/usr/bin/env python3
"""Record candidate versions, recompute the ranking and choose the best version (DESIGN §4.6, §7).

`record` appends a version with a valid formal round to docs/perf/candidates.json (immutable
evaluation_order, code hash + saved copy, items, correctness run, compliance) and refuses quick
results, rounds of other code, duplicate ids and the same code recorded twice (a re-measurement
of a version names it with --supersedes; choose then ranks only the newest entry). `choose`
recomputes every score and CI against the frozen baseline from the raw rounds on disk, builds the
tie set around the raw top score and picks the smallest evaluation_order; writes
docs/perf/selection.json (byte-identical on re-run) with the chosen version's confirm_partner.
`confirm` checks a new round that repeats the chosen version's ranking comparison (paired with
confirm_partner) against its ranking round, and whether that round refutes the choice.

usage:
  select_best.py record --op-dir DIR --version-id ID --round ROUND --correctness RUN_ID
                        [--items ID ...] [--compliance TEXT] [--supersedes VERSION_ID] [--json]
  select_best.py choose --op-dir DIR [--json]
  select_best.py confirm --op-dir DIR --final-round ROUND [--json]
  select_best.py restore --op-dir DIR --version ID [--json]   (a recorded or tried version's code back in place)

example:
  python3 scripts/select_best.py record --op-dir custom/softmax --version-id v1-fp32 --round round_002 \
      --items general-18 --correctness c002-1a2b3c4d --compliance "stage4_gates.py: PASS"

confirm's `verdict`: `consistent`; `remeasure` (not shown equivalent, attempts left: collect a round
paired with `confirm_partner`, confirm again); `final_unresolved` / `final_inconsistent` (the limit
1 + protocol.max_remeasurements is reached: disclosed, no more attempts); `refuted`. Each attempt is
stored in docs/perf/confirm.json; never cherry-pick.

exit codes: 0 ok / chosen / confirm verdict consistent or final_*; 1 no eligible candidate, or confirm
verdict remeasure or refuted; 2 usage/contract error (also: the round does not repeat the ranking
comparison, or a confirm attempt beyond the limit).
"""

from __future__ import annotations

import sys

from perftune.decide import candidates, versions
from perftune.measure import correctness, evidence
from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "select_best.py")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="append a version with a valid formal round")
    rec.add_argument("--version-id", required=True, help="new immutable version id")
    rec.add_argument("--round", required=True, help="its formal round (round_NNN or collection id)")
    rec.add_argument("--items", nargs="*", default=[], help="ledger item ids this version implements")
    rec.add_argument("--correctness", required=True, help="run id from check_correctness.py on this code")
    rec.add_argument("--compliance", help="compliance evidence, e.g. 'stage4_gates.py: PASS'")
    rec.add_argument("--supersedes", metavar="VERSION_ID", help="this is a re-measurement (a newer formal "
                     "round) of that version's code; choose ranks only the newest")
    sub.add_parser("choose", help="recompute the ranking and write selection.json")
    conf = sub.add_parser("confirm", help="compare a repeat of the ranking comparison with the ranking data")
    conf.add_argument("--final-round", required=True, help="the chosen version's confirm round (a formal round "
                      "paired with confirm_partner)")
    res = sub.add_parser("restore", help="put a recorded or archived tried version's code back in place")
    res.add_argument("--version", required=True, help="the version id (folder name under docs/perf/versions)")
    for command in sub.choices.values():
        add_op_dir(command)
        add_json_flag(command)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "record":
        out = candidates.record(args.op_dir, version_id=args.version_id, round_ref=args.round, items=args.items,
                                correctness_id=correctness.run_id_of(args.correctness), compliance=args.compliance, at=evidence.utc_now(),
                                supersedes=args.supersedes)
        text, code = f"recorded {out['version_id']} (evaluation_order {out['evaluation_order']}, " \
                     f"{out['formal_collection_id']}, kb_gaps_open={out['kb_gaps_open']})", 0
    elif args.command == "choose":
        out = candidates.choose(args.op_dir)
        rows = [f"{c['version_id']:<20} order={c['evaluation_order']} score={c['score']} rank={c['rank']} "
                f"tie={c['in_tie_set']} {c['ineligible_reason'] or ''}" for c in out["candidates"]]
        text, code = "\n".join(rows + [f"chosen: {out['chosen']} - {out['reason']}"]), 0 if out["chosen"] else 1
    elif args.command == "restore":
        out, code = versions.restore(args.op_dir, args.version), 0
        text = f"restored {out['version_id']} from {out['from']}: {', '.join(out['restored'])}"
    else:
        out = candidates.confirm(args.op_dir, args.final_round)
        text = (f"{out['chosen']}: final/ranking score ratio {out['ratio']:.4f} (CI {out['ratio_ci']}), band "
                f"[{out['band'][0]:.4f}, {out['band'][1]:.4f}]: {out['status']} (attempt {out['attempt']} of "
                f"{out['limit']}; verdict {out['verdict']}){'' if out['consistent'] else ' - ' + out['action']}"
                f"{'; REFUTED: the round proves the chosen version slower than its reference' if out['refuted'] else ''}")
        code = 0 if out["verdict"] == "consistent" or out["verdict"].startswith("final_") else 1
    print(fsio.dumps(out), end="") if args.json else print(text)
    return code


if __name__ == "__main__":
    sys.exit(run_cli(main))
