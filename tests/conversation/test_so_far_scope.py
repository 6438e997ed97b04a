# License: GPLv3 Copyright: the Book AI developers
""""Everything up to where I am" (scope so-far, conversation/question.py so_far_question): the
whole text read, numbered as passages are, when the model has room for it; the best passages
otherwise, and the reader told why; sent once in a conversation, and the second question's
request starts with the first's bytes. On the real novel; the last test against a real
llama-server, with the paragraph after the place as the sentinel that must never reach it."""

from dataclasses import replace

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.prompts import PASSAGES_ABOVE
from calibre_plugins.bookai.conversation.question import Room, book_question, book_text_room
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.scopes import NoPlace
from calibre_plugins.bookai.grounding.so_far import passages_read, read_until, tokens_of
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.peers import LlamaServer, RecordingProxy, tiny_server

QUESTION = 'What has happened so far?'
PLACE = 0.02  # the title page and the first chapters: about 2,400 tokens read


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def first_after(book, position):
    """The first paragraph not wholly read at position: the sentinel."""
    until = read_until(book, position)
    return next(p for p in book.paragraphs if p.start + len(p.text) > until)


def test_everything_read_goes_when_it_fits(novel):
    read = passages_read(novel, read_until(novel, PLACE))
    q = book_question(QUESTION, 'so-far', novel, position=PLACE, room=Room(200_000, 190_000))
    assert q.excerpt.scope == 'so-far' and q.excerpt.passages == tuple(read) and q.spoiler_safe
    assert len(q.places) == len(read) and q.places[0].position <= q.places[-1].position < PLACE
    assert f'[{len(read)}] (' in q.passages and f'[{len(read) + 1}] (' not in q.passages
    assert first_after(novel, PLACE).text[:80] not in q.passages
    assert len(q.notices) == 1 and f'{tokens_of(read):,}' in q.notices[0]


def test_more_than_the_model_reads_sends_the_best_passages_and_says_why(novel):
    total = tokens_of(passages_read(novel, read_until(novel, 0.5)))
    q = book_question(QUESTION, 'so-far', novel, position=0.5, budget=1500, room=Room(32_000, 29_000))
    assert total > 29_000 and q.excerpt.scope == 'position' and q.places
    assert 'more than the model reads at once' in q.notices[0] and '32,000' in q.notices[0]
    assert all(p.end <= read_until(novel, 0.5) for p in q.excerpt.passages)
    unknown = book_question(QUESTION, 'so-far', novel, position=0.5, budget=1500, room=None)
    assert unknown.excerpt.scope == 'position' and 'does not know how much' in unknown.notices[0]
    failed = book_question(QUESTION, 'so-far', novel, position=0.5, budget=1500, room=Room(0, 0, 'HTTP 500'))
    assert failed.excerpt.scope == 'position' and 'HTTP 500' in failed.notices[0]
    assert len(failed.notices) == 1  # the passages keep the reader's budget: nothing more to say


def test_no_place_no_text(novel):
    with pytest.raises(NoPlace):
        book_question(QUESTION, 'so-far', novel, position=None, room=Room(200_000, 190_000))


def test_sent_once_in_a_conversation_and_the_prefix_is_stable(novel):
    conv = Conversation([])
    first = book_question(QUESTION, 'so-far', novel, position=PLACE, room=Room(200_000, 190_000))
    sent_first = first.messages(conv)
    conv.ask(first.text, first.passages, first.spoiler_safe, first.places)
    conv.turns[-1].answer, conv.turns[-1].finish_reason = 'Mr. Bingley has taken Netherfield [2].', 'stop'
    room = Room(200_000, 1_000, sent=(first.passages,))  # the history fills the window: no room again
    second = book_question('Who is Mr. Bingley?', 'so-far', novel, position=PLACE, room=room)
    assert second.passages == first.passages and 'not sent again' in second.notices[0]
    messages = second.messages(conv)
    assert [m.text for m in messages[:2]] == [m.text for m in sent_first]  # the same bytes first
    assert sum(m.text.count(first.passages) for m in messages) == 1
    assert messages[-1].text.startswith(PASSAGES_ABOVE) and messages[-1].text.endswith('Who is Mr. Bingley?')


