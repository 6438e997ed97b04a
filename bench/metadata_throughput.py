# License: GPLv3 Copyright: the Book AI developers
"""AI metadata for many books (issue 30): metadata.asking.ask_books() over --books books of a real
calibre library (made through calibre's API, metadata only, no descriptions: tests/helpers/
meaning_library.py filler_books()), read as the job reads them (metadata.reading.books_read), their
tags and description asked of a local llama-server with 4 slots (--parallel 4) and the tiny
deterministic model, at 1, 2 and 4 requests at once: books/s, each against 1 at once measured in the
same run, and the process's peak resident memory during each run (VmHWM, reset before each by
/proc/self/clear_refs), and, in a last run at 4 at once, the peak of Python's own allocations
(tracemalloc; slower, so not timed).

The tiny model (random weights, thousands of tokens/s) never ends an answer by itself: the server
caps each answer at --tokens tokens (-n), so most answers are cut short and are no JSON; each is
still a whole request, read, parsed and checked as a real answer is. What is measured is Book AI's
way of asking many books and the server's slots, not a model's quality.

Run with: sudo python3 bench/run.py metadata_throughput [-- --books N --tokens N]   (1,000 books;
          each run at 1, 2 and 4 at once asks every book once)

Figures of one run (2026-12-06, bookworm host: calibre 6.13, Python 3.11, on this project's 2-core
machine, llama-server -t 2 --parallel 4 with the tiny model), the defaults (1,000 books, 100 tokens):

    at once  Book AI         against 1  the server alone  against its 1  Book AI / alone  peak RSS
    1        59.5 s, 16.8/s  1.00x      52.3 s            1.00x          1.14x            81 MB
    2        58.6 s, 17.1/s  1.02x      58.7 s            0.89x          1.00x            83 MB
    4        56.9 s, 17.6/s  1.05x      64.9 s            0.81x          0.88x            86 MB
    Python's allocations asking 100 books 4 at once: peak 0.2 MB, 0.1 MB held after

No scaling: the server alone, sent the same requests by plain threads, gets no faster with more at
once either (slower: 0.81x at 4), so the bound is the server on 2 cores, not Book AI. The tiny
model's forward pass costs next to nothing; what each token costs is llama-server's own work per
slot (sampling under the JSON Schema's grammar, the answer's text), done one slot after another on
its main thread, while Book AI's client and the server share the 2 cores. Book AI's own cost per
book is a few milliseconds (1.14x the server alone at 1 at once, the streaming client's reading
and parsing; nothing at 2 and 4, where it overlaps the server's work). The resident peak grows by
a few MB over 1,000 books (the answers are not kept), and Python's allocations stay under 1 MB. A
model whose forward pass dominates (a real one, or a GPU) would batch the 4 slots' tokens and scale.
An earlier run of 40 books measured 1.37x at 2 and 1.62x at 4 (the server alone 1.37x and 1.52x):
short runs on this shared machine vary.
"""

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.meaning_library import filler_books, make_library  # noqa: E402
from helpers.peers import LlamaServer, http  # noqa: E402

from calibre_plugins.bookai.metadata import asking  # noqa: E402
from calibre_plugins.bookai.metadata.asking import Asking, ask_books, fields_for, messages_for  # noqa: E402
from calibre_plugins.bookai.metadata.fields import answer_schema  # noqa: E402
from calibre_plugins.bookai.metadata.reading import books_read, fields_of, known_tags  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

AT_ONCE = (1, 2, 4)
SLOTS = 4


def peak_rss_reset() -> None:
    """The kernel's peak resident size of this process (VmHWM) set back to what it is now."""
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')


def peak_rss() -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) * 1024
    return 0


def run(ask: Asking, books: list, at_once: int) -> tuple[float, int, int]:
    """Seconds to ask every book at_once at a time, answers with an error, proposals made."""
    errors = proposals = 0
    t0 = time.perf_counter()
    for answer in ask_books(ask, books, at_once):
        errors += bool(answer.error)
        proposals += len(answer.proposals)
    return time.perf_counter() - t0, errors, proposals


