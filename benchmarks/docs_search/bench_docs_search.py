#!/usr/bin/env python3
"""Time docs_search over the plugin's own references (and a scaled copy), in milliseconds.

Measures, with time.perf_counter, the median of --repeats runs of: reading and chunking the corpus,
building the BM25 index, and answering each of a fixed list of queries; plus one end-to-end CLI
call (`python scripts/docs_search.py QUERY`, interpreter start included). The scaled corpus is the
plugin references copied --scale times into a temporary folder, to show how the index grows.

usage:
  bench_docs_search.py [--repeats N] [--scale K] [--json]
example:
  python benchmarks/docs_search/bench_docs_search.py --repeats 20 --scale 20
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # benchmark entry point, not library code

from perftune.orchestrate import docs_index  # noqa: E402

QUERIES = ("make_tile_group auto_mutex", "Task Duration op_summary exact op name", "rollback stage 5",
           "bootstrap confidence interval noise band", "wrapper boundary violation", "TILE_FWK_DEVICE_ID",
           "stage5_contract_blocked", "PERFORMANCE_CASES.json frozen")


def median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), result


def measure(roots, repeats):
    load_ms, chunks = median_ms(lambda: docs_index.load_chunks(roots), repeats)
    build_ms, index = median_ms(lambda: docs_index.Index(chunks), repeats)
    query_ms = {q: round(median_ms(lambda q=q: index.search(q, 10), repeats)[0], 3) for q in QUERIES}
    files = len({c.path for c in chunks})
    return {"files": files, "chunks": len(chunks), "terms": len(index.postings), "load_ms": round(load_ms, 3),
            "build_ms": round(build_ms, 3), "query_ms_median": round(statistics.median(query_ms.values()), 3),
            "query_ms_max": max(query_ms.values()), "query_ms": query_ms}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    roots = docs_index.default_roots(ROOT, None)
    result = {"roots": [str(r.path.relative_to(ROOT)) for r in roots], "repeats": args.repeats,
              "plugin_references": measure(roots, args.repeats)}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.scale):
            for r in roots:
                shutil.copytree(r.path, Path(tmp) / f"copy{k:03d}" / r.path.relative_to(ROOT))
        result[f"plugin_references_x{args.scale}"] = measure(docs_index.explicit_roots([tmp]), max(3, args.repeats // 4))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_search.py"), QUERIES[0]],
                          capture_output=True, text=True)
    result["cli_end_to_end_ms"] = round((time.perf_counter() - start) * 1e3, 1)
    result["cli_returncode"] = proc.returncode
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return
    for name in ("plugin_references", f"plugin_references_x{args.scale}"):
        m = result[name]
        print(f"{name}: {m['files']} files, {m['chunks']} chunks, {m['terms']} terms; load {m['load_ms']} ms, "
              f"index {m['build_ms']} ms, query median {m['query_ms_median']} ms (max {m['query_ms_max']} ms)")
    print(f"CLI end to end (interpreter start + imports + index + query): {result['cli_end_to_end_ms']} ms")


if __name__ == "__main__":
    main()
