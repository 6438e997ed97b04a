# License: GPLv3 Copyright: the Book AI developers
"""Ranked passages keep the reader's "Book text per question, at most", never more than the model
has room for after the conversation so far and the answer (conversation/question.py: Room,
book_text_room): against a real llama-server whose context is small, the passages that reach it
are fewer, and all of them fit; with the window unknown, nothing changes."""

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.question import (
    ANSWER_ROOM, ASSUMED_WINDOW, Room, book_question, book_text_room, room_in,
)
from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN, Message, Role, estimated_tokens
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.books import quick_start_epub
from helpers.peers import RecordingProxy

QUESTION = 'How do I convert books to another format?'
BUDGET = 1500
LARGE_BUDGET = 6000
TINY_CONTEXT = 1024
TINY_TOKENS = 8


@pytest.fixture(scope='module')
def guide():
    return read_epub(quick_start_epub())


def tokens_of(question) -> int:
    return sum(len(p.text) // CHARS_PER_TOKEN + 1 for p in question.excerpt.passages)


def test_room_is_the_window_less_the_conversation_and_the_answer():
    messages = [Message(Role.USER, 'x' * 400)]
    assert room_in(100_000, messages) == Room(100_000, 100_000 - 100 - ANSWER_ROOM)
    assert room_in(1000, messages) == Room(1000, 1000 - 100 - 250)  # a quarter of a small window
    assert room_in(100, messages).tokens < 0


def test_the_budget_holds_when_the_window_is_unknown_or_roomy(guide):
    today = book_question(QUESTION, 'book', guide, budget=BUDGET)
    assert today.passages and not today.notices
    assert book_question(QUESTION, 'book', guide, budget=BUDGET, room=None) == today
    roomy = book_question(QUESTION, 'book', guide, budget=BUDGET, room=Room(200_000, 190_000))
    assert roomy == today


def test_a_small_room_sends_fewer_passages_and_says_so(guide):
    today = book_question(QUESTION, 'book', guide, budget=BUDGET)
    small = book_question(QUESTION, 'book', guide, budget=BUDGET, room=Room(1024, 400))
    assert 0 < len(small.places) < len(today.places) and tokens_of(small) <= 400
    assert small.excerpt.passages == today.excerpt.passages[:len(small.places)]  # the best ones kept
    assert small.notices and '1,024' in small.notices[0] and '1,500' in small.notices[0]
    full = book_question(QUESTION, 'book', guide, budget=BUDGET, room=Room(1024, -30))
    assert full.passages == '' and len(full.notices) == 2


def test_a_small_model_gets_only_what_fits(tiny, guide):
    """The real llama-server says its context (1,024 tokens) at /props; a reader who allows 6,000
    tokens of book text a question gets fewer, and that is what the server receives."""
    with RecordingProxy(tiny.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny'})
        conv = Conversation([])
        room = book_text_room(provider, conv, QUESTION, wanted=LARGE_BUDGET)
        assert room is not None and room.window == TINY_CONTEXT and 0 < room.tokens < BUDGET
        question = book_question(QUESTION, 'book', guide, budget=LARGE_BUDGET, room=room)
        today = book_question(QUESTION, 'book', guide, budget=LARGE_BUDGET)
        assert 0 < len(question.places) < len(today.places) and tokens_of(question) <= room.tokens
        exchange = Exchange(conv, provider, question)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        sent = proxy.chat_requests()[-1]['messages'][-1]['content']
        assert all(p.text in sent for p in question.excerpt.passages)
        assert not any(p.text in sent for p in today.excerpt.passages[len(question.places):])
        # Book AI counts CHARS_PER_TOKEN characters a token; the tiny model's tokenizer counts about
        # four times as many, so the server refuses it as too long, and that is believed: the next
        # question's room is below what was refused (providers.context.refused()), asked once
        exchange.finish(None)
        assert 'too long for the model' in conv.turns[-1].error
        again = book_text_room(provider, conv, QUESTION, wanted=LARGE_BUDGET)
        assert again is not None and again.window < estimated_tokens(exchange.messages) and again.tokens < room.tokens
        assert [path for _m, path, _b in proxy.received].count('/props') == 1


def test_what_fits_in_any_model_is_sent_without_asking(tiny):
    """Book text, conversation and answer that fit in ASSUMED_WINDOW go without a question to the
    service (the reader's 1,500 tokens by default); more than that, and the service is asked."""
    with RecordingProxy(tiny.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny'})
        assert book_text_room(provider, Conversation([]), QUESTION, wanted=BUDGET) is None
        assert proxy.received == []
        conv = Conversation([])
        fits = room_in(ASSUMED_WINDOW, conv.messages_for(QUESTION, ' ', spoiler_safe=True)).tokens
        assert 2000 < fits < ASSUMED_WINDOW - ANSWER_ROOM // 2  # the answer keeps a quarter of 4,096
        assert book_text_room(provider, conv, QUESTION, wanted=fits) is None
        assert proxy.received == []
        assert book_text_room(provider, conv, QUESTION, wanted=fits + 1) is not None
        assert [path for _m, path, _b in proxy.received] == ['/props']


def test_a_window_the_service_failed_to_say_is_said_and_the_budget_holds(guide):
    today = book_question(QUESTION, 'book', guide, budget=BUDGET)
    why = 'The server sent an answer larger than 16 MB'
    unknown = book_question(QUESTION, 'book', guide, budget=BUDGET, room=Room(0, 0, why))
    assert unknown.excerpt.passages == today.excerpt.passages  # the reader's budget, as when unknown
    assert len(unknown.notices) == 1 and why in unknown.notices[0]


def test_nothing_is_asked_of_a_provider_not_set_up():
    """Before a provider is set up (here: no key), learning its window sends nothing anywhere."""
    from helpers.scripted_server import Reply, ScriptedServer
    with ScriptedServer([Reply(200, b'{"data": [{"id": "m", "context_length": 8192}]}')]) as s:
        provider = get_provider('grok', settings={'base_url': s.url + '/v1', 'api_key': ''})
        assert provider.config.missing_setup()
        assert book_text_room(provider, Conversation([]), QUESTION) is None
        assert s.received == []
