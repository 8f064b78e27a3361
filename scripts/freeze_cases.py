#!/usr/bin/env python3
"""Build, validate or show the frozen Stage 5 case manifest PERFORMANCE_CASES.json.

`freeze` reads the SPEC.md performance P0 table and the `test_*` functions of test_<op>.py
(parsed with ast, nothing is imported), checks one-to-one coverage and the optimisation target,
and writes the schema_version 2 manifest with the frozen protocol (seed 42; the cpu Op Name: see
--op-name). A manifest is never overwritten; `--replace REASON` re-freezes while no round exists,
keeping the old one in docs/perf/manifest_history/ (refused after the first round).

usage:
  freeze_cases.py freeze --op-dir DIR --target-case-ids ID [ID ...]|all_p0 --selection-mode MODE
                         --backend cpu|msprof|pypto-sim (--op-name NAME | --op-name-from RECORD [--op-name NAME])
                         [--device N] [--warmup N] [--repeats N] [--noise-band B --noise-band-reason TEXT]
                         [--remeasure-budget-s S] [--replace REASON] [--sim-arch A2A3|A5] [--json]
  freeze_cases.py validate|show --op-dir DIR [--json]

example:
  python3 scripts/freeze_cases.py freeze --op-dir custom/rmsnorm --target-case-ids all_p0 --selection-mode all_p0_no_questions --backend cpu --op-name rmsnorm_kernel

--op-name-from takes (and checks) the name from a discovery record (collect_perf.py list-op-names). exit codes: 0 ok, 2 usage/contract error (names file, field and fix), 3 environment (pypto-sim without the pypto extra).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perftune import fsio
from perftune.contract import freeze as freezing, frozen_inputs, manifest, op_name, protocol
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import ContractError, run_cli
from perftune.measure import backends, discovery, evidence
from perftune.measure.backends import pypto_sim


def build_parser():
    parser = parser_from_doc(__doc__, "freeze_cases.py")
    sub = parser.add_subparsers(dest="command", required=True)
    freeze = sub.add_parser("freeze", help="build and write the manifest (never overwrites)")
    add_op_dir(freeze)
    freeze.add_argument("--target-case-ids", nargs="+", required=True, help="target case ids, or all_p0 (every P0 case)")
    freeze.add_argument("--selection-mode", required=True, choices=protocol.SELECTION_MODES)
    freeze.add_argument("--backend", required=True, choices=protocol.BACKENDS)
    freeze.add_argument("--op-name", help="exact timed Op Name (msprof: from discovery; cpu: "
                        f"{op_name.DEFINITION})")
    freeze.add_argument("--op-name-from", metavar="RECORD", help="discovery record docs/perf/discovery/"
                        "discovery_NNN.json: take (or check) the op name there")
    freeze.add_argument("--device", type=int, default=0, help="physical device id (default 0)")
    freeze.add_argument("--warmup", type=int, help="untimed calls per repeat (default: the backend's, "
                        f"{backends.defaults_text('default_warmup')})")
    freeze.add_argument("--repeats", type=int, help="timed repeats per case (default: the backend's, "
                        f"{backends.defaults_text('default_repeats')})")
    freeze.add_argument("--seed", type=int, default=protocol.SEED, help="must be 42")
    freeze.add_argument("--aggregation", choices=protocol.AGGREGATIONS, default=protocol.DEFAULT_AGGREGATION)
    freeze.add_argument("--decision-method", choices=protocol.DECISION_METHODS, default="bootstrap")
    freeze.add_argument("--noise-band", type=float, default=protocol.DEFAULT_DECISION["noise_band"])
    freeze.add_argument("--noise-band-reason", help="why the band differs from the default (frozen with it)")
    freeze.add_argument("--quick-min-speedup", type=float, default=protocol.DEFAULT_PROMOTION["quick_min_speedup"])
    freeze.add_argument("--promotion-rule", choices=protocol.PROMOTION_RULES, default=protocol.DEFAULT_PROMOTION["rule"])
    freeze.add_argument("--aggregate-metric", choices=protocol.AGGREGATE_METRICS, default=protocol.AGGREGATE_METRIC)
    freeze.add_argument("--multiplicity", choices=protocol.MULTIPLICITY, default="bonferroni")
    freeze.add_argument("--max-remeasurements", type=int, default=protocol.DEFAULT_MAX_REMEASUREMENTS)
    freeze.add_argument("--remeasure-budget-s", type=float, default=protocol.DEFAULT_REMEASURE_BUDGET_S)
    freeze.add_argument("--processes", type=int, default=protocol.DEFAULT_PROCESSES,
                        help="processes a case's repeats are spread over (cpu; must divide --repeats)")
    freeze.add_argument("--sim-arch", default="A2A3", help="pypto-sim only: simulated chip (A2A3 or A5)")
    freeze.add_argument("--test-file", help="test file name inside --op-dir (default test_<op>.py)")
    freeze.add_argument("--replace", metavar="REASON", help="re-freeze (only while no round exists); the old "
                        "manifest is kept in docs/perf/manifest_history/")
    add_json_flag(freeze)
    for name, text in (("validate", "validate an existing manifest"), ("show", "print the manifest")):
        command = sub.add_parser(name, help=text)
        add_op_dir(command), add_json_flag(command)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    path = Path(args.op_dir) / protocol.MANIFEST_NAME
    if args.command == "freeze":
        if args.op_name_from:
            args.op_name = discovery.op_name_from_record(args.op_name_from, args.op_dir, backend=args.backend,
                                                         device=args.device, op_name=args.op_name)
        elif not args.op_name:
            raise ContractError("freeze_cases.py", "--op-name", "is missing", "pass --op-name or --op-name-from")
        chosen = backends.get_backend(args.backend)
        proto = manifest.make_protocol(
            backend=args.backend, device_id=args.device, repeats=chosen.default_repeats if args.repeats is None
            else args.repeats, warmup=chosen.default_warmup if args.warmup is None else args.warmup,
            op_name=args.op_name, seed=args.seed, aggregation=args.aggregation,
            launch=discovery.launch_from_record(args.op_name_from, args.op_name),
            decision={"method": args.decision_method, "noise_band": args.noise_band, "multiplicity": args.multiplicity,
                      **({"noise_band_reason": args.noise_band_reason} if args.noise_band_reason else {})},
            promotion={"quick_min_speedup": args.quick_min_speedup, "rule": args.promotion_rule},
            aggregate_metric=args.aggregate_metric, max_remeasurements=args.max_remeasurements,
            processes=args.processes, remeasure_budget_s=args.remeasure_budget_s,
            simulator=pypto_sim.simulator_identity(args.sim_arch) if args.backend == "pypto-sim" else None)
        manifest.check_protocol_values(proto, "freeze_cases.py")
        targets = args.target_case_ids   # all_p0, as operator-format.md writes it: every P0 case of SPEC.md
        targets = freezing.p0_case_ids(args.op_dir) if targets == ["all_p0"] else targets
        with frozen_inputs.recorded(args.op_dir, replace=args.replace):
            path, obj, report = freezing.freeze(args.op_dir, target_case_ids=targets, selection_mode=args.selection_mode,
                                                proto=proto, test_name=args.test_file, replace=args.replace,
                                                at=evidence.utc_now())
    else:
        obj, report = manifest.load_manifest(path).raw, {}
    record = fsio.file_record(path, args.op_dir)
    if args.json:
        print(fsio.dumps({"manifest": record, "command": args.command, "content": obj, **report}), end="")
    elif args.command == "show":
        print(json.dumps(obj, indent=2, sort_keys=True))
    else:
        verb = "frozen" if args.command == "freeze" else "valid"
        print(f"{record['path']}: {verb} ({len(obj['cases'])} cases, sha256 {record['sha256'][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
