# License: GPLv3 Copyright: the Book AI developers
"""The story so far, incrementally (conversation/recap.py, conversation/summaries.py).

1. The first recap of the real novel (Pride and Prejudice) at 50 %, against llama-server with the
   tiny model: the chapters read are summarized (each once, kept), then the recap is asked from
   their summaries and the chapter being read. Then the reader moves one chapter on, and asks
   again: only the chapter finished since is summarized, and the recap asked. The first run is
   the baseline: the second must cost at most that chapter's tokens plus a constant (the recap
   request itself: the summaries and the chapter being read). Printed: requests and tokens sent
   for both (as the server counted them, and as Book AI estimates them), the chapter's tokens,
   and the ratio of the second to the first.
2. Memory: a book of 5 MB of text (the novel eight times over, made an EPUB by calibre's
   ebook-convert) read, its chapters summarized and the recap made at its end, for a model that
   reads 128,000 tokens (the summaries of the earliest chapters do not fit it: said); this process's
   peak resident memory (VmHWM) must stay under 300 MB. The server here answers at once (a few
   lines of Python speaking the OpenAI stream): what is measured is Book AI's memory, and the
   tiny model would take most of an hour to read 5 MB. The baseline: the peak of reading the
   book alone, in the same run.

Run with: sudo python3 bench/run.py recap_incremental
(BOOKAI_BENCH_MEMORY_ONLY=1 sudo -E python3 bench/run.py recap_incremental: the memory part alone)
"""

import http.server
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import EPUB, many_copies_epub  # noqa: E402
from helpers.peak import MB, peak_growth, status  # noqa: E402
from helpers.peers import LlamaServer, RecordingProxy  # noqa: E402

from calibre_plugins.bookai.conversation.conversation import Conversation  # noqa: E402
from calibre_plugins.bookai.conversation.exchange import Exchange  # noqa: E402
from calibre_plugins.bookai.conversation.recap import RecapJob, book_source  # noqa: E402
from calibre_plugins.bookai.conversation.summaries import BookKey, SummaryCache  # noqa: E402
from calibre_plugins.bookai.grounding.extract import read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.so_far import read_until  # noqa: E402
from calibre_plugins.bookai.providers.context import ContextWindow  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

ABOUT = 'Pride and Prejudice by Jane Austen'
COPIES = 8  # of the novel, for a book of about 5 MB of text
MEMORY_BOUND = 300 * MB


def provider_at(url: str, window: int | None = None):
    p = get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': 'tiny', 'temperature': 0.0})
    if window:
        p.context_windows['tiny'] = ContextWindow(window, 'setting')
    return p


def recap_once(provider, book, position: float, cache: SummaryCache, proxy=None) -> dict:
    """One recap, as the windows make it; what it sent."""
    before = len(proxy.chat_requests()) if proxy is not None else 0
    started = time.monotonic()
    conv = Conversation([])
    job = RecapJob(provider, conv, [book_source(BookKey('bench', 1, 'EPUB'), book, position, ABOUT)], cache=cache)
    plan = job.prepare()
    estimate = job.estimate()
    run = job.summarize()
    exchange = Exchange(conv, provider, job.question(), use_model=job.model)
    for chunk in exchange.chunks():
        exchange.take(chunk)
    assert exchange.answer.failed is None and not run.failed and run.error is None, (exchange.answer.failed, run)
    usage = [*run.usage, exchange.answer.done.usage]
    bodies = proxy.chat_requests()[before:] if proxy is not None else []
    return {'mode': plan.mode, 'requests': len(usage), 'made': run.made, 'found': run.found,
            'summarized': len(plan.segments), 'notices': plan.notices,
            'server_tokens': sum(u.input_tokens or 0 for u in usage),
            'estimated': sum(len(m['content']) for b in bodies for m in b['messages']) // 4,
            'estimate': estimate, 'recap_tokens': usage[-1].input_tokens or 0,
            'chapter_tokens': [u.input_tokens or 0 for u in run.usage], 'seconds': time.monotonic() - started}


