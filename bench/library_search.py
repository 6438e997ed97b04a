# License: GPLv3 Copyright: the Book AI developers
"""Search by meaning over 50,000 books in pure Python (issue 30: median query under 200 ms on this
2-core machine, the index under 100 MB in memory), against a brute-force float scan of the same
vectors measured in the same run: its time per query, and its top 10 as the truth for recall@10.

The library is synthetic: 50,000 vectors of 384 dimensions (what small sentence-embedding models
make) with cluster structure, so that a nearest neighbour means something: 500 random topic
centres, each book a centre plus noise as long as the centre (two books of one topic have a
cosine of about 0.5, of two topics about 0). The 200 queries are random books moved by a little
noise (a cosine of about 0.9 with their book), as a question about a book is near it.

Measured: the index's build (library_search.vectors.BookVectors.put for every book), its file
(written, its size, read back), its memory as read back from the file (tracemalloc: every block
allocated while it is read and still held after), the float vectors' memory for comparison; per
query the index's search and the brute-force scan (`sum(map(operator.mul, q, v))` over every
book's 32-bit floats, as array('f')); recall@10 of the index against the scan, at several numbers
of candidates scored exactly (CANDIDATES is the default); and, on the first 20 queries, recall@10
of an exact scan of the index's bytes, which shows what quantising to bytes alone loses.

Run with: flock /work/test.lock sudo python3 bench/run.py library_search [--books N --queries N]

Figures of one run (bookworm host, calibre 6.13, Python 3.11, 2 busy cores, 2026-12-06):
FIGURES
"""

import argparse
import gc
import math
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from array import array
from operator import mul

from calibre_plugins.bookai.library_search.vectors import CANDIDATES, BookVectors, Stamp, VectorFiles

DIM = 384
TOPICS = 500
SEED = 30


def unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def library(books: int, dim: int, rng: random.Random) -> list[list[float]]:
    """books vectors of dim dimensions around TOPICS random centres, each of length 1."""
    sigma = 1 / math.sqrt(dim)
    centres = [unit([rng.gauss(0, 1) for _d in range(dim)]) for _t in range(TOPICS)]
    out = []
    for _b in range(books):
        c = centres[rng.randrange(TOPICS)]
        out.append(unit([x + rng.gauss(0, sigma) for x in c]))
    return out


def brute_force(q: list[float], floats: list[array], k: int) -> list[int]:
    """The k best books by an exact float dot product with every book: the baseline."""
    scores = [sum(map(mul, q, v)) for v in floats]
    return sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:k]


def recall(found: list[int], truth: list[int]) -> float:
    return len(set(found) & set(truth)) / len(truth)


def ms(seconds: float) -> str:
    return f'{seconds * 1000:.1f} ms'


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--books', type=int, default=50_000)
    ap.add_argument('--queries', type=int, default=200)
    a = ap.parse_args()
    rng = random.Random(SEED)
    t0 = time.perf_counter()
    vectors = library(a.books, DIM, rng)
    queries = []
    for _q in range(a.queries):
        book = vectors[rng.randrange(a.books)]
        queries.append(unit([x + rng.gauss(0, 0.5 / math.sqrt(DIM)) for x in book]))
    print(f'{a.books:,} books of {DIM} dimensions around {TOPICS} topics, {a.queries} queries '
          f'(made in {time.perf_counter() - t0:.1f} s)')

    gc.collect()
    tracemalloc.start()
    floats = [array('f', v) for v in vectors]
    float_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()

    t0 = time.perf_counter()
    index = BookVectors(DIM, 'bench/minilm')
    for book_id, v in enumerate(vectors, 1):
        index.put(book_id, v, Stamp(1_700_000_000.0 + book_id, f'{book_id:032x}'))
    build = time.perf_counter() - t0
    folder = tempfile.mkdtemp()
    files = VectorFiles(folder)
    t0 = time.perf_counter()
    files.write('lib', index)
    written = time.perf_counter() - t0
    size = os.path.getsize(files.file_of('lib'))
    del index
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    index = files.read('lib')
    loaded = time.perf_counter() - t0
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert index is not None and len(index) == a.books
    print(f'index built in {build:.1f} s ({a.books / build:,.0f} books/s); its file {size / 2**20:.1f} MB, '
          f'written in {written:.2f} s, read back in {loaded:.2f} s')
    print(f'memory: the index as read back holds {held / 2**20:.1f} MB (peak while reading '
          f'{peak / 2**20:.1f} MB); the same vectors as 32-bit floats (the brute-force scan\'s) '
          f'{float_bytes / 2**20:.1f} MB, {held / float_bytes:.2f}x')

    truth, brute_times = [], []
    for q in queries:
        t0 = time.perf_counter()
        truth.append(brute_force(q, floats, 10))
        brute_times.append(time.perf_counter() - t0)
    brute_median = statistics.median(brute_times)
    print(f'brute-force float scan: median {ms(brute_median)}, p95 {ms(percentile(brute_times, 95))} a query')

    print('index search (k=10); recall@10 against the brute-force scan:')
    for candidates in sorted({100, 200, CANDIDATES, 1000}):
        times, recalls = [], []
        for q, t in zip(queries, truth):
            t0 = time.perf_counter()
            found = index.search(q, 10, candidates=candidates)
            times.append(time.perf_counter() - t0)
            recalls.append(recall([b - 1 for b, _s in found], t))
        median = statistics.median(times)
        print(f'  {candidates:5} candidates{" (the default)" if candidates == CANDIDATES else "":14}: median '
              f'{ms(median)} ({median / brute_median:.3f}x the scan, {brute_median / median:.0f} times faster), '
              f'p95 {ms(percentile(times, 95))}; recall@10 {statistics.mean(recalls):.3f} '
              f'(worst query {min(recalls):.1f})')
    allowed = set(range(1, a.books + 1, 5))
    times = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q, 10, allowed=allowed)
        times.append(time.perf_counter() - t0)
    print(f'  restricted to {len(allowed):,} books (a virtual library): median {ms(statistics.median(times))}, '
          f'p95 {ms(percentile(times, 95))}')
    exact = [recall([b - 1 for b, _s in index.exact_search(q, 10)], t) for q, t in zip(queries[:20], truth[:20])]
    print(f'an exact scan of the index\'s bytes (no signatures), 20 queries: recall@10 {statistics.mean(exact):.3f}')
    return 0


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


if __name__ == '__main__':
    sys.exit(main())
