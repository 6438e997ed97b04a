# License: GPLv3 Copyright: the Book AI developers
"""Chapter summaries (conversation/summaries.py) on the real novel, against a real llama-server
(the tiny model): each chapter read is summarized once per book and model, moving on one chapter
sends only that chapter, the chapter the reader is inside is summarized up to the place and
replaced when they move on, a "context too long" from the server splits a chapter into parts, Stop
keeps what was made;
and what is wrong said in words: a damaged summaries file (set aside, its summaries made again),
a model's answer that is empty, the request given back, or longer than a summary is (scripted: no
real model does those on demand)."""

import json
import os

import pytest

from calibre_plugins.bookai.conversation.summaries import (
    MAX_ENTRIES, MAX_SUMMARY_CHARS, SMALLER_NOTICE, SUMMARY_TOKENS, BadSummary, BookKey, BookSummaries, Summary,
    SummaryCache, chapter_segments, checked_summary, estimate_summaries, model_key, part_tokens, summarize,
)
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.providers.context import ContextWindow
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.peers import RecordingProxy, tiny_server
from helpers.scripted_server import Reply, ScriptedServer, sse

# the tiny model reads a character a token: a context for whole chapters, and short summaries
TINY_CONTEXT = 65536
TINY_ARGS = ('--override-kv', 'llama.context_length=int:65536')
TINY_TOKENS = 16
KEY = BookKey('library-id', 7, 'EPUB')
ABOUT = 'Pride and Prejudice by Jane Austen'


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def provider_at(url: str, window: int = 16000, model: str = 'tiny'):
    p = get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': model, 'temperature': 0.0})
    p.context_windows[model] = ContextWindow(window, 'setting')  # as the reader would set it
    return p


def start_of(novel, chapter: int) -> int:
    return novel.chapters[chapter].start


def sent_texts(proxy) -> list[str]:
    return [' '.join(m['content'] for m in r['messages']) for r in proxy.chat_requests()]


def test_once_per_book_and_model_and_moving_on_sends_only_the_new_chapter(tiny, novel, tmp_path):
    cache = SummaryCache(str(tmp_path / 'summaries'))
    most = part_tokens(16000)
    first = chapter_segments(novel, start_of(novel, 4) - 1, current=False)
    assert [s.chapter for s in first] == [0, 1, 2, 3] and all(s.complete for s in first)
    with RecordingProxy(tiny.base_url) as proxy:
        provider = provider_at(proxy.base_url)
        steps = []
        estimate = estimate_summaries(provider, 'tiny', first, most, ABOUT)
        run = summarize(provider, 'tiny', first, BookSummaries(cache, KEY), most, ABOUT,
                        progress=lambda *a: steps.append(a))
        assert (run.made, run.found, run.failed, run.error) == (4, 0, [], None)
        assert len(proxy.chat_requests()) == estimate.requests == 4 and estimate.local and estimate.cost is None
        assert steps[0] == (0, 4, first[0].title) and steps[-1] == (4, 4, '')
        body = proxy.chat_requests()[1]
        assert body['max_tokens'] == SUMMARY_TOKENS
        # the passages go numbered as the whole book numbers them, so that a summary's [n] keeps its place
        assert f'[{first[1].first}] (' in body['messages'][-1]['content']
        assert estimate.input_tokens == pytest.approx(sum(len(t) for t in sent_texts(proxy)) / 4, rel=0.02)

        again = summarize(provider, 'tiny', first, BookSummaries(cache, KEY), most, ABOUT)
        assert (again.made, again.found) == (0, 4) and len(proxy.chat_requests()) == 4  # nothing sent
        assert [again.summaries[i].text for i in range(4)] == [run.summaries[i].text for i in range(4)]

        moved = chapter_segments(novel, start_of(novel, 5) - 1, current=False)
        on = summarize(provider, 'tiny', moved, BookSummaries(cache, KEY), most, ABOUT)
        assert (on.made, on.found) == (1, 4)
        (sent,) = sent_texts(proxy)[4:]  # one request: chapter 4's text, no other's
        assert all(p.text.split('\n')[0][:60] in ' '.join(sent.split()) for p in moved[4].passages[:3])
        assert not any(p.text[:60] in sent for s in first for p in s.passages if len(p.text) > 60)
        assert estimate_summaries(provider, 'tiny', moved[4:], most).requests == 1

        other = provider_at(proxy.base_url, model='another-model')
        assert model_key(other, 'another-model') != model_key(provider, 'tiny')
        by_other = summarize(other, 'another-model', first[:1], BookSummaries(cache, KEY), most)
        assert (by_other.made, by_other.found) == (1, 0)  # per model