def test_a_real_server_gets_everything_read_and_nothing_after(novel):
    """llama-server says its window at /props; the so-far question fits, goes, and the request the
    server receives holds every paragraph read and not the one after the place."""
    place = 5000 / novel.length  # the tiny model reads 8,192 tokens of about a character each
    sentinel = first_after(novel, place).text
    read = [p.text for p in novel.paragraphs if p.start + len(p.text) <= read_until(novel, place)]
    with tiny_server(8, 8192) as server, RecordingProxy(server.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny'})
        conv = Conversation([])
        room = book_text_room(provider, conv, QUESTION, scope='so-far')
        assert room is not None and room.window == 8192
        q = book_question(QUESTION, 'so-far', novel, position=place, room=room)
        assert q.excerpt.scope == 'so-far'
        exchange = Exchange(conv, provider, q)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        assert exchange.finish(None) == '' and conv.turns[-1].answered, conv.turns[-1].error
        body = proxy.chat_requests()[-1]
        sent = ' '.join(' '.join(m['content'] for m in body['messages']).split())
        assert all(' '.join(t.split()) in sent for t in read)
        assert ' '.join(sentinel.split())[:60] not in sent


def test_a_service_that_reads_less_than_it_is_said_to_is_believed_next_time(novel, monkeypatch):
    """llama-server answering as "grok-3" (the table says 131,072 tokens) reads only 2,048: the
    whole text read is refused as too long, in words; the next question holds its book text below
    what was refused, and the best passages go, which it answers."""
    from calibre_plugins.bookai.providers import context
    monkeypatch.setattr(context, 'REFUSED', {})
    place = 12000 / novel.length
    with LlamaServer('tiny', alias='grok-3', ctx=2048, extra_args=('--temp', '0', '-n', '8')) as server:
        provider = get_provider('grok', settings={'base_url': server.base_url + '/v1', 'model': 'grok-3',
                                                  'api_key': 'xai-test-key'})
        conv = Conversation([])
        room = book_text_room(provider, conv, QUESTION, scope='so-far')
        assert room is not None and room.window == 131_072
        q = book_question(QUESTION, 'so-far', novel, position=place, budget=300, room=room)
        assert q.excerpt.scope == 'so-far'
        exchange = Exchange(conv, provider, q)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        exchange.finish(None)
        assert 'too long for the model' in conv.turns[-1].error
        provider = get_provider('grok', settings={'base_url': server.base_url + '/v1', 'model': 'grok-3',
                                                  'api_key': 'xai-test-key'})  # a new one, as each question takes
        room = book_text_room(provider, conv, QUESTION, scope='so-far')
        assert room is not None and room.window < tokens_of(q.excerpt.passages)
        q = book_question(QUESTION, 'so-far', novel, position=place, budget=300, room=room)
        assert q.excerpt.scope == 'position' and 'more than the model reads at once' in q.notices[0]
        exchange = Exchange(conv, provider, q)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        assert exchange.finish(None) == '' and conv.turns[-1].answered, conv.turns[-1].error


# when the text read does not fit: the summaries of the earlier chapters kept, the chapter being read in full

def keep_summaries(cache, key, book, position, model='openai_compatible/tiny', leave_out=()):
    """A summary kept for each chapter read to its end before position (but those numbered in leave_out),
    each citing its first passage, as summaries.summarize() keeps them."""
    from calibre_plugins.bookai.conversation.summaries import BookSummaries, Summary, chapter_segments
    kept = BookSummaries(cache, key)
    segments = chapter_segments(book, read_until(book, position), current=False)
    for s in segments:
        if s.chapter not in leave_out:
            kept.keep(Summary(model, s.chapter, s.title, s.first, s.last, True, s.end, s.digest,
                              f'In {s.title} the Bennets talk [{s.first}].', 1.0))
    return segments


def test_more_than_the_model_reads_sends_the_summaries_kept_and_the_chapter_in_full(novel, tmp_path):
    from calibre_plugins.bookai.conversation.recap import SoFarSummaries
    from calibre_plugins.bookai.conversation.summaries import BookKey, SummaryCache
    position, key = 0.1, BookKey('lib', 1, 'EPUB')
    cache = SummaryCache(str(tmp_path / 'summaries'))
    provider = get_provider('openai_compatible', settings={'base_url': 'http://127.0.0.1:9/v1', 'model': 'tiny'})
    room = Room(8000, 5800, model='tiny')
    until = read_until(novel, position)
    assert tokens_of(passages_read(novel, until)) > room.tokens
    segments = keep_summaries(cache, key, novel, position, leave_out=(2,))
    missing = book_question(QUESTION, 'so-far', novel, position=position, budget=1500, room=room,
                            summaries=SoFarSummaries(provider, key, cache=cache))
    assert missing.excerpt.scope == 'position' and '1 of them is not made yet' in missing.notices[0]
    keep_summaries(cache, key, novel, position)
    q = book_question(QUESTION, 'so-far', novel, position=position, budget=1500, room=room,
                      summaries=SoFarSummaries(provider, key, cache=cache))
    assert q.excerpt.scope == 'so-far' and q.spoiler_safe and q.text == QUESTION
    assert f'the {len(segments)} earlier chapters go as their summaries' in q.notices[0]
    assert q.passages.index('<chapter_summaries>') < q.passages.index('<book_passages>')
    for n, s in enumerate(segments, 1):  # each summary's citation renumbered: [n] is its chapter's first passage
        assert f'In {s.title} the Bennets talk [{n}].' in q.passages
        assert q.excerpt.passages[n - 1] == s.passages[0] and q.places[n - 1].chapter == s.title
    current = [p for p in passages_read(novel, until) if p.chapter == segments[-1].chapter + 1]
    assert q.excerpt.passages[len(segments):] == tuple(current)  # the chapter being read, whole, numbered after
    assert f'[{len(segments) + 1}] (' in q.passages and f'[{len(q.excerpt.passages) + 1}] (' not in q.passages
    assert first_after(novel, position).text[:80] not in q.passages
    other = book_question(QUESTION, 'so-far', novel, position=position, budget=1500, room=replace(room, model='x'),
                          summaries=SoFarSummaries(provider, key, cache=cache))
    assert other.excerpt.scope == 'position'  # another model's summaries are not its own
    none = book_question(QUESTION, 'so-far', novel, position=position, budget=1500, room=room)
    assert 'The story so far makes them' in none.notices[0]


SUMMARIES_WINDOW = 8000  # tokens the model is said to read (Book AI's count): less than the text read at 10 %


def test_a_real_server_gets_the_summaries_and_the_chapter_and_nothing_after(tmp_path):
    """The sentinels after the place (in the chapter being read, at the next chapter, at the end) reach
    no request; the summaries and every paragraph of the chapter being read do."""
    from calibre_plugins.bookai.conversation.recap import SoFarSummaries
    from calibre_plugins.bookai.conversation.summaries import BookKey, SummaryCache
    from calibre_plugins.bookai.providers.context import ContextWindow
    from helpers.sentinels import bodies_with_sentinels, with_sentinels
    book, position = with_sentinels(read_epub(EPUB), 0.1)
    key, cache = BookKey('lib', 1, 'EPUB'), SummaryCache(str(tmp_path / 'summaries'))
    segments = keep_summaries(cache, key, book, position)
    until = read_until(book, position)
    current = [p.text for p in book.paragraphs if p.chapter == segments[-1].chapter + 1
               and p.start + len(p.text) <= until]
    with tiny_server(8, 65536, '--override-kv', 'llama.context_length=int:65536') as server, \
            RecordingProxy(server.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny'})
        provider.context_windows['tiny'] = ContextWindow(SUMMARIES_WINDOW, 'setting')  # as the reader would set it
        conv = Conversation([])
        room = book_text_room(provider, conv, QUESTION, scope='so-far')
        assert room is not None and room.model == 'tiny' and room.tokens < tokens_of(passages_read(book, until))
        q = book_question(QUESTION, 'so-far', book, position=position, room=room,
                          summaries=SoFarSummaries(provider, key, cache=cache))
        assert q.excerpt.scope == 'so-far' and 'go as their summaries' in q.notices[0]
        exchange = Exchange(conv, provider, q)
        for chunk in exchange.chunks():
            exchange.take(chunk)
        assert exchange.finish(None) == '' and conv.turns[-1].answered, conv.turns[-1].error
        body = proxy.chat_requests()[-1]
    sent = ' '.join(' '.join(m['content'] for m in body['messages']).split())
    assert current and all(' '.join(t.split()) in sent for t in current)
    assert all(f'In {s.title} the Bennets talk' in sent for s in segments)
    assert bodies_with_sentinels(proxy.received) == []
