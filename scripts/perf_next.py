#!/usr/bin/env python3
"""Print the next Stage 5 step of SKILL.md for an operator folder, every value filled from the evidence.

Reads the evidence state (PERFORMANCE_CASES.json, correctness runs, rounds, quick screens, ledger,
candidates, selection, confirm log, performance.json, the final files) and prints the next step:
its SKILL key, why, and the exact command from SKILL.md's `bash step=<key>` block with every value
the evidence fixes; a placeholder left in UPPER_CASE is the agent's judgement, listed under `needs`
with the allowed values. At `done` the verdict of docs/perf/stage5_check.json is re-derived from the files
(perftune/verify/rederive.py): a PASS the files do not re-derive gives `verify` again. Run it after every
step (the demo runs on it). Decision logic:
perftune/decide/next_step.py (docs/demo.md).

usage:
  perf_next.py --op-dir DIR [--overlap ITEM] [--json]

example:
  python3 scripts/perf_next.py --op-dir custom/softmax

exit codes: 0 a next step (or `done`), 2 usage/contract error (unreadable evidence), 3 environment.
"""

from __future__ import annotations

import shlex
import sys

from perftune import fsio
from perftune.argv import add_json_flag, add_op_dir, parser_from_doc
from perftune.decide import next_step
from perftune.demo import skill as skill_mod
from perftune.errors import run_cli
from perftune.verify import rederive


def render(key: str, values: dict, needs: dict, op_dir: str, skill: skill_mod.Skill) -> str | None:
    """The step's command, filled; None for a step without a command (edit, stop, done)."""
    if key not in skill.commands:
        return None
    template = skill.command(key)
    filled = skill_mod.step_values({**{name: name for name in needs}, **values}, {}, op_dir)
    argv = skill_mod.fill(template, filled, skill.path, key)
    return shlex.join(argv)


def build_parser():
    parser = parser_from_doc(__doc__, "perf_next.py")
    add_op_dir(parser)
    parser.add_argument("--overlap", metavar="ITEM", help="your judgement: the next preset item is the experiment "
                        "of the closed item ITEM; prints its close_item with ITEM's status and evidence")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    out = next_step.next_steps(args.op_dir, overlap=args.overlap)
    if out["steps"][0]["key"] == "done":   # a verdict file is a claim: re-derived (issue 35 item 7)
        out["steps"][0] = rederive.done_step(args.op_dir, out["steps"][0])
    skill = skill_mod.load()
    for st in out["steps"]:
        st["command"] = render(st["key"], st["values"], st["needs"], args.op_dir, skill)
    if args.json:
        print(fsio.dumps(out), end="")
        return 0
    if len(out["steps"]) > 1:
        print("run these in order:" if out["mode"] == "sequence" else "choose one of:")
    for st in out["steps"]:
        print(f"next: {st['key']} - {st['why']}")
        if st["command"]:
            print(f"  {st['command']}")
        for name, what in st["needs"].items():
            print(f"  {name}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
