# License: GPLv3 Copyright: the Book AI developers
"""The library's search by meaning on a real calibre library of 50,000 books (issue 30): the library
made through calibre's API, the index built and kept up to date, and searched, each against a
baseline measured in the same run.

1. The library: 50,000 books of metadata only (tests/helpers/meaning_library.py filler_books(): a
   title, an author, tags, a publisher, a description; a few in series), made with calibre's own
   create_book_entry() in one SQLite transaction, against the same done a book at a time as
   calibre's add does (a commit for every statement), measured on BOOKS_PLAIN books. It is kept
   in build/bench-library-50k-calibre<version>/ and used again by the next run (delete it to make
   it again).
2. The index's build, with the real embedding model (all-MiniLM-L6-v2 in llama-server, 2 threads):
   on a sample of --sample books (every 25th), building.update_index() against the embeddings
   server alone on the same entries' texts, 32 a request as update_index() sends them (before and
   after, the mean): books/s, and the index's overhead as a ratio. Embedding all 50,000 with the
   real model would take about 50,000 / that rate here.
3. The other books' vectors are NOT the model's: each is a sample book's real vector (chosen at
   random, seeded) moved by random noise as long as 0.75 of it (a cosine of about 0.8 with it),
   so the 50,000 have the real model's geometry around 2,000 real points. With their calibre
   times and text digests, they make the index of the whole library, written as update_index()
   writes it (vectors.VectorFiles).
4. The incremental update: 10 books' tags changed in calibre, then update_index() on the 50,000:
   its time, and that it embedded exactly 10, against plan() alone (reading calibre's times of
   50,000 books and the index file, and comparing: what every update does first) and against
   building the whole index at the sample's rate.
5. The search: finding.search() over the 50,000 on the real calibre library, each query embedded
   by the real model, with its whys (the parts of the finding.EXPLAINED best books' entries embedded and
   compared: one more request) and calibre's reads: its median time; the index's search alone
   (vectors.BookVectors.search, the query vector given); the index's memory as read from its file
   (tracemalloc); recall@10 of finding.search() against a brute-force scan of the same vectors
   as 32-bit floats (sum(map(mul)) over every book), for QUERIES written about the fillers' themes.
   Targets: median query under 200 ms, the index under 100 MB.

With --all-real, every book is embedded by the real model instead (about 11 minutes here the
first time; the vectors are kept beside the library, by their texts' digests, for the next run).

Run with: sudo python3 bench/run.py library_50k [-- --books N --sample N --all-real]

Figures (2026-12-06, bookworm host: calibre 6.13, Python 3.11, on this project's 2-core machine,
all-MiniLM-L6-v2 F16 in llama-server with 2 threads):

1. the library, 50,000 books: 191.6 s in one transaction, 261 books/s; a commit at a time 192
   books/s (1,000 books, 5.2 s): 1.4x faster in one. (3,000 books in one: 784 books/s, 4.2x:
   calibre's create_book_entry() gets slower as the library grows, whatever the commits.)

                                          derived (first run)      --all-real (second run)
2. build on 2,000 books, real model       26.6 s, 75.1 books/s     27.5 s, 72.8 books/s
   the embeddings server alone            26.5 s, 75.5 books/s     25.6 s, 78.0 books/s
   the index's overhead                   1.007x                   1.071x
   all 50,000 at that rate                11 minutes               645 s measured
3. real / derived vectors                 2,000 / 48,000           50,000 / 0
   entries of 50,000 read from calibre    2.9 s                    2.5 s
   the index made and written             5.6 s                    5.4 s
4. 10 books changed: update_index()       0.64 s, embedded 10      0.59 s, embedded 10
   plan() alone (the full scan)           0.27 s (update 2.35x)    0.23 s (update 2.58x)
   against the whole build                0.0010x                  0.0009x
5. finding.search(), 20 queries: median   239.2 ms (max 264.6)     225.7 ms (max 2061.1, one query)
   the query's embedding alone            4.2 ms                   3.9 ms
   the whys alone (finding.explained)     196.2 ms                 182.9 ms
   the index's search alone               33.1 ms (max 40.8)       29.5 ms (max 35.7)
   the brute-force float scan             339.3 ms (10x)           308.0 ms (10x)
   recall@10 against the scan             0.965 (worst 0.8)        0.995 (worst 0.9)
   the index's memory, read from file     50.1 MB (peak 88.4 MB)   50.1 MB (peak 88.4 MB)

The index's search meets issue 30's targets (about 30 ms a query, 50 MB), and so does the update
after 10 changes (10 embedded, in about 2.5 times the scan every update makes first). The whole
finding.search() did not at first: a median of 226 ms, of which the whys took about 180 ms, as
explained() embedded every part of the 10 best books' entries (about 60 texts) in one more
request. Now the model explains the 5 best (finding.EXPLAINED) and the others say the part that
shares a word with the search. Measured again (same day, --all-real, 50,000 real vectors):

   finding.search(), 20 queries: median 145.1 ms, max 161.9 ms (the target: under 200 ms)
   the index's search alone 34.1 ms; a brute-force float scan 360.3 ms (11x)
   recall@10 against the scan 0.995 (worst query 0.9); the index 50.1 MB (peak 88.4 MB)
   10 books changed: update_index() 0.65 s, embedded exactly 10; plan() alone 0.25 s

On the other hosts (same day, 2,000 real vectors and 48,000 derived; noai used the library forky's
run made, the same calibre):

   host                  library made   finding.search() median   index alone   recall@10   memory
   forky, calibre 9.17   212.8 s        100.1 ms                  17.4 ms       0.965       50.3 MB
   trixie, calibre 8.5   178.4 s        109.0 ms                  22.4 ms       0.965       50.1 MB
   noai, 9.17 without AI (kept)         97.9 ms                   17.1 ms       0.965       50.3 MB
   each: 10 books changed, update_index() 0.44 s, embedded exactly 10
"""

