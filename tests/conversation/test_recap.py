# License: GPLv3 Copyright: the Book AI developers
"""The story so far (conversation/recap.py) on the real novel, against a real llama-server (the
tiny model): sentinel text put right after the reader's place, at the start of the next chapter
and at the end of the book reaches no request, on every path (chapter summaries, the summary of
the chapter being read, the recap from the whole text, from summaries, with the chapter being
read cut, since an earlier place, and a series' earlier books); citations map back to places; a
"context too long" from the server falls back to summaries, in words."""

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.question import Room
from calibre_plugins.bookai.conversation.recap import (
    RECAP_TOO_LONG, NoRecap, RecapJob, book_source, needs_consent, plan_one, recap_question, remember_consent,
    series_sources,
)
from calibre_plugins.bookai.conversation.summaries import (
    BookKey, BookSummaries, SummaryCache, SummaryRun, chapter_segments, part_tokens, summarize,
)
from calibre_plugins.bookai.core.errors import ContextTooLong
from calibre_plugins.bookai.grounding.citations import citations
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.so_far import passages_read, read_until
from calibre_plugins.bookai.providers.context import ContextWindow
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.books import make_epub
from helpers.novel import EPUB
from helpers.peers import RecordingProxy, tiny_server
from helpers.sentinels import SENTINELS, bodies_with_sentinels, with_sentinels

TINY_CONTEXT = 65536
TINY_ARGS = ('--override-kv', 'llama.context_length=int:65536')
TINY_TOKENS = 16
KEY = BookKey('library-id', 3, 'EPUB')


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


@pytest.fixture(scope='module')
def guarded(novel):
    """The novel with the sentinels, and the place just before the first."""
    return with_sentinels(novel, 0.02)


def provider_at(url: str, window: int, model: str = 'tiny'):
    p = get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': model, 'temperature': 0.0})
    p.context_windows[model] = ContextWindow(window, 'setting')  # as the reader would set it
    return p


def recap(job: RecapJob, conv: Conversation) -> Exchange:
    job.prepare()
    job.summarize()
    exchange = Exchange(conv, job.provider, job.question(), use_model=job.model)
    for chunk in exchange.chunks():
        exchange.take(chunk)
    exchange.finish(None)
    return exchange


def window_for(source, wanted) -> int:
    """The smallest context window (in steps of 100 tokens) whose recap plan is as wanted: planned
    without sending anything (the window as the reader would set it, the model as configured)."""
    for window in range(1000, 60000, 100):
        job = RecapJob(provider_at('http://127.0.0.1:9', window), Conversation([]), [source],
                       cache=SummaryCache('/nonexistent/summaries'))
        try:
            if wanted(job.prepare()):
                return window
        except NoRecap:  # too small for any
            continue
    raise AssertionError('no window plans the recap so')


def test_the_sentinels_are_where_they_should_be(guarded):
    book, position = guarded
    until = read_until(book, position)
    texts = [p.text for p in book.paragraphs]
    first = texts.index(SENTINELS[0])
    assert book.paragraphs[first].start > until >= book.paragraphs[first - 1].start + len(texts[first - 1]) - 1
    assert book.paragraphs[first].chapter == book.paragraphs[first - 1].chapter  # inside the chapter being read
    second = texts.index(SENTINELS[1])
    assert book.paragraphs[second].chapter == book.paragraphs[first].chapter + 1
    assert book.paragraphs[second - 1].chapter == book.paragraphs[first].chapter
    assert texts[-1] == SENTINELS[2]
    assert not any(s in p.text for p in passages_read(book, until) for s in SENTINELS)