def direct(server: LlamaServer, ask: Asking, books: list, at_once: int) -> float:
    """Seconds for the server alone to answer the same requests at_once at a time: each book's
    messages and the fields' schema as Book AI makes them, sent by plain urllib, not streamed."""
    from concurrent.futures import ThreadPoolExecutor
    bodies = []
    for book in books:
        fields = fields_for(book, ask.fields)
        bodies.append({'model': 'tiny', 'temperature': 0, 'max_tokens': asking.ANSWER_TOKENS,
                       'messages': [{'role': m.role.value, 'content': m.text} for m in messages_for(ask, book, fields)],
                       'response_format': {'type': 'json_schema',
                                           'json_schema': {'name': 'metadata', 'schema': answer_schema(fields)}}})

    def one(body: dict) -> None:
        status, _h, answer = http('POST', server.base_url + '/v1/chat/completions', body, timeout=600)
        assert status == 200, answer[:300]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(at_once) as pool:
        list(pool.map(one, bodies))
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--books', type=int, default=1000)
    ap.add_argument('--tokens', type=int, default=100, help="an answer's tokens at most (asking.ANSWER_TOKENS)")
    ap.add_argument('--model', default='tiny', choices=('tiny', 'smollm2'), help='the model llama-server runs')
    a = ap.parse_args()
    asking.ANSWER_TOKENS = a.tokens  # the tiny model never ends an answer: only so long
    root = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    fillers = [(title, authors, tags, series, '') for title, authors, tags, series, _about in filler_books(a.books)]
    path, ids = make_library(root, fillers)
    from calibre.library import db as open_db
    db = open_db(str(path)).new_api
    try:
        fields = fields_of(db, ['tags', 'comments'])
        books = books_read(db, 'bench', ids, fields)
        print(f'{len(books):,} books (no descriptions) made through calibre\'s API and read as the job reads them '
              f'in {time.perf_counter() - t0:.1f} s; asked: {", ".join(f.key for f in fields)}')
        with LlamaServer(a.model, alias='tiny', ctx=SLOTS * 4096,
                         extra_args=('--temp', '0', '--parallel', str(SLOTS))) as server:
            provider = get_provider('openai_compatible', settings={
                'base_url': server.base_url + '/v1', 'model': 'tiny', 'temperature': 0.0})
            ask = Asking(provider, 'tiny', fields, {'tags': known_tags(db)})
            run(ask, books[:8], SLOTS)  # warm: the server's first requests, the schema's answer learnt
            results = {}
            for n in AT_ONCE:
                gc.collect()
                peak_rss_reset()
                before = peak_rss()
                took, errors, proposals = run(ask, books, n)
                alone = direct(server, ask, books, n)
                results[n] = took, alone
                base, base_alone = results[AT_ONCE[0]]
                print(f'{n} at once: {took:.1f} s, {len(books) / took:.1f} books/s, {base / took:.2f}x 1 at once; the '
                      f'server alone on the same requests {alone:.1f} s, {base_alone / alone:.2f}x its 1 at once: '
                      f'Book AI {took / alone:.2f}x the server alone;\n  '
                      f'peak resident {peak_rss() / 2**20:.0f} MB (at the start {before / 2**20:.0f} MB); '
                      f'{errors:,} answers no JSON or cut short, {proposals:,} values proposed')
            gc.collect()
            tracemalloc.start()
            run(ask, books[:100], AT_ONCE[-1])
            held, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f'Python\'s allocations while asking {len(books[:100]):,} books {AT_ONCE[-1]} at once (tracemalloc): '
                  f'peak {peak / 2**20:.1f} MB, {held / 2**20:.1f} MB held after')
            print(f'the answers still asked for by their JSON Schema: {ask.structured}')
    finally:
        db.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
