#!/usr/bin/env python3
"""Docs search: SQLite FTS5 index (today) against the hand-written BM25 it replaced, in one run.

Two corpora: the plugin's references (whatever the tree holds) and a synthetic docs tree of
--synthetic-mb megabytes (markdown API pages with headings, code fences, API identifiers and
Chinese paragraphs, plus Python samples; seeded, so every run builds the same tree). For each
corpus and implementation it reports, with time.perf_counter:
- build: legacy = read + chunk + build the in-memory postings (done on every CLI call);
  fts5 cold = read + chunk + insert into a new cache file; fts5 warm = open the cache and check
  every file (nothing changed); fts5 refresh = the same after one file was edited;
- query latency median and max over a fixed query list (median of --repeats runs each);
- the top-3 files of each query from both, and how many top-1 results agree;
plus one end-to-end `python scripts/docs_search.py QUERY` call on a warm cache.

usage:
  bench_docs_search.py [--synthetic-mb MB] [--repeats N] [--out DIR] [--smoke] [--json]
example:
  python benchmarks/docs_search/bench_docs_search.py --synthetic-mb 50 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # benchmark entry point, not library code
sys.path.insert(0, str(Path(__file__).resolve().parent))

from legacy_bm25 import LegacyIndex  # noqa: E402
from perftune.orchestrate import docs_index  # noqa: E402

QUERIES = ("make_tile_group auto_mutex", "Task Duration op_summary exact op name", "rollback stage 5",
           "bootstrap confidence interval noise band", "wrapper boundary violation", "TILE_FWK_DEVICE_ID",
           "stage5_contract_blocked", "double buffer ping pong", "vf exp_sub reduce", "尾块 处理")
API = ("make_tile_group", "load_tile", "store_tile", "section_vector", "section_cube", "matmul_acc",
       "set_validshape", "get_block_idx", "vector_function", "exp_sub", "set_cross_core", "wait_cross_core")
WORDS = ("tile", "buffer", "vector", "cube", "mutex", "slot", "load", "store", "kernel", "core", "block",
         "shape", "dtype", "pipeline", "stage", "sync", "event", "layout", "fractal", "accumulate", "reduce",
         "row", "column", "tail", "mask", "register", "memory", "bandwidth", "latency", "overlap")
CJK = ("尾块", "处理", "切分", "双缓冲", "搬运", "计算", "流水", "同步", "矩阵", "向量", "性能", "调优")


def synthetic_tree(folder: Path, megabytes: float, seed: int = 42) -> int:
    """Write ~``megabytes`` of markdown and Python under ``folder``; returns the byte count."""
    rng = random.Random(seed)
    target, written, n = int(megabytes * 1024 * 1024), 0, 0
    while written < target:
        sub = folder / f"part{n // 100:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        if n % 5 == 4:
            text = "".join(f"def {rng.choice(API)}_{i}(x, y):\n    return pl.{rng.choice(API)}(x, y)  # "
                           f"{' '.join(rng.choices(WORDS, k=12))}\n\n" for i in range(300))
            path = sub / f"sample{n:05d}.py"
        else:
            parts = []
            for s in range(40):
                parts.append(f"## {rng.choice(WORDS).title()} {rng.choice(API)} {s}\n\n")
                parts.append(" ".join(rng.choices(WORDS, k=120)) + f" `{rng.choice(API)}`.\n\n")
                parts.append("".join(rng.choices(CJK, k=30)) + "。\n\n")
                parts.append(f"```python\npl.{rng.choice(API)}(tile, x, [i, j])\n```\n\n")
            text = f"# Page {n}\n\n" + "".join(parts)
            path = sub / f"page{n:05d}.md"
        path.write_text(text, encoding="utf-8")
        written += len(text.encode())
        n += 1
    return written


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1e3, result


def query_stats(search, repeats):
    per = {q: statistics.median(timed(lambda q=q: search(q))[0] for _ in range(repeats)) for q in QUERIES}
    return {"median_ms": round(statistics.median(per.values()), 3), "max_ms": round(max(per.values()), 3),
            "per_query_ms": {q: round(v, 3) for q, v in per.items()}}


def measure(roots, cache: Path, repeats: int) -> dict:
    legacy_ms, legacy = timed(lambda: LegacyIndex(docs_index.load_chunks(roots)))
    cold_ms, (fts, stats) = timed(lambda: docs_index.open_index(roots, cache))
    warm_ms, _ = timed(lambda: docs_index.open_index(roots, cache))
    first = next(docs_index.files_of(roots[0]))
    first.write_text(first.read_text(encoding="utf-8") + "\n## Edited\nmake_tile_group edited\n", encoding="utf-8")
    refresh_ms, (_, refreshed) = timed(lambda: docs_index.open_index(roots, cache))
    fts, _ = docs_index.open_index(roots, cache)
    legacy = LegacyIndex(docs_index.load_chunks(roots))
    tops = {q: {"legacy": [f"{f}:{ln}" for f, ln, _ in legacy.search(q, 3)],
                "fts5": [f"{h.file}:{h.line}" for h in fts.search(q, 3)]} for q in QUERIES}
    return {
        "files": stats["files"], "chunks": fts.size,
        "bytes": sum(p.stat().st_size for r in roots for p in docs_index.files_of(r)),
        "cache_bytes": Path(stats["cache"]).stat().st_size if stats["cache"] else None,
        "build_ms": {"legacy_every_call": round(legacy_ms, 1), "fts5_cold": round(cold_ms, 1),
                     "fts5_warm_no_change": round(warm_ms, 1), "fts5_refresh_one_file": round(refresh_ms, 1)},
        "refresh_reindexed": refreshed["reindexed"],
        "query": {"legacy": query_stats(lambda q: legacy.search(q, 10), repeats),
                  "fts5": query_stats(lambda q: fts.search(q, 10), repeats)},
        "top1_agree": sum(t["legacy"][:1] == t["fts5"][:1] for t in tops.values()), "queries": len(QUERIES),
        "top3": tops,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic-mb", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", help="write docs_search.json here")
    parser.add_argument("--smoke", action="store_true", help="1 MB tree, 3 repeats")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.synthetic_mb, args.repeats = 1.0, 3
    result = {"sqlite": docs_index.sqlite3.sqlite_version, "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        refs = Path(tmp) / "refs"
        for r in docs_index.default_roots(ROOT, None):          # a copy: the refresh step edits a file
            shutil.copytree(r.path, refs / r.path.relative_to(ROOT))
        result["plugin_references"] = measure(docs_index.explicit_roots([str(refs)]), Path(tmp) / "c1", args.repeats)
        synth = Path(tmp) / "synthetic"
        result["synthetic_bytes_written"] = synthetic_tree(synth, args.synthetic_mb)
        result[f"synthetic_{args.synthetic_mb:g}mb"] = measure(docs_index.explicit_roots([str(synth)]),
                                                              Path(tmp) / "c2", max(3, args.repeats // 3))
        env = {**os.environ, docs_index.CACHE_ENV: str(Path(tmp) / "c3")}
        cli = [sys.executable, str(ROOT / "scripts" / "docs_search.py"), QUERIES[0]]
        subprocess.run(cli, env=env, capture_output=True, check=True)     # warm the cache
        ms, proc = timed(lambda: subprocess.run(cli, env=env, capture_output=True, text=True))
        result["cli_end_to_end_warm_ms"] = round(ms, 1)
        result["cli_returncode"] = proc.returncode
    text = json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "docs_search.json").write_text(text, encoding="utf-8")
    if args.json:
        print(text, end="")
        return 0
    for name, m in result.items():
        if isinstance(m, dict) and "build_ms" in m:
            b, q = m["build_ms"], m["query"]
            print(f"{name}: {m['files']} files, {m['bytes'] / 1e6:.1f} MB, {m['chunks']} chunks; build legacy "
                  f"{b['legacy_every_call']} ms vs fts5 cold {b['fts5_cold']} / warm {b['fts5_warm_no_change']} / "
                  f"refresh {b['fts5_refresh_one_file']} ms; query median legacy {q['legacy']['median_ms']} ms vs "
                  f"fts5 {q['fts5']['median_ms']} ms (max {q['legacy']['max_ms']} / {q['fts5']['max_ms']}); "
                  f"top-1 agree {m['top1_agree']}/{m['queries']}")
    print(f"CLI end to end on a warm cache: {result['cli_end_to_end_warm_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