def test_nothing_after_the_place_reaches_the_model_on_any_path(tiny, guarded, tmp_path):
    book, position = guarded
    until = read_until(book, position)
    cache = SummaryCache(str(tmp_path / 'summaries'))
    source = book_source(KEY, book, position, 'Pride and Prejudice by Jane Austen')
    modes = {}
    with RecordingProxy(tiny.base_url) as proxy:
        # the chapters read, and the chapter being read up to the place
        segments = chapter_segments(book, until)
        assert not segments[-1].complete
        provider = provider_at(proxy.base_url, 16000)
        run = summarize(provider, 'tiny', segments, BookSummaries(cache, KEY), part_tokens(16000))
        assert run.made == len(segments) and not run.failed
        # the story so far: from the whole text, from summaries with the chapter being read in full, and cut
        windows = {'text': window_for(source, lambda plan: plan.mode == 'text'),
                   'full': window_for(source, lambda plan: plan.mode == 'summaries' and all(
                       s.complete for _i, s in plan.segments) and plan.detail[0].chapter == segments[-1].chapter),
                   'cut': window_for(source, lambda plan: plan.segments and not plan.segments[-1][1].complete
                                     and plan.detail)}
        for name, window in windows.items():
            conv = Conversation([])
            job = RecapJob(provider_at(proxy.base_url, window), conv, [source], cache=cache)
            exchange = recap(job, conv)
            assert exchange.answer.failed is None and exchange.answer.text, exchange.answer.failed
            modes[name] = (job.plan.mode, [s.complete for _i, s in job.plan.segments], len(job.plan.detail))
        # since an earlier place
        conv = Conversation([])
        since = RecapJob(provider_at(proxy.base_url, windows['text']), conv, [source], 'since', read_until(book, 0.008),
                         cache=cache)
        exchange = recap(since, conv)
        assert exchange.answer.failed is None and since.plan.segments and since.plan.detail
        sent = proxy.chat_requests()
    assert modes['text'][:2] == ('text', [])
    assert modes['full'][0] == 'summaries' and all(modes['full'][1])  # the chapter being read in full
    assert modes['cut'][0] == 'summaries' and modes['cut'][1][-1] is False  # ... its beginning summarized
    assert 0 < modes['cut'][2] < modes['full'][2]
    assert len(sent) > len(segments) + 4
    assert bodies_with_sentinels(proxy.received) == []
    before = book.paragraphs[[p.text for p in book.paragraphs].index(SENTINELS[0]) - 1].text
    assert any(' '.join(before.split())[:80] in m['content'] for r in sent for m in r['messages'])  # up to the place


def test_a_recap_from_summaries_cites_places_of_the_book(novel):
    """A summary's [n] (the book's passage n) becomes the number sent with it, whose Place is passage n's."""
    position = (novel.chapters[4].start + 2000) / novel.length
    source = book_source(KEY, novel, position)
    plan = plan_one(source, Room(8000, 3000), part_tokens(8000))
    assert plan.mode == 'summaries' and [s.chapter for _i, s in plan.segments] == [0, 1, 2, 3]
    run = SummaryRun()
    chapter_two = plan.segments[2][1]
    n = chapter_two.first + 2
    run.summaries = {i: kept_summary(s, f'{s.title} happens [{s.first}].') for i, (_j, s) in enumerate(plan.segments)}
    run.summaries[2] = kept_summary(chapter_two, f'Mr Bennet visits [{n}, {chapter_two.last + 50}]. Nothing [0].')
    question = recap_question(plan, [source], run)
    assert '<chapter_summaries>' in question.passages and 'Mr Bennet visits [3]. Nothing .' in question.passages
    assert question.spoiler_safe and question.excerpt is not None
    cited = [s.passage(s.first) for _i, s in plan.segments]
    cited[2] = chapter_two.passage(n)
    assert list(question.excerpt.passages[:4]) == cited and len(question.places) == len(question.excerpt.passages)
    place = question.places[2]
    assert place.chapter == novel.chapters[2].title and place.position == pytest.approx(cited[2].start / novel.length)
    assert place.cfi.startswith('epubcfi(/')
    detail = question.excerpt.passages[4:]
    assert detail == plan.detail and detail[-1].end <= read_until(novel, position)
    assert f'[5] ({novel.chapters[4].title})' in question.passages  # the chapter being read, numbered after
    found = citations('He calls on Mr Bingley [3]; then the ball [5].', question.excerpt)
    assert [(c.number, c.chapter) for c in found] == [(3, novel.chapters[2].title), (5, novel.chapters[4].title)]
    with pytest.raises(NoRecap):
        plan_one(book_source(KEY, novel, 0.0), Room(8000, 3000), 1000)


def kept_summary(segment, text):
    from calibre_plugins.bookai.conversation.summaries import Summary
    return Summary('openai_compatible/tiny', segment.chapter, segment.title, segment.first, segment.last,
                   segment.complete, segment.end, segment.digest, text, 1.0)


