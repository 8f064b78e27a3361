#!/usr/bin/env python3
"""Drive the Stage 1-5 state machine custom/<op>/.orchestrator_state.json (schema 2.2).

One sub-command per action; a refused action changes nothing, exits 2 and names the guard
(`guard:<action>.<guard>`). Only `--actor pypto-pro-op-orchestrator` may change the state; writes
are atomic under a lock. Actions, guards, SPEC freeze: docs/state-machine.md.

usage:
  orchestrator_state.py <action> --op-dir DIR --actor pypto-pro-op-orchestrator [flags] [--json]
  orchestrator_state.py show --op-dir DIR [--json]
example:
  python3 scripts/orchestrator_state.py complete_stage --op-dir custom/softmax \\
      --actor pypto-pro-op-orchestrator --stage 1
exit codes: 0 done, 2 refused / usage / corrupt state file (message names file, guard and fix).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.contract import protocol
from perftune.orchestrate import stage_gate, state
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.errors import FAILURE_CATEGORIES, run_cli

STAGE, REASON = ("--stage", dict(type=int, required=True)), ("--reason", dict(required=True))
MODULE = ("--module", dict(type=int, required=True, help="module number k (suffix 1..k)"))
CATEGORY = ("--failure-category", dict(choices=state.ROLLBACK_CATEGORIES))
ACTIONS = {
    "init": ("start a new run", [("--operator", dict(dest="operator_name", help="default: op dir name"))]),
    "start_stage": ("start a pending/failed stage whose predecessor is completed", [STAGE]),
    "complete_stage": ("complete the current stage (its check file says PASS for the current files)", [STAGE]),
    "fail_stage": ("mark the current stage failed", [STAGE, REASON]),
    "record_artifact_hash": ("hash SPEC.md/<op>_golden.py/DESIGN.md",
                             [("--name", dict(required=True, choices=sorted(state.ARTIFACT_OWNER)))]),
    "rollback_to_stage": ("roll back below the current stage (never once Stage 5 started)",
                          [("--target-stage", dict(type=int, required=True)), REASON, CATEGORY]),
    "plan_stage4": ("set stage4_path (L1 if fusion) and the module plan", [
        ("--module-count", dict(type=int, required=True)),
        ("--is-fusion", dict(required=True, choices=("true", "false"))),
        ("--max-cycles", dict(type=int, default=state.DEFAULT_MAX_CYCLES, help="per-module cap"))]),
    "start_module": ("start module k (earlier modules verified)", [MODULE]),
    "submit_for_verify": ("hand module k to module-check", [MODULE]),
    "complete_module": ("record the module-check PASS of module k", [MODULE]),
    "fail_module": ("record a module-check FAIL (blocked at the cap)", [
        MODULE, ("--failure-category", dict(required=True, choices=FAILURE_CATEGORIES)),
        ("--failing-module-boundary", dict(type=int)), ("--last-error", dict(help="raw error text"))]),
    "confirm_stage5_entry": ("record the Stage 5 entry confirmation and frozen target (OR-5, OR-6)", [
        ("--authorization", dict(required=True, choices=stage_gate.AUTHORIZATIONS,
                                 help="requested: the user asked for perf work; autonomous: the user "
                                      "authorised autonomous execution; answered: the user said yes when asked")),
        ("--evidence", dict(required=True, help="the user's words, verbatim")),
        ("--target-case-ids", dict(nargs="+", required=True)),
        ("--selection-mode", dict(required=True, choices=protocol.SELECTION_MODES))]),
    "show": ("print the state as a table (read-only)", []),
}


def build_parser():
    parser = parser_from_doc(__doc__, "orchestrator_state.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (text, flags) in ACTIONS.items():
        command = sub.add_parser(name, help=text)
        add_op_dir(command)
        command.add_argument("--actor", required=name != "show", help=f"must be {state.ACTOR}")
        for flag, kwargs in flags:
            command.add_argument(flag, **kwargs)
        add_json_flag(command)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    skip = ("command", "op_dir", "actor", "json")
    params = {k: (v == "true" if k == "is_fusion" else v) for k, v in vars(args).items() if k not in skip}
    if args.command == "show":
        obj, message = state.load(args.op_dir, required=True), "show"
    else:
        obj, message = state.apply(args.op_dir, args.command, args.actor, params)
    text = state.render_table(obj) if args.command == "show" else f"{args.command}: {message}"
    print(fsio.dumps({"action": args.command, "state": obj, "text": text}) if args.json else text,
          end="" if args.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
