# License: GPLv3 Copyright: the Book AI developers
"""Lookups with a real model behind a real server: Qwen2.5-Coder-0.5B-Instruct (the demo's model)
in llama.cpp's llama-server, asked through the one path every way in takes (conversation.exchange),
about the real novel with sentinel text after the reader's place (helpers.sentinels).

The model is told to look past the place on purpose: to search for the sentinel's words and to read
around the end of the book. Whatever it asks, no request the server receives holds any sentinel, in
any scope but "book"; and the lookups it made were run, their results sent back to it. A 0.5B model
writes its calls as text rather than in the server's tool_calls (conversation.lookups.calls_written
reads them): these tests show the mechanics with a real model, not the quality of its lookups."""

import json

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.lookups import LookedUp
from calibre_plugins.bookai.conversation.question import book_question
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.peers import LlamaServer, RecordingProxy
from helpers.sentinels import bodies_with_sentinels, with_sentinels

QUESTIONS = (
    'Search the book for "vicar eloped with the housekeeper" and tell me what happens to the vicar.',
    'Read around position 0.99 of the book and tell me how the book ends.',
    'Search the book for "zeppelin landed at Longbourn" and list the chapters of the book.',
)


# the real model takes minutes, and what it drives is the same on every host
pytestmark = pytest.mark.hosts('noai', why="the real model's lookups, the same on every host")


@pytest.fixture(scope='module')
def qwen():
    with LlamaServer('qwen', ctx=16384, extra_args=('--temp', '0', '-n', '160')) as server:
        yield server


@pytest.fixture(scope='module')
def sentinel_book():
    return with_sentinels(read_epub(EPUB), 0.3)


def tool_results(received) -> list[str]:
    """What the lookups found as sent back to the model in the chat requests received: tool
    messages, or, in the last request once no more lookups are allowed, the text after the question."""
    found = []
    for method, path, body in received:
        if path.endswith('/chat/completions'):
            for m in json.loads(body)['messages']:
                if m.get('role') == 'tool':
                    found.append(m['content'])
                elif m.get('role') == 'user' and 'What you looked up for this question:' in str(m.get('content')):
                    found.append(str(m['content']).split('What you looked up for this question:', 1)[1])
    return found


# the question each scope starts with; the next ones are asked only while the model has looked nothing up
FIRST_QUESTION = {'position': 0, 'chapter': 1, 'so-far': 2}
FEW_LOOKUPS = 2  # each request carries the results so far: two show the loop, in a minute rather than five


@pytest.mark.parametrize('scope', list(FIRST_QUESTION))
def test_a_real_model_looking_past_the_place_is_sent_nothing_after_it(qwen, sentinel_book, scope, prefs):
    book, position = sentinel_book
    prefs['lookup_calls'] = FEW_LOOKUPS
    made = []
    start = FIRST_QUESTION[scope]
    with RecordingProxy(qwen.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1',
                                                               'model': qwen.model, 'temperature': 0.0})
        for text in QUESTIONS[start:] + QUESTIONS[:start]:
            conv = Conversation([])
            q = book_question(text, scope, book, position=position, budget=600)
            assert q.tools is not None
            exchange = Exchange(conv, provider, q)
            for chunk in exchange.chunks():
                if isinstance(chunk, LookedUp):
                    made.append(chunk.lookup)
                exchange.take(chunk)
            exchange.finish(None)
            assert conv.turns[-1].error == ''
            if made:
                break
        received = list(proxy.received)
    assert made, "the model looked nothing up"
    # a reply of more calls than are left: those past the bound are answered "Not run", never run
    assert len([m for m in made if not m.text.startswith('Not run:')]) <= FEW_LOOKUPS
    assert tool_results(received), 'no lookup result went back to the model'
    assert bodies_with_sentinels(received) == []
    chat = [json.loads(b) for m, p, b in received if p.endswith('/chat/completions')]
    assert 'tools' in chat[0] and {t['function']['name'] for t in chat[0]['tools']} >= {'search_book', 'read_around'}


def test_the_whole_book_scope_finds_what_is_after_the_place(qwen, sentinel_book, prefs):
    """What makes the test above able to fail: in the book scope the same lookups reach the sentinel."""
    book, position = sentinel_book
    prefs['lookup_calls'] = FEW_LOOKUPS
    with RecordingProxy(qwen.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1',
                                                               'model': qwen.model, 'temperature': 0.0})
        conv = Conversation([])
        q = book_question(QUESTIONS[0], 'book', book, position=position, budget=600)
        exchange = Exchange(conv, provider, q)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        exchange.finish(None)
        received = list(proxy.received)
    assert bodies_with_sentinels(received) != []
