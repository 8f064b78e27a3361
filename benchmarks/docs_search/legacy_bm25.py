"""The hand-written BM25 index that docs_search used before SQLite FTS5 (issue 21): kept only as the
benchmark's baseline. Same tokens as ``perftune.orchestrate.docs_index.tokenize``; k1 = 1.2,
b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), heading counted twice, scores summed over the
distinct query tokens. Not used by any script.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from perftune.orchestrate.docs_index import tokenize

K1, B, HEADING_WEIGHT = 1.2, 0.75, 2


class LegacyIndex:
    """In-memory postings built from chunks; rebuilt on every run."""

    def __init__(self, chunks) -> None:
        self.chunks = list(chunks)
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for i, chunk in enumerate(self.chunks):
            tokens = tokenize(chunk.heading) * HEADING_WEIGHT + tokenize("\n".join(chunk.lines))
            lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                postings[term].append((i, count))
        self.doc_len = np.asarray(lengths, dtype=float)
        self.avgdl = float(self.doc_len.mean()) if lengths and self.doc_len.mean() > 0 else 1.0
        n = len(self.chunks)
        self.postings = {t: (np.fromiter((i for i, _ in p), dtype=np.int64, count=len(p)),
                             np.fromiter((c for _, c in p), dtype=float, count=len(p))) for t, p in postings.items()}
        self.idf = {t: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}

    def search(self, query: str, limit: int = 10) -> list[tuple[str, int, float]]:
        scores = np.zeros(len(self.chunks))
        norm = K1 * (1.0 - B + B * self.doc_len / self.avgdl)
        for term in dict.fromkeys(tokenize(query)):
            if term in self.postings:
                ids, tf = self.postings[term]
                scores[ids] += self.idf[term] * tf * (K1 + 1.0) / (tf + norm[ids])
        found = [int(i) for i in np.nonzero(scores > 0)[0]]
        found.sort(key=lambda i: (-round(float(scores[i]), 9), self.chunks[i].root, self.chunks[i].file,
                                  self.chunks[i].line))
        return [(self.chunks[i].file, self.chunks[i].line, float(scores[i])) for i in found[:limit]]