import argparse
import gc
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from array import array
from operator import mul
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.meaning_library import filler_books, make_library  # noqa: E402
from helpers.peers import LlamaServer, http  # noqa: E402

from calibre_plugins.bookai.library_search import building, finding  # noqa: E402
from calibre_plugins.bookai.library_search.vectors import BookVectors, Stamp, VectorFiles  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

BOOKS_PLAIN = 1000   # books made a commit at a time, the baseline of the library's making
CHANGED = 10         # books changed before the incremental update
NOISE = 0.75         # a derived vector's noise, as long against its real one
LIBRARY_ID = 'bench-50k'
QUERIES = (
    'a doctor who lost his reputation',
    'a baker in a Welsh mining valley',
    'a woman wrongly blamed for a theft',
    'love between two competitors',
    'restoring an old playhouse',
    'a sailor cooking aboard a ship',
    'a musician playing on street corners',
    'fighting to keep the family business open',
    'looking after a sick mother or father',
    'how to save and invest your money',
    'growing vegetables on a city balcony',
    'pasta and risotto recipes from Italy',
    'the storming of the Bastille',
    'taking better pictures with a camera',
    'making furniture from wood',
    'brewing beer in your kitchen',
    'how the brain and memory work',
    'trade routes between China and Europe',
    'speaking confidently in front of an audience',
    'a novel set in Japan about a quiet town',
)


def ms(seconds: float) -> str:
    return f'{seconds * 1000:.1f} ms'


def unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def library(books: int) -> tuple[Path, str]:
    """The cached library of books fillers (made the first time: its making measured)."""
    from calibre.constants import numeric_version
    folder = Path('build') / f'bench-library-{books // 1000}k-calibre{".".join(map(str, numeric_version[:2]))}'
    marker = folder / 'made.json'
    if marker.exists() and json.loads(marker.read_text()).get('books') == books:
        return folder / 'library', f'kept from an earlier run in {folder} ({marker.read_text().strip()})'
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    fillers = filler_books(books)
    plain_root = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    make_library(plain_root, fillers[:BOOKS_PLAIN], one_transaction=False)
    plain = time.perf_counter() - t0
    shutil.rmtree(plain_root)
    t0 = time.perf_counter()
    path, ids = make_library(folder, fillers)
    bulk = time.perf_counter() - t0
    made = {'books': books, 'seconds': round(bulk, 1), 'books_per_s': round(books / bulk),
            'plain_books_per_s': round(BOOKS_PLAIN / plain)}
    marker.write_text(json.dumps(made))
    return path, (f'made in {bulk:.1f} s ({books / bulk:,.0f} books/s) in one transaction; a commit at a time '
                  f'{BOOKS_PLAIN / plain:,.0f} books/s ({BOOKS_PLAIN:,} books, {plain:.1f} s): '
                  f'{plain / BOOKS_PLAIN * books / bulk:.1f}x faster in one')


def server_alone(server: LlamaServer, texts: list[str]) -> tuple[float, list[list[float]]]:
    """The seconds the embeddings server takes for texts, building.BATCH a request, and the vectors."""
    vectors: list[list[float]] = []
    t0 = time.perf_counter()
    for start in range(0, len(texts), building.BATCH):
        status, _h, body = http('POST', server.base_url + '/v1/embeddings',
                                {'model': server.model, 'input': texts[start:start + building.BATCH]}, timeout=300)
        assert status == 200, body[:300]
        data = json.loads(body)['data']
        vectors.extend(item['embedding'] for item in sorted(data, key=lambda item: item['index']))
    return time.perf_counter() - t0, vectors