def incremental() -> None:
    book = read_epub(EPUB)
    place = read_until(book, 0.5)
    chapter = next(p.chapter for p in reversed(book.paragraphs) if p.start <= place)
    step = book.chapters[chapter + 1].start - book.chapters[chapter].start
    second_place = place + step
    finished = [p for p in book.paragraphs if p.chapter == chapter]
    with tempfile.TemporaryDirectory() as tmp, \
            LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=(
                '--temp', '0', '-n', '32', '--override-kv', 'llama.context_length=int:65536')) as server, \
            RecordingProxy(server.base_url) as proxy:
        provider = provider_at(proxy.base_url)
        cache = SummaryCache(str(Path(tmp) / 'summaries'))
        first = recap_once(provider, book, place / book.length, cache, proxy)
        second = recap_once(provider, book, second_place / book.length, cache, proxy)
    chapter_chars = sum(len(p.text) + 1 for p in finished)
    print(f'The novel at 50 % (inside {book.chapters[chapter].title.strip()}), then one chapter on; tiny model, '
          'llama-server (the tiny model reads a character a token; Book AI estimates 4 characters a token)')
    for name, r in (('first recap', first), ('one chapter on', second)):
        print(f'  {name:15} {r["mode"]:9} {r["requests"]:3} requests ({r["made"]} summaries made, {r["found"]} kept), '
              f'{r["server_tokens"]:>9,} tokens sent (server), {r["estimated"]:>7,} (Book AI\'s estimate; said '
              f'before: {r["estimate"].input_tokens:,}), {r["seconds"]:.1f} s')
    made = second['chapter_tokens']
    constant = second['server_tokens'] - sum(made)
    print(f'  the chapter finished since: {chapter_chars:,} characters; its summary request: {sum(made):,} tokens '
          f'(server) in {len(made)} request(s)')
    print(f'  the second recap = the chapter ({sum(made):,}) + a constant ({constant:,}: the recap request, '
          f'{second["recap_tokens"]:,}, the first\'s was {first["recap_tokens"]:,})')
    print(f'  ratio, second to first: {second["server_tokens"] / first["server_tokens"]:.3f} (server tokens), '
          f'{second["estimated"] / max(1, first["estimated"]):.3f} (estimated)')
    ok = second['made'] == 1 and len(made) == 1 and sum(made) <= chapter_chars + 1500
    print(f'  target (the chapter\'s text and one request\'s words, then the recap request): '
          f'{"met" if ok else "NOT MET"}')


class Instant(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that answers every request at once, streamed."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        size = sum(len(m['content']) for m in body['messages'])
        events = [{'choices': [{'index': 0, 'delta': {'content': 'Elizabeth hears of it [1], and is '
                                                                 'vexed by what she hears [2].'},
                                'finish_reason': None}]},
                  {'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}],
                   'usage': {'prompt_tokens': size // 4, 'completion_tokens': 12, 'total_tokens': size // 4 + 12}}]
        data = b''.join(f'data: {json.dumps(e)}\n\n'.encode() for e in events) + b'data: [DONE]\n\n'
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def five_mb_epub(folder: Path) -> Path:
    return many_copies_epub(folder, COPIES)


def memory() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        epub = five_mb_epub(folder)
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Instant)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f'http://127.0.0.1:{server.server_address[1]}'
            start = status('VmRSS')
            book, read_growth = peak_growth(lambda: read_epub(epub))
            read_peak = start + read_growth
            provider = provider_at(url, 128_000)
            cache = SummaryCache(str(folder / 'summaries'))
            outcome, growth = peak_growth(lambda: recap_once(provider, book, 1.0, cache))
            after = status('VmHWM')
        finally:
            server.shutdown()
            server.server_close()
    if isinstance(outcome, Exception):
        raise outcome
    text = sum(len(p.text) for p in book.paragraphs)
    print(f'A book of {text / MB:.1f} MB of text ({len(book.chapters)} chapters), read, its chapters summarized '
          f'({outcome["made"]} summaries in {outcome["requests"] - 1} requests) and the recap made at its end, '
          f'{outcome["seconds"]:.1f} s; said: {" ".join(outcome["notices"]) or "nothing"}')
    print(f'  resident before: {start / MB:.0f} MB; peak reading the book (the baseline): {read_peak / MB:.0f} MB; '
          f'peak through summaries and recap: {after / MB:.0f} MB (grew {growth / MB:.0f} MB)')
    print(f'  ratio, summaries and recap to reading the book (peak resident): {after / read_peak:.2f}')
    print(f'  target (under {MEMORY_BOUND // MB} MB resident): {"met" if after < MEMORY_BOUND else "NOT MET"}')


def main() -> None:
    if not os.environ.get('BOOKAI_BENCH_MEMORY_ONLY'):
        incremental()
    memory()


if __name__ == '__main__':
    main()
