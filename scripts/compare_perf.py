#!/usr/bin/env python3
"""Compare a baseline round with a candidate round: per-case speed-ups, CIs, verdicts, targets.

`formal` recomputes every sample from the raw files of both rounds (never from measurement.json or
an earlier performance.json), applies the frozen decision rule of PERFORMANCE_CASES.json and writes
<op>/performance.json, performance.log, perf_report.md and docs/perf/figures/compare_*.png.
A paired candidate round carries its own baseline samples (used for the speed-up); --baseline
still names the independent baseline round that is cited. Independent rounds without a calibration
give no sized verdict: `inconclusive` (independent_not_calibrated), per case and suite. `quick` compares
a quick screen with the current best's round (a screen collected --paired-with it: its own pairs) and
writes docs/perf/quick/quick_NNN/quick_compare.json (never_ranks: true); it never touches the formal files. `calibrate` (right after the baseline, before any candidate)
measures the A/A noise of the baseline code and freezes docs/perf/calibration.json: every later
decision uses the band max(frozen noise_band, measured noise).

usage:
  compare_perf.py formal --op-dir DIR --baseline ROUND --candidate ROUND [--json]
  compare_perf.py quick --op-dir DIR --baseline ROUND --quick QUICK [--cases ID ...] [--json]
  compare_perf.py calibrate --op-dir DIR --rounds ROUND [ROUND] [--json]
  (ROUND: round_NNN or a collection id; QUICK: quick_NNN or a collection id)

example:
  python3 scripts/compare_perf.py formal --op-dir custom/softmax --baseline round_001 --candidate round_003

exit codes: 0 no target case is slower, 1 a target case is slower (formal), 2 usage/contract
error (different protocol, manifest hash mismatch, quick/incomplete/failed round given as
formal, missing cases, baseline == candidate), 3 environment error.
"""

from __future__ import annotations

import sys

from perftune.decide import calibration, compare, quick
from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import run_cli
from perftune.report import formal
from perftune.report.text import fmt, fmt_ci


def build_parser():
    parser = parser_from_doc(__doc__, "compare_perf.py")
    sub = parser.add_subparsers(dest="command", required=True)
    formal = sub.add_parser("formal", help="formal compare -> performance.json/.log, perf_report.md, figures")
    quick = sub.add_parser("quick", help="quick screen vs the formal baseline (never ranks)")
    cal = sub.add_parser("calibrate", help="freeze the effective noise band from 1-2 baseline rounds")
    add_op_dir(cal)
    cal.add_argument("--rounds", nargs="+", required=True, help="one or two formal rounds of the baseline code")
    add_json_flag(cal)
    for command in (formal, quick):
        add_op_dir(command)
        command.add_argument("--baseline", required=True, help="baseline round: round_NNN or collection id")
        add_json_flag(command)
    formal.add_argument("--candidate", required=True, help="candidate (final) round: round_NNN or collection id")
    quick.add_argument("--quick", required=True, help="quick result: quick_NNN or collection id")
    quick.add_argument("--cases", nargs="+", help="the item's case scope (target cases; default all targets)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "calibrate":
        out = calibration.calibrate(args.op_dir, args.rounds)
        print(fsio.dumps(out) if args.json else f"measured A/A noise {out['measured_noise']:.4f} ({out['kind']}); "
              f"effective band {out['effective_band']:.4f} frozen in docs/perf/calibration.json", end="\n" * (not args.json))
        return 0
    if args.command == "quick":
        result, path = quick.load_quick_compare(args.op_dir, args.baseline, args.quick, args.cases)
        fsio.write_json(path, result)
        rows = [f"{r['case']}: speedup {fmt(r['speedup'], '.4f')} {fmt_ci(r['speedup_ci'])} {r['verdict']}"
                for r in result["per_case"]]
        rows.append(f"promote to formal: {'yes' if result['promotion']['promote'] else 'no'} (never ranks) -> {path}")
        print(fsio.dumps({**result, "path": str(path)}) if args.json else "\n".join(rows), end="\n" * (not args.json))
        return 0
    perf = compare.load_formal(args.op_dir, args.baseline, args.candidate)
    paths = formal.write_formal(args.op_dir, perf)
    if args.json:
        print(fsio.dumps({**perf, "outputs": {k: str(v) for k, v in sorted(paths.items())}}), end="")
    else:
        for r in perf["per_case"]:
            print(f"{r['case']}: speedup {fmt(r['speedup'], '.4f')} {fmt_ci(r['speedup_ci'])} {r['verdict']}")
        suite = perf["suite"]
        print(f"suite {suite['metric']} {fmt(suite['score'], '.4f')} {fmt_ci(suite['ci'])} {suite['verdict']} "
              f"({suite['verdict_reason']}); "
              f"item acceptance: {perf['item_acceptance']['status']}; "
              f"target ({perf['effective_target']['source']}): {perf['effective_target']['status']}; "
              f"wrote {paths['json']}")
    return compare.exit_code(perf)


if __name__ == "__main__":
    sys.exit(run_cli(main))