def all_real(folder: Path, server: LlamaServer, texts: dict[int, tuple[str, str]]) -> tuple[dict[int, array], int]:
    """The real model's vector of every book of texts (book id: (text, digest)), those of texts
    embedded before read from folder's real-vectors files, the others embedded now and kept there;
    and how many were embedded now."""
    names, data = folder / 'real-vectors.json', folder / 'real-vectors.f32'
    known: dict[str, array] = {}
    if names.exists() and data.exists():
        digests = json.loads(names.read_text())
        values = array('f')
        values.frombytes(data.read_bytes())
        dim = len(values) // max(1, len(digests))
        known = {d: values[i * dim:(i + 1) * dim] for i, d in enumerate(digests)}
    todo = [(text, digest) for text, digest in texts.values() if digest not in known]
    for start in range(0, len(todo), 2000):
        part = todo[start:start + 2000]
        _took, vectors = server_alone(server, [text for text, _d in part])
        known.update((digest, array('f', v)) for (_t, digest), v in zip(part, vectors))
        print(f'   embedded {min(len(todo), start + 2000):,} of {len(todo):,}', flush=True)
    if todo:
        order = list(known)
        values = array('f')
        for d in order:
            values.extend(known[d])
        data.write_bytes(values.tobytes())
        names.write_text(json.dumps(order))
    return {b: known[digest] for b, (_text, digest) in texts.items()}, len(todo)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--books', type=int, default=50_000)
    ap.add_argument('--sample', type=int, default=2000, help='books embedded by the real model')
    ap.add_argument('--all-real', action='store_true', help='every book embedded by the real model (kept for the '
                    'next run), none derived')
    a = ap.parse_args()
    t0 = time.perf_counter()
    path, how = library(a.books)
    print(f'1. the library: {a.books:,} books, {how}')

    from calibre.library import db as open_db
    db = open_db(str(path)).new_api
    work = Path(tempfile.mkdtemp())
    try:
        ids = sorted(db.all_book_ids())
        step = max(1, len(ids) // a.sample)
        sample = ids[::step][:a.sample]
        with LlamaServer('embed') as server:
            provider = get_provider('openai_compatible',
                                    settings={'base_url': server.base_url + '/v1', 'model': server.model})
            e = building.embedder(provider, server.model)

            # 2. the index's build against the server alone, on the sample
            texts = [x.text for x in building.entries_of(db, LIBRARY_ID, sample, custom=())]
            alone1, real = server_alone(server, texts)
            files = VectorFiles(str(work / 'sample'))
            t0 = time.perf_counter()
            built = building.update_index(db, LIBRARY_ID, e, files, custom=(),
                                          the_plan=building.Plan(list(sample), [], None, []))
            indexing = time.perf_counter() - t0
            alone2, _again = server_alone(server, texts)
            alone = (alone1 + alone2) / 2
            assert built.embedded == len(sample), built
            rate = len(sample) / indexing
            print(f'2. the index\'s build on {len(sample):,} books (every {step}th), real embeddings: '
                  f'{indexing:.1f} s, {rate:.1f} books/s; the embeddings server alone on the same texts '
                  f'{alone:.1f} s ({alone1:.1f} s before, {alone2:.1f} s after), {len(sample) / alone:.1f} books/s: '
                  f'the index\'s overhead {indexing / alone:.3f}x')
            print(f'   all {len(ids):,} books at that rate would take {len(ids) / rate / 60:.0f} minutes here')

            # 3. the whole index: the sample's real vectors, the others derived from them
            t0 = time.perf_counter()
            stamps = building.book_stamps(db)
            digests, texts_of = {}, {}
            for start in range(0, len(ids), 1000):
                for x in building.entries_of(db, LIBRARY_ID, ids[start:start + 1000], custom=()):
                    digests[x.book_id] = x.digest
                    texts_of[x.book_id] = (x.text, x.digest)
            entries = time.perf_counter() - t0
            t0 = time.perf_counter()
            rng = random.Random(30)
            real_of = dict(zip(sample, real))
            if a.all_real:
                real_of, now = all_real(path.parent, server, texts_of)
                print(f'   every book embedded by the real model: {now:,} now, in {time.perf_counter() - t0:.0f} s, '
                      f'{len(ids) - now:,} kept from an earlier run')
            del texts_of
            t0 = time.perf_counter()
            floats: dict[int, array] = {}
            for b in ids:
                v = real_of.get(b)
                if v is None:
                    base = real[rng.randrange(len(real))]
                    noise = unit([rng.gauss(0, 1) for _d in base])
                    v = [x + NOISE * n for x, n in zip(base, noise)]
                floats[b] = array('f', unit(v))
            made = time.perf_counter() - t0
            t0 = time.perf_counter()
            index = BookVectors(len(real[0]), e.key)
            for b in ids:
                index.put(b, floats[b], Stamp(stamps[b], digests[b]))
            files = VectorFiles(str(work / 'whole'))
            files.write(LIBRARY_ID, index)
            put = time.perf_counter() - t0
            del index
            derived = len(ids) - len(real_of)
            print(f'3. the index of all {len(ids):,} books: {len(real_of):,} vectors real (the model\'s), '
                  + (f'{derived:,} DERIVED from them (a real one plus noise, cosine about '
                     f'{1 / math.sqrt(1 + NOISE ** 2):.2f}; made in {made:.1f} s)' if derived else 'none derived')
                  + f'; the entries read from calibre in {entries:.1f} s, the index made and written in {put:.1f} s')

            # 4. the incremental update after CHANGED books changed
            changed = ids[7::max(1, len(ids) // CHANGED)][:CHANGED]
            db.set_field('tags', {b: ('Bench edit', f'Edit {time.time():.0f}') for b in changed})
            gc.collect()
            t0 = time.perf_counter()
            p = building.plan(db, LIBRARY_ID, e, files)
            planned = time.perf_counter() - t0
            del p
            t0 = time.perf_counter()
            update = building.update_index(db, LIBRARY_ID, e, files, custom=())
            updated = time.perf_counter() - t0
            print(f'4. {CHANGED} books changed: update_index() {updated:.2f} s, embedded {update.embedded} '
                  f'(kept {update.kept}, removed {update.removed}, {update.books:,} in the index); plan() alone '
                  f'(the full scan of calibre\'s times and the index) {planned:.2f} s: the update '
                  f'{updated / planned:.2f}x the plan; the whole build at the sample\'s rate '
                  f'{len(ids) / rate:.0f} s, the update {updated / (len(ids) / rate):.4f}x of it')
            for x, v in zip(changed, e.embed([t.text for t in building.entries_of(db, LIBRARY_ID, changed, custom=())])):
                floats[x] = array('f', unit(v))

            # 5. the search
            gc.collect()
            tracemalloc.start()
            t0 = time.perf_counter()
            index = files.read(LIBRARY_ID, model=e.key)
            loaded = time.perf_counter() - t0
            held, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert index is not None and len(index) == len(ids)
            whole, alone_times, brute_times, recalls, embed_times, whys = [], [], [], [], [], []
            order = list(floats)
            vectors = [floats[b] for b in order]
            for q in QUERIES:
                t0 = time.perf_counter()
                found = finding.search(db, LIBRARY_ID, index, e, q, k=10)
                whole.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                qv = unit(e.embed([q])[0])
                embed_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                best = index.search(qv, 10)
                alone_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                best_parts = finding.parts_of(db, LIBRARY_ID, [b for b, _s in best][:finding.EXPLAINED])
                finding.explained(e, qv, q, best_parts, None)
                whys.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                scores = [sum(map(mul, qv, v)) for v in vectors]
                truth = {order[i] for i in sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:10]}
                brute_times.append(time.perf_counter() - t0)
                recalls.append(len(truth & {f.book_id for f in found}) / 10)
                assert all(f.why for f in found[:finding.EXPLAINED]), found
            print(f'5. search over {len(ids):,} books, {len(QUERIES)} queries, each embedded by the real model:')
            print(f'   finding.search() (the query embedded, the index searched, the {finding.EXPLAINED} best explained by '
                  f'a second embedding request, the others by their words, calibre read): median {ms(statistics.median(whole))}, '
                  f'max {ms(max(whole))}; of which the query\'s embedding alone: median '
                  f'{ms(statistics.median(embed_times))}, the whys alone (finding.explained) median '
                  f'{ms(statistics.median(whys))}')
            print(f'   the index\'s search alone: median {ms(statistics.median(alone_times))}, max '
                  f'{ms(max(alone_times))}; a brute-force float scan: median {ms(statistics.median(brute_times))} '
                  f'({statistics.median(brute_times) / statistics.median(alone_times):.0f}x the index\'s)')
            print(f'   recall@10 of finding.search() against the brute-force scan: {statistics.mean(recalls):.3f} '
                  f'(worst query {min(recalls):.1f})')
            print(f'   the index read from its file in {loaded:.2f} s; it holds {held / 2**20:.1f} MB '
                  f'(peak while reading {peak / 2**20:.1f} MB)')
    finally:
        db.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