def test_stop_keeps_the_summaries_made(tiny, novel, tmp_path):
    """Stop (the run's CancelToken) during a run: Cancelled, and the summaries made before it are kept."""
    from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
    cache = SummaryCache(str(tmp_path / 'summaries'))
    segments = chapter_segments(novel, start_of(novel, 4) - 1, current=False)
    cancel = CancelToken()

    def progress(done, total, chapter):
        if done == 2:
            cancel.cancel()
    with pytest.raises(Cancelled):
        summarize(provider_at(tiny.base_url), 'tiny', segments, BookSummaries(cache, KEY), part_tokens(16000),
                  cancel=cancel, progress=progress)
    assert [s.chapter for s in BookSummaries(cache, KEY).summaries] == [0, 1]


def test_the_chapter_being_read_is_summarized_up_to_the_place_and_replaced(tiny, novel, tmp_path):
    cache = SummaryCache(str(tmp_path / 'summaries'))
    provider, most = provider_at(tiny.base_url), part_tokens(16000)
    chapter = novel.chapters[2]
    inside = [p for p in novel.paragraphs if p.chapter == 2]
    early = inside[len(inside) // 3].start + len(inside[len(inside) // 3].text)
    later = inside[2 * len(inside) // 3].start + len(inside[2 * len(inside) // 3].text)
    for until in (early, later):
        segments = chapter_segments(novel, until)
        current = segments[-1]
        assert current.chapter == 2 and not current.complete and current.end <= until
        run = summarize(provider, 'tiny', segments[-1:], BookSummaries(cache, KEY), most)
        assert run.made == 1
        kept = BookSummaries(cache, KEY).summaries
        assert [(s.chapter, s.complete, s.end) for s in kept] == [(2, False, current.end)]  # the earlier one replaced
    whole = chapter_segments(novel, start_of(novel, 3) - 1, current=False)[-1]
    assert whole.chapter == 2 and whole.complete and whole.title == ' '.join(chapter.title.split())
    summarize(provider, 'tiny', [whole], BookSummaries(cache, KEY), most)
    assert [(s.chapter, s.complete) for s in BookSummaries(cache, KEY).summaries] == [(2, True)]


def test_a_context_too_long_from_the_server_splits_the_chapter(novel, tmp_path):
    """The model says it reads 200,000 tokens; the server reads 4,096 (the tiny model's tokens are
    characters): llama-server's 400 exceed_context_size_error splits the chapter until its parts fit."""
    segment = chapter_segments(novel, start_of(novel, 4) - 1, current=False)[3]
    assert len(segment.passages) > 8 and sum(len(p.text) for p in segment.passages) > 8000
    with tiny_server(8, 4096) as server, RecordingProxy(server.base_url) as proxy:
        provider = provider_at(proxy.base_url, window=200_000)
        run = summarize(provider, 'tiny', [segment], BookSummaries(SummaryCache(str(tmp_path)), KEY),
                        part_tokens(200_000))
        sizes = [sum(len(m['content']) for m in json.loads(b)['messages']) for _m, path, b in proxy.received
                 if path.endswith('/chat/completions')]
    assert run.made == 1 and not run.failed and run.error is None, run
    assert SMALLER_NOTICE in run.notices
    assert len(sizes) > len(run.usage) >= 2  # some too long, then parts that fit, each summarized
    assert sum(size < 4096 for size in sizes) >= len(run.usage) and max(sizes) > 4096


def stream_of(*texts: str, finish: str = 'stop') -> Reply:
    events = [json.dumps({'choices': [{'index': 0, 'delta': {'content': t}, 'finish_reason': None}]}) for t in texts]
    events.append(json.dumps({'choices': [{'index': 0, 'delta': {}, 'finish_reason': finish}]}))
    return Reply(200, headers=[('Content-Type', 'text/event-stream')], chunks=sse(*events, '[DONE]'))


def test_answers_that_are_not_summaries_are_said_and_not_kept(novel, tmp_path):
    segments = chapter_segments(novel, start_of(novel, 3) - 1, current=False)[1:]  # chapters 1 and 2
    echo = segments[0].passages[0].text + ' ' + segments[0].passages[1].text
    cache = SummaryCache(str(tmp_path))
    replies = [stream_of(''), stream_of('   \n'), stream_of(echo),
               stream_of(*(['All of it, again and again. '] * 400), finish='length')]
    with ScriptedServer(replies) as s:
        provider = provider_at(s.url)
        kept = BookSummaries(cache, KEY)
        runs = [summarize(provider, 'tiny', [segment], kept, part_tokens(16000)) for segment in segments * 2]
    said = [r.failed for r in runs]
    assert all(len(f) == 1 for f in said) and all(r.made == 0 for r in runs), said
    assert 'with nothing' in said[0][0] and 'with nothing' in said[1][0]
    assert 'gave back the text it was sent' in said[2][0]
    assert f'ran past {MAX_SUMMARY_CHARS:,} characters' in said[3][0]
    assert BookSummaries(cache, KEY).summaries == [] and not os.path.exists(cache.file_of(KEY))


def test_what_is_kept_of_an_answer():
    sent = ['[3] (Chapter 1)\nIt is a truth universally acknowledged, that a single man in possession of a good '
            'fortune, must be in want of a wife.']
    assert checked_summary('Mr Bennet hears news [3, 9]. A ball [12]. \x1b[2JDone [4] .', 'Chapter 1', sent, 3, 4) == (
        'Mr Bennet hears news [3]. A ball. [2JDone [4].')
    with pytest.raises(BadSummary, match='gave back'):
        checked_summary('It is a truth universally acknowledged, that a single man in possession of a good fortune, '
                        'must be in want of a wife.', 'Chapter 1', sent, 3, 3)
    with pytest.raises(BadSummary, match='gave back'):
        checked_summary('<book_passages> [3] ...', 'Chapter 1', sent, 3, 3)
    with pytest.raises(BadSummary, match='ran past'):
        checked_summary('word ' * (MAX_SUMMARY_CHARS // 5 + 1), 'Chapter 1', sent, 3, 3)
    with pytest.raises(BadSummary, match='nothing'):
        checked_summary('\x00 \n', 'Chapter 1', sent, 3, 3)
    # a summary that quotes a line is still a summary
    assert checked_summary('Mrs Bennet says a single man in possession of a good fortune must want a wife, and '
                           'hopes Mr Bingley will marry one of her five daughters soon [3].', 'Chapter 1', sent, 3, 3)


def summary(n: int, chapter: int = 1, complete: bool = True, model: str = 'openai_compatible/tiny') -> Summary:
    return Summary(model, chapter, f'Chapter {chapter}', 1, 3, complete, 900, f'{n:032x}', f'Summary {n} [2].',
                   float(n + 1))


def test_the_summaries_file_is_bounded_dated_and_private(tmp_path):
    cache = SummaryCache(str(tmp_path / 's'))
    kept = BookSummaries(cache, KEY)
    for n in range(MAX_ENTRIES + 5):
        kept.summaries.append(summary(n, chapter=n))
    kept.keep(summary(MAX_ENTRIES + 5, chapter=0))
    back = BookSummaries(cache, KEY).summaries
    assert len(back) == MAX_ENTRIES and back[-1].text == f'Summary {MAX_ENTRIES + 5} [2].' and back[0].made == 7.0
    path = cache.file_of(KEY)
    assert oct(os.stat(path).st_mode & 0o777) == '0o600' and oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == \
        '0o700'
    data = json.loads(open(path, encoding='utf-8').read())
    assert data['kind'] == 'bookai-summaries' and data['written'] > 1e9


@pytest.mark.parametrize('damage', ['not json', 'wrong type', 'a summary too long', 'not a summaries file',
                                    'NaN date'])
def test_a_damaged_summaries_file_is_set_aside_and_made_again(tmp_path, damage):
    cache = SummaryCache(str(tmp_path / 's'))
    BookSummaries(cache, KEY).keep(summary(1))
    path = cache.file_of(KEY)
    data = json.loads(open(path, encoding='utf-8').read())
    if damage == 'not json':
        raw = open(path, 'rb').read()[:-20]
    else:
        if damage == 'wrong type':
            data['summaries'][0]['first'] = '1'
        elif damage == 'a summary too long':
            data['summaries'][0]['text'] = 'x' * 70_000
        elif damage == 'not a summaries file':
            data['kind'] = 'something else'
        else:
            data['summaries'][0]['made'] = float('nan')
        raw = json.dumps(data).encode()
    with open(path, 'wb') as f:
        f.write(raw)
    kept = BookSummaries(cache, KEY)
    assert kept.summaries == [] and cache.set_aside_as == [path + '.damaged']
    assert open(path + '.damaged', 'rb').read() == raw  # kept as it was, for a look
    run = summarize(provider_at('http://127.0.0.1:9'), 'tiny', [], kept, 1000)
    assert run.notices and 'set aside' in run.notices[0] and path + '.damaged' in run.notices[0]
    kept.keep(summary(2))
    assert [s.text for s in BookSummaries(cache, KEY).summaries] == ['Summary 2 [2].']  # made again
    assert open(path + '.damaged', 'rb').read() == raw
