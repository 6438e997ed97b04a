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
of an exact scan of the index's 16-bit values, which shows what quantising them alone loses.

With --shared 0.8 every book is moved along one direction common to all (two books at random then
have a cosine of about 0.4, as real sentence embeddings do), and with --query-noise 1.5 a query is
as far from its book as the books of its topic are from each other (a cosine of about 0.55): the
hard case for signatures, where the exact top 10 is a close race among a topic's books.

Run with: sudo python3 bench/run.py library_search [-- --books N --queries N
--shared S --query-noise Q --candidates 200,500,2000]

Figures of two runs (bookworm host, calibre 6.13, Python 3.11 without math.sumprod, on 2 cores
shared with other work: a load of about 4.5, so times are high and vary; 2026-12-06):

    queries near their books (the defaults)
    index built in 17.8 s (2,804 books/s); its file 38.3 MB, written in 0.24 s, read back in 1.63 s
    memory: the index as read back holds 50.1 MB (peak while reading 88.4 MB); the same vectors
      as 32-bit floats (the brute-force scan's) 77.5 MB, 0.65x
    brute-force float scan: median 759.1 ms, p95 1239.2 ms a query
      200 candidates: median 13.5 ms (0.018x the scan), p95 22.4 ms; recall@10 1.000
      500 candidates: median 21.2 ms (0.028x the scan), p95 60.7 ms; recall@10 1.000
     2000 candidates (the default): median 62.5 ms (0.082x the scan), p95 119.6 ms; recall@10 1.000
     4000 candidates: median 122.5 ms (0.161x the scan), p95 201.4 ms; recall@10 1.000
      restricted to 10,000 books (a virtual library): median 44.4 ms, p95 77.8 ms
    an exact scan of the 16-bit values, 20 queries: recall@10 1.000

    --shared 0.8 --query-noise 1.5 (a cosine of 0.39 between two books at random)
    index built in 10.2 s (4,884 books/s); its file 38.3 MB, read back in 1.03 s; memory 50.1 MB
    brute-force float scan: median 411.9 ms, p95 758.8 ms a query
      200 candidates: median 8.4 ms (0.021x the scan), p95 9.6 ms; recall@10 0.779 (worst query 0.2)
      500 candidates: median 13.5 ms (0.033x the scan), p95 24.5 ms; recall@10 0.877 (worst 0.3)
     2000 candidates (the default): median 36.5 ms (0.088x the scan), p95 61.2 ms; recall@10 0.959
       (worst 0.6)
     4000 candidates: median 72.6 ms (0.176x the scan), p95 110.5 ms; recall@10 0.982 (worst 0.7)
      restricted to 10,000 books: median 35.5 ms, p95 54.6 ms
    an exact scan of the 16-bit values, 20 queries: recall@10 1.000

The same near queries on the forky host (calibre 9.17, Python 3.14, whose math.sumprod scores in
C; the scan is still the map of operator.mul): index built in 12.5 s, read back in 1.95 s, 50.3 MB;
the scan median 805.4 ms; 200 candidates 7.8 ms, 500 9.8 ms, 2000 45.0 ms (p95 57.2 ms), 4000
42.7 ms (p95 78.4 ms), recall@10 1.000 at each; restricted to 10,000 books 20.9 ms.

Before, signed bytes (int8) in place of the 16-bit values: 30.6 MB in memory, a 20.0 MB file, but
recall@10 0.989 at 400 candidates and 0.980 for an exact scan of the bytes (near queries): ties
among a topic's nearest books came out in another order.
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


def library(books: int, dim: int, rng: random.Random, shared: float = 0.0) -> list[list[float]]:
    """books vectors of dim dimensions around TOPICS random centres, each of length 1; with shared,
    each moved that far along one direction common to all, as real embedding models' vectors are."""
    sigma = 1 / math.sqrt(dim)
    centres = [unit([rng.gauss(0, 1) for _d in range(dim)]) for _t in range(TOPICS)]
    common = unit([rng.gauss(0, 1) for _d in range(dim)])
    out = []
    for _b in range(books):
        c = centres[rng.randrange(TOPICS)]
        v = unit([x + rng.gauss(0, sigma) for x in c])
        out.append(unit([x + shared * m for x, m in zip(v, common)]) if shared else v)
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
    ap.add_argument('--shared', type=float, default=0.0, help='a direction common to every book, this long')
    ap.add_argument('--query-noise', type=float, default=0.5, help="a query's noise, as long against its book's")
    ap.add_argument('--candidates', default=f'200,500,{CANDIDATES},4000', help='numbers of candidates to measure')
    a = ap.parse_args()
    rng = random.Random(SEED)
    t0 = time.perf_counter()
    vectors = library(a.books, DIM, rng, a.shared)
    queries = []
    for _q in range(a.queries):
        book = vectors[rng.randrange(a.books)]
        queries.append(unit([x + rng.gauss(0, a.query_noise / math.sqrt(DIM)) for x in book]))
    pairs = [(rng.randrange(a.books), rng.randrange(a.books)) for _p in range(1000)]
    typical = statistics.mean(sum(map(mul, vectors[i], vectors[j])) for i, j in pairs)
    print(f'{a.books:,} books of {DIM} dimensions around {TOPICS} topics, {a.queries} queries '
          f'(made in {time.perf_counter() - t0:.1f} s); two books at random have a cosine of {typical:.2f}')

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
    for candidates in sorted({int(c) for c in a.candidates.split(',')}):
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
    print(f'an exact scan of the index\'s 16-bit values (no signatures), 20 queries: recall@10 '
          f'{statistics.mean(exact):.3f}')
    return 0


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


if __name__ == '__main__':
    sys.exit(main())
