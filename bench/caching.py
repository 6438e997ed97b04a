# License: GPLv3 Copyright: the Book AI developers
"""The second question about the same book and place, against the first: time to the first
token, and the share of the prompt (and of the book's text) llama-server read from its prompt
cache, asked through Book AI's own path (conversation/exchange.py, the OpenAI-compatible
provider), with the demo's real model (Qwen2.5-Coder-0.5B-Instruct) and a few thousand tokens of
the tests' novel read up to the reader's place.

Each round starts with the server's cache emptied (its slot erased), then asks, in order:
- the first question, in a new conversation (nothing cached: the baseline);
- a follow-up in that conversation (the whole first turn is sent again, first);
- another question about the same book and place, in a conversation of its own (the system
  message and the book's text are sent again, first).

Run with: sudo python3 bench/run.py caching   (BOOKAI_BENCH_TINY=1: the tiny model, for a quick look)
Target: the second question reads at least 90 % of the book's tokens from the cache; its time to
the first token, as a ratio of the first question's, is printed (no absolute time is judged).
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import AUTHOR, EPUB, TITLE  # noqa: E402
from helpers.peers import LlamaServer, http  # noqa: E402

from calibre_plugins.bookai.conversation.books import BookInfo  # noqa: E402
from calibre_plugins.bookai.conversation.conversation import Conversation, cache_text  # noqa: E402
from calibre_plugins.bookai.conversation.exchange import Exchange  # noqa: E402
from calibre_plugins.bookai.conversation.prompts import book_part, numbered_block  # noqa: E402
from calibre_plugins.bookai.conversation.question import Question  # noqa: E402
from calibre_plugins.bookai.core.messages import ReasoningDelta, TextDelta  # noqa: E402
from calibre_plugins.bookai.grounding.extract import read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.so_far import passages_read, read_until, tokens_of  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

TINY = bool(os.environ.get('BOOKAI_BENCH_TINY'))
ROUNDS = 3
PLACE = 0.3             # the reader's place in the novel
# of the book read so far, the last ones before the place, as Book AI counts tokens (a character each for
# the tiny model, whose window is 8,192: the follow-up sends the book twice)
BOOK_TOKENS = 700 if TINY else 3000
ANSWER_TOKENS = 16      # what is measured is the prompt: the answers stay short
QUESTIONS = ('Who has come to the neighbourhood, and why does it matter?',  # the first question
             'And what did her mother say about it?',                       # a follow-up
             'Where does the story take place?')                            # another conversation


def book_question(book, text: str) -> Question:
    """text, with the last BOOK_TOKENS of the book read up to PLACE (grounding/so_far.py): the
    same passages whatever the question, as the scopes that keep to the place send them."""
    read = passages_read(book, read_until(book, PLACE))
    chosen = []
    while read and tokens_of(chosen) < BOOK_TOKENS:
        chosen.insert(0, read.pop())
    passages = numbered_block((book.chapters[p.chapter].title, p.text) for p in chosen)
    return Question(text, passages, spoiler_safe=True)


def asked(conv: Conversation, provider, question: Question) -> tuple[float, object]:
    """(seconds to the first token, the turn's usage) of question asked in conv, as the windows ask it."""
    exchange = Exchange(conv, provider, question)
    start, first = time.perf_counter(), None
    for chunk in exchange.chunks():
        if first is None and isinstance(chunk, (TextDelta, ReasoningDelta)) and chunk.text:
            first = time.perf_counter() - start
        exchange.take(chunk)
    exchange.finish(None)
    turn = exchange.turn
    if turn.error or turn.usage is None:
        raise SystemExit(f'the question failed: {turn.error}')
    return (first if first is not None else time.perf_counter() - start), turn.usage


def main() -> None:
    book = read_epub(EPUB)
    model = 'tiny' if TINY else 'qwen'
    slots = tempfile.mkdtemp()  # the server empties its cache only when it may save it
    with LlamaServer(model, alias='bench', ctx=16384 if TINY else 8192,
                     extra_args=('--temp', '0', '-n', str(ANSWER_TOKENS), '--slot-save-path', slots)) as server:
        provider = get_provider('openai_compatible', settings={
            'base_url': server.base_url + '/v1', 'model': 'bench', 'temperature': 0.0, 'read_timeout': 600.0})
        q = [book_question(book, text) for text in QUESTIONS]
        book_tokens, before_book = (len(json.loads(http('POST', server.base_url + '/tokenize', {'content': text})[2])[
            'tokens']) for text in (book_part(q[0].passages), q[0].messages(Conversation([BookInfo(
                1, TITLE, (AUTHOR,))]))[0].text))
        results: dict[str, list[tuple[float, object]]] = {'first': [], 'follow-up': [], 'another': []}
        for _round in range(ROUNDS):
            status, _h, body = http('POST', server.base_url + '/slots/0?action=erase', {})
            if status != 200:
                raise SystemExit(f'the server did not empty its cache: {status} {body[:200]!r}')
            conv = Conversation([BookInfo(1, TITLE, (AUTHOR,))])
            results['first'].append(asked(conv, provider, q[0]))
            results['follow-up'].append(asked(conv, provider, q[1]))
            results['another'].append(asked(Conversation([BookInfo(1, TITLE, (AUTHOR,))]), provider, q[2]))
    med = statistics.median
    base = med(t for t, _u in results['first'])
    print(f'llama-server, {"the tiny model" if TINY else "Qwen2.5-Coder-0.5B-Instruct (the demo model)"}, '
          f'{os.environ.get("BOOKAI_PEER_THREADS") or os.cpu_count()} threads; the book read up to {PLACE:.0%} '
          f'of Pride and Prejudice: {book_tokens:,} tokens of book text; {ROUNDS} rounds, the cache emptied '
          'before each')
    for name, runs in results.items():
        first = med(t for t, _u in runs)
        prompt = med(u.input_tokens or 0 for _t, u in runs)
        cached = med(u.cached_tokens or 0 for _t, u in runs)
        print(f'{name:10} first token {first:7.2f} s ({first / base:5.2f} of the first question\'s)   '
              f'prompt {prompt:6,.0f} tokens, {cached:6,.0f} from the cache ({cached / prompt:4.0%} of the prompt, '
              f'{min(book_tokens, max(0, cached - before_book)) / book_tokens:4.0%} of the book\'s text)')
    print('shown under the answer, e.g.:', cache_text(results['another'][-1][1]))
    print('target: the second question about the same book and place reads at least 90 % of the book\'s tokens '
          'from the cache')


main()
