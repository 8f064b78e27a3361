#!/usr/bin/env python3
"""A declared parameter search as one ledger item (issue 39; docs/ledger.md "Searches").

declare freezes the search on an open item before any point is measured: the parameters (each a
top-level constant NAME or a keyword default FUNCTION.KEYWORD of test_<op>.py, with explicit
values v1,v2,... or a range low:high:step), the Optuna sampler (grid | tpe) and seed, the budget
(points measured; grid: default the whole space) and the batch (points asked together); the code
in place must be the current best, the base of every point. run measures the frozen search once:
each point's code is built, checked by the frozen correctness gate and screened paired with the
base (pypto-sim: exact cycles; cpu: the paired quick protocol), the points side by side over the
cores (--engine local) or on Dask distributed (--engine dask; a LocalCluster, or --scheduler ADDR);
the study lives in SQLite under docs/perf/search/<item>/ or at --storage URL. Every point is
archived under docs/perf/search/<item>/points/; the record search.json names the ranking, the
finalists and the best point, whose code is left in place for the normal steps (correctness, quick,
paired formal round, acceptance); the item's close note cites the record.

usage:
  tune.py declare --op-dir DIR --item ID --param NAME=VALUES [--param ...] [--sampler grid|tpe]
      [--seed N] [--budget N] [--batch N] --hypothesis TEXT [--metric TEXT] [--json]
  tune.py run --op-dir DIR --item ID [--engine local|dask] [--workers N] [--storage URL]
      [--scheduler ADDR] [--json]

example:
  python3 scripts/tune.py declare --op-dir custom/softmax --item general-13 --param TILE_BYTES=8192,16384,32768 --hypothesis "tile size sets the task count"
  python3 scripts/tune.py run --op-dir custom/softmax --item general-13 --json

exit codes: 0 done, 2 usage/contract error (item closed, search already declared or measured, a
parameter naming no single literal), 3 environment error (optuna or dask not installed).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc
from perftune.decide import search, tune
from perftune.errors import run_cli
from perftune.measure import evidence


def build_parser():
    parser = parser_from_doc(__doc__, "tune.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("declare", "run"):
        command = sub.add_parser(name, help=f"{name} (see the module help)")
        command.add_argument("--op-dir", required=True, help="operator directory")
        command.add_argument("--item", required=True, help="the ledger item of the search")
        add_json_flag(command)
    declare = sub.choices["declare"]
    declare.add_argument("--param", action="append", required=True, help="NAME=v1,v2,... or NAME=low:high:step")
    declare.add_argument("--sampler", choices=search.SAMPLERS, default="grid", help="Optuna sampler (default grid)")
    declare.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0)")
    declare.add_argument("--budget", type=int, help="points measured (grid: default the whole space)")
    declare.add_argument("--batch", type=int, default=search.DEFAULT_BATCH, help="points asked together")
    declare.add_argument("--hypothesis", required=True, help="mechanism; change; risk; stop condition")
    declare.add_argument("--metric", default="", help="the expected metric")
    declare.add_argument("--actor", default="agent", help="who declares (ledger history)")
    run = sub.choices["run"]
    run.add_argument("--engine", choices=tune.ENGINES, default="local", help="local pool (default) or dask")
    run.add_argument("--workers", type=int, help="points measured side by side (default: the cores)")
    run.add_argument("--storage", help="Optuna storage URL shared by hosts (default SQLite in the search folder)")
    run.add_argument("--scheduler", help="--engine dask: a running scheduler's address (default a LocalCluster)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "declare":
        block = tune.declare_file(args.op_dir, args.item, args.param, sampler_name=args.sampler, seed=args.seed,
                                  budget=args.budget, batch=args.batch, hypothesis=args.hypothesis,
                                  metric=args.metric, at=evidence.utc_now(), actor=args.actor)
        out = {"item_id": args.item, "search": block, "points": search.space_size(block)}
        text = f"{args.item}: search frozen (sha256 {block['sha256'][:12]}), {out['points']} points, budget {block['budget']}"
    else:
        say = (lambda line: print(line, file=sys.stderr)) if args.json else print
        out = tune.run(args.op_dir, args.item, engine=args.engine, workers=args.workers, storage=args.storage,
                       scheduler=args.scheduler, progress=say)
        out["path"] = fsio.display_path(out["path"], args.op_dir)
        best = out.get("best")
        text = (f"{out['path']}: {len(out['points'])} points; best t_{best['trial']:03d} {best['values']} "
                f"(objective {best['objective']:.4f}), in place" if best else f"{out['path']}: no point passed")
    print(fsio.dumps(out) if args.json else text, end="" if args.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
