#!/usr/bin/env python3
"""Ranked keyword search (SQLite FTS5 bm25) over the plugin references and the local PyPTO docs cache.

Default corpus: the plugin's references/ and skills/*/references/, plus (when PYPTO_DEVKIT_DIR is
set) the cache's docs/pypto_pro/api/, guides and pro_ops/ samples. `--root DIR ...` searches those
folders instead. Markdown is chunked by heading, Python by top-level def/class; each result has
file, heading, line (of the heading), snippet_line, snippet and score. Equal scores are ordered by
root, file and line. The index persists in $PERFTUNE_CACHE_DIR (default ~/.cache/pypto-perftune/
docs-index, never the plugin folder) and is refreshed by file hash on every call. Ranking rules,
cache and READY: scripts/perftune/orchestrate/docs_index.py.

`--check` reports whether the PYPTO_DEVKIT_DIR cache is READY (exit 0) or NEED_PROVISION (exit 4,
with what is missing); provisioning is the docs skill's job, never this script's.

usage:
  docs_search.py QUERY [QUERY ...] [--limit N] [--root DIR ...] [--json]
  docs_search.py --check [--json]
example:
  python3 scripts/docs_search.py make_tile_group auto_mutex --limit 5
exit codes: 0 results printed (possibly none), 2 usage error, 4 cache needs provisioning.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict

from perftune.orchestrate import docs_index
from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.errors import ContractError, run_cli

EXIT_NEED_PROVISION = 4


def build_parser():
    parser = parser_from_doc(__doc__, "docs_search.py")
    parser.add_argument("query", nargs="*", help="search words (joined with spaces)")
    parser.add_argument("--limit", type=int, default=10, help="maximum results (default 10)")
    parser.add_argument("--root", nargs="+", action="extend", metavar="DIR", type=path_arg, help="search these folders only")
    parser.add_argument("--check", action="store_true", help="READY / NEED_PROVISION for PYPTO_DEVKIT_DIR")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    devkit = os.environ.get(docs_index.DEVKIT_ENV)
    if args.check:
        status = docs_index.check_cache(devkit)
        print(fsio.dumps(status) if args.json else "\n".join([status["status"], *status["missing"]]),
              end="" if args.json else "\n")
        return 0 if status["status"] == "READY" else EXIT_NEED_PROVISION
    query = " ".join(args.query).strip()
    if not query or args.limit < 1:
        raise ContractError("docs_search.py", "arguments", "need a non-empty QUERY and --limit >= 1",
                            "see docs_search.py --help")
    roots = docs_index.explicit_roots(args.root) if args.root else docs_index.default_roots(devkit_dir=devkit)
    index, cache = docs_index.open_index(roots)
    hits = index.search(query, args.limit)
    if args.json:
        print(fsio.dumps({"query": query, "roots": [str(r.path) for r in roots], "chunks": index.size,
                          "index": {"cache": cache["cache"], "files": cache["files"]}, "results": [asdict(h) for h in hits]}), end="")
        return 0
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank}. {hit.file}:{hit.line}  [{hit.heading}]  score {hit.score:.3f}")
        print(f"   {hit.snippet_line}: {hit.snippet}")
    if not hits:
        print(f"no results for {query!r} in {index.size} chunks")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
