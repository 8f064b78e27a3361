#!/usr/bin/env python3
"""Integrity check of the knowledge base shipped with the perf-tune skill, and its API symbol list.

`check`: INDEX <-> files, unique ids, anchors, lifecycles, required sections and gates,
every pl.*/vf.* symbol of cards and templates in the committed symbol list, every citation listed
in the committed source registry, templates parse as Python, one active card per family. Rules:
scripts/perftune/knowledge/integrity.py; format: docs/knowledge-base.md.
`symbols`: rebuild the symbol list from a checkout of the public PyPTO-Pro samples (hicann/pypto).

usage:
  kb_check.py check [--references DIR] [--json]
  kb_check.py symbols --samples DIR --commit SHA [--repository NAME] [--out FILE]
example:
  python3 scripts/kb_check.py check --json
exit codes: 0 clean, 1 findings, 2 usage/contract error (missing folder, unreadable provenance).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import ContractError, run_cli
from perftune.knowledge import integrity, symbols

REFERENCES = Path(__file__).resolve().parents[1] / "skills" / "pypto-pro-op-perf-tune" / "references"
SAMPLE_GLOBS = ("docs/zh/pypto_pro/**/*.md", "python/tests/st/pypto_pro/**/*.py")


def build_parser():
    parser = parser_from_doc(__doc__, "kb_check.py")
    sub = parser.add_subparsers(dest="command", required=True)
    chk = sub.add_parser("check", help="check the references folder")
    chk.add_argument("--references", default=str(REFERENCES), type=path_arg, help="the skill's references folder")
    add_json_flag(chk)
    sym = sub.add_parser("symbols", help="extract the API symbol list from public samples")
    sym.add_argument("--samples", required=True, type=path_arg, help="checkout of hicann/pypto (docs/ and python/tests/)")
    sym.add_argument("--commit", required=True, help="commit the checkout is at (recorded)")
    sym.add_argument("--repository", default="hicann/pypto")
    sym.add_argument("--out", default=str(REFERENCES / integrity.SYMBOLS_FILE), type=path_arg)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "symbols":
        root = Path(args.samples)
        if not root.is_dir():
            raise ContractError(root, "--samples", "is not a directory", "pass a checkout of hicann/pypto")
        obj = symbols.extract_tree(root, SAMPLE_GLOBS, repository=args.repository, commit=args.commit)
        fsio.write_json(args.out, obj)
        print(f"{len(obj['symbols'])} symbols from {obj['files_scanned']} files -> {args.out}")
        return 0
    report = integrity.check(args.references)
    if args.json:
        print(fsio.dumps(report), end="")
    else:
        counts = ", ".join(f"{k} {v['active']} active/{v['all']}" for k, v in report["counts"].items())
        print(f"{'OK' if report['ok'] else 'FINDINGS'}: {counts}; {report['symbols_known']} API symbols, "
              f"{report['sources_known']} sources known")
        for f in report["findings"]:
            print(f"  {f['code']}: {f['file']}: {f['message']}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