def test_a_context_too_long_falls_back_to_summaries_in_words(novel, tmp_path):
    """The service says it reads 200,000 tokens, the server reads 4,096: the whole text fails, then the
    recap is made from summaries, with less each time the server says it is too long, and said so."""
    source = book_source(KEY, novel, 0.025)
    with tiny_server(8, 4096) as server:
        provider = provider_at(server.base_url, 200_000)
        conv = Conversation([])
        job = RecapJob(provider, conv, [source], cache=SummaryCache(str(tmp_path)))
        assert job.prepare().mode == 'text'
        said = []
        for _attempt in range(8):
            job.summarize()
            exchange = Exchange(conv, provider, job.question(), use_model=job.model)
            for chunk in exchange.chunks():
                exchange.take(chunk)
            exchange.finish(None)
            failed = exchange.answer.failed
            if failed is None or not isinstance(failed.error, ContextTooLong):
                break
            said.append(job.fall_back())
            assert said[-1]
    assert exchange.answer.failed is None and exchange.answer.text, exchange.answer.failed
    assert said[0] == RECAP_TOO_LONG and job.plan.mode == 'summaries'
    assert conv.turns[-1].answer and len(conv.turns) == 1  # the failed turns replaced by the one that was answered


def test_consent_is_asked_once_per_book_of_an_online_provider(prefs):
    online = get_provider('grok', settings={'base_url': 'http://127.0.0.1:9/v1', 'model': 'grok-4'})
    local = provider_at('http://127.0.0.1:9', 8000)
    prefs['book_text_consent'] = []
    assert not needs_consent(local, ['lib:1']) and needs_consent(online, ['lib:1'])
    remember_consent(online, ['lib:1'])
    assert not needs_consent(online, ['lib:1']) and needs_consent(online, ['lib:1', 'lib:2'])
    assert prefs['book_text_consent'] == ['lib:1|grok']  # as the windows keep it (gui/passages.py)
    job = RecapJob(online, Conversation([]), [book_source(KEY, read_epub(EPUB), 0.1)])
    assert job.consent_keys == ('library-id:3#so-far',)  # everything read: a consent of its own


SAGA = [  # (title, series index, chapters), the second is being read
    ('The First Voyage', 1.0, ['Captain Odile Marchetti sailed the Albatross out of Port Varne at dawn.',
                               'A storm broke the mainmast; the crew mended it with timber from a wreck.']),
    ('The Second Voyage', 2.0, ['ZQX SENTINEL OF THE CURRENT BOOK: the cook was a spy.']),
    ('The Third Voyage', 3.0, ['ZQX SENTINEL OF A LATER BOOK: the captain retires to a lighthouse.']),
]


def test_previously_in_the_series_sends_the_earlier_books_only(tiny, sandbox, tmp_path):
    lib = None
    for title, index, chapters in SAGA:
        path = make_epub(tmp_path / f'{index}.epub',
                         [f'<h2>Chapter {n}</h2><p>{text}</p><p>{text} The gulls cried over the harbour.</p>'
                          for n, text in enumerate(chapters, 1)])
        lib = sandbox.make_library(path) if lib is None else lib
        if index > 1:
            r = sandbox.run(['calibredb', '--with-library', lib, 'add', path])
            assert r.returncode == 0, r
        n = int(index)
        r = sandbox.run(['calibredb', '--with-library', lib, 'set_metadata', str(n), '--field', f'title:{title}',
                         '--field', 'series:The Saga', '--field', f'series_index:{index}'])
        assert r.returncode == 0, r
    r = sandbox.run(['calibredb', '--with-library', lib, 'add', '--empty', '--title', 'The Lost Voyage', '--series',
                     'The Saga', '--series-index', '1.5'])
    assert r.returncode == 0, r
    library = BookLibrary.open(str(lib))
    try:
        series, sources, left_out = series_sources(library.db, 2)
        assert series == 'The Saga' and [s.title for s in sources] == ['The First Voyage']
        assert left_out and 'The Lost Voyage' in left_out[0]
        with RecordingProxy(tiny.base_url) as proxy:
            conv = Conversation.about(library, [2])
            job = RecapJob(provider_at(proxy.base_url, 16000), conv, sources, 'series', series=series,
                           title='The Second Voyage', cache=SummaryCache(str(tmp_path / 'summaries')))
            exchange = recap(job, conv)
        assert exchange.answer.failed is None
        assert job.plan.kind == 'series' and job.plan.segments and job.run.made == len(job.plan.segments)
        question = conv.turns[-1]
        assert all(p.book_id == 1 and p.fmt == 'EPUB' and p.chapter.startswith('The First Voyage: ')
                   for p in question.places)
        assert bodies_with_sentinels(proxy.received) == []
        assert sum('Odile Marchetti' in r['messages'][-1]['content'] for r in proxy.chat_requests()) == 1
        assert '## The First Voyage: ' in proxy.chat_requests()[-1]['messages'][-1]['content']
        assert series_sources(library.db, 1)[1] == []  # the first book has none before it
    finally:
        library.db.close()
