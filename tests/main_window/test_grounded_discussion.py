# License: GPLv3 Copyright: the Book AI developers
"""The book's own text in the discussion window, offscreen, against a real llama-server,
a real calibre library and calibre's real job manager: the Book text row, the saved
reading position as the limit, consent before book text goes online, citations as
links to their passages, and books in other formats converted as a calibre job."""

import io
import json
import os

import pytest
from qt.core import QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.conversation.prompts import passage_texts
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import stand_in_gui, wait_until, when_modal
from helpers.peers import LlamaServer, RecordingProxy, direct_text, use_online, use_server
from helpers.scripted_server import ScriptedServer

QUESTION = 'How do I convert an ebook to another format?'


TINY_TOKENS, TINY_CONTEXT = 24, 16384


@pytest.fixture(scope='module')
def gui(qapp):
    return stand_in_gui(job_manager=True)


def open_library(path, tmp_path):
    from calibre.library import db
    return BookLibrary(db(str(path)).new_api, History(str(tmp_path / 'history')))


@pytest.fixture
def books(sandbox, tmp_path):
    """The Quick Start Guide (EPUB), and it again as AZW3 only."""
    azw3 = sandbox.convert(quick_start_epub(), tmp_path / 'guide.azw3')
    path = sandbox.make_library(quick_start_epub())
    r = sandbox.run(['calibredb', '--with-library', path, 'add', '--duplicates', azw3])
    assert r.returncode == 0, r
    return open_library(path, tmp_path)


def window(gui, books, ids=(1,)):
    w = DiscussionWindow(books, Conversation.about(books, list(ids)), gui)
    w.show()
    return w


def ask(w, question=QUESTION):
    w.panel.question.setPlainText(question)
    w.panel.send_button.click()
    wait_until(lambda: not w.panel.streaming)
    return w.conv.turns[-1] if w.conv.turns else None


def save_reading_position(books, book_id, fraction):
    """Keep a last-read place as calibre's E-book viewer does (tests/hosts/test_viewer_panel.py
    has the real viewer do it): a CFI, here the place of the paragraph at fraction of the book."""
    from calibre_plugins.bookai.grounding.reading_position import viewer_annotations_file
    path = books.db.format_abspath(book_id, 'EPUB')
    book = read_epub(path)
    cfi = book.cfi_at(int(fraction * book.length))
    annotations = viewer_annotations_file(path)
    os.makedirs(os.path.dirname(annotations), exist_ok=True)
    with open(annotations, 'w') as f:
        json.dump([{'pos': cfi, 'pos_type': 'epubcfi', 'timestamp': '2026-12-01T10:00:00+00:00',
                    'type': 'last-read'}], f)
    return book, cfi


def test_book_text_is_off_until_the_reader_turns_it_on(qapp, prefs, gui, books, tiny):
    use_server(prefs, tiny.base_url)
    prefs['book_text'] = False
    w = window(gui, books)
    row = w.panel.scope_row
    assert row is not None and row.scope == 'metadata'
    assert [row.box.itemData(i) for i in range(row.box.count())] == [
        'metadata', 'chapter', 'position', 'so-far', 'book']
    assert 'details' in row.note.text()
    w.close()
    prefs['book_text'] = True  # on for every book: up to the reader's position
    w = window(gui, books)
    assert w.panel.scope_row.scope == 'position' and 'stays on this computer' in w.panel.scope_row.note.text()
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))  # this book: the whole book
    w.close()
    w = window(gui, books)
    assert w.panel.scope_row.scope == 'book'
    assert prefs['book_scopes'] == {f'{books.library_id}:1': 'book'}
    w.close()
    w = window(gui, books, (1, 2))  # two books: no book text
    assert w.panel.scope_row is None
    w.close()


def test_passages_stop_at_the_saved_reading_position(qapp, prefs, gui, books, tiny, artifacts):
    use_server(prefs, tiny.base_url)
    book, cfi = save_reading_position(books, 1, 0.4)
    w = window(gui, books)
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('position'))
    turn = ask(w)
    assert turn is not None and not turn.error, w.panel.chat.toPlainText()[-600:]
    assert turn.passages and turn.spoiler_safe and turn.places
    limit = book.fraction(book.offset_of_cfi(cfi))
    assert 0.35 < limit <= 0.41
    assert all(p.position < limit for p in turn.places)
    texts = passage_texts(turn.passages)
    assert len(texts) == len(turn.places)
    # nothing after the position is in what was sent: every passage ends before it
    for n, text in texts.items():
        start = next(p.start for p in book.paragraphs if text.startswith(p.text))
        assert start + len(text) <= limit * book.length + 1
    # the messages sent: the rule in the system message, the passages before the question
    sent = Conversation.about(books, [1]).messages_for(QUESTION, turn.passages, True)
    assert 'Do not reveal anything that happens later' in sent[0].text
    assert sent[1].text.startswith('<book_passages>\n[1] (') and QUESTION in sent[1].text.rsplit('</book_passages>', 1)[1]
    # what the server answers to exactly those messages is what the window shows
    assert turn.answer == direct_text(tiny, sent)
    assert w.grab().save(str(artifacts / 'grounded-discussion.png'))
    w.close()


@pytest.mark.parametrize('scope', ['position', 'chapter'])
def test_without_a_saved_position_nothing_is_sent(qapp, prefs, gui, books, scope):
    """The rule of grounding.scopes (NoPlace), as in the command line and the viewer's panel."""
    with ScriptedServer([]) as server:  # records every request: none may ask for an answer
        use_server(prefs, server.url)
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData(scope))
        assert ask(w, 'What happens next?') is None
        assert not [r for r in server.received if r['path'].endswith('/chat/completions')]
    assert 'does not know where you are in this book' in w.panel.chat.toPlainText()
    assert 'Nothing was sent.' in w.panel.chat.toPlainText()
    assert w.panel.question.toPlainText() == 'What happens next?'  # the question is not lost
    w.close()


def test_citations_link_to_their_passages(qapp, prefs, gui, books, tiny, artifacts):
    use_server(prefs, tiny.base_url)
    w = window(gui, books)
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
    turn = ask(w)
    assert turn.places and not turn.spoiler_safe
    turn.answer = 'Converting is explained in [1], and not in [42].'  # as a model that cites would write
    w.panel.show_conversation()
    html = w.panel.chat.toHtml()
    assert 'bookai:cite/0/1' in html and 'bookai:cite/0/42' not in html and '42?' in w.panel.chat.toPlainText()
    shown = []

    def check(d):
        shown.append((d.windowTitle(), d.text.toPlainText()))
        assert d.grab().save(str(artifacts / 'citation.png'))
        d.open_button.click()
    when_modal(check)
    w.panel.chat.on_link(QUrl('bookai:cite/0/1'))
    assert shown and shown[0][0] == 'Passage 1' and shown[0][1] == passage_texts(turn.passages)[1]
    (book_id, fmt, open_at), = gui.iactions['View'].opened
    assert (book_id, fmt) == (1, 'EPUB') and open_at == turn.places[0].cfi and open_at.startswith('epubcfi(/')
    book = read_epub(books.db.format_abspath(1, 'EPUB'))
    at = book.offset_of_cfi(open_at)
    assert passage_texts(turn.passages)[1].startswith(next(p.text for p in book.paragraphs if p.start == at))
    gui.iactions['View'].opened.clear()
    w.close()


def test_an_answer_that_cites_nothing_links_the_passages_it_repeats(qapp, prefs, gui, books, tiny):
    use_server(prefs, tiny.base_url)
    w = window(gui, books)
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
    turn = ask(w)
    assert len(turn.places) >= 2
    # as a small local model writes: the words of passage 2, no [n]
    turn.answer = 'Here is how: ' + ' '.join(passage_texts(turn.passages)[2].split()[:16]) + '.'
    w.panel.show_conversation()
    text, html = w.panel.chat.toPlainText(), w.panel.chat.toHtml()
    assert 'The model cited no passage; its answer repeats the words of [2].' in text, text
    assert 'bookai:cite/0/2' in html
    turn.answer += ' As [1] says.'  # a citation of its own: nothing is guessed
    w.panel.show_conversation()
    assert 'cited no passage' not in w.panel.chat.toPlainText()
    w.close()


def test_consent_before_book_text_goes_to_an_online_provider(qapp, prefs, gui, books, tiny):
    use_server(prefs, tiny.base_url)
    prefs['providers'] = dict(prefs['providers'], openrouter={'base_url': tiny.base_url + '/v1', 'model': 'tiny'})
    prefs['provider'] = 'openrouter'
    prefs['book_text_consent'] = []
    from calibre_plugins.bookai.settings.secrets import secret_store
    secret_store().set('openrouter', 'api_key', 'sk-or-test-key')
    try:
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
        assert 'before they are sent' in w.panel.scope_row.note.text()
        seen = []

        def answer(accept, dont_ask=False):
            def act(d):
                seen.append((d.summary.text(), d.view.toPlainText(), d.dont_ask is not None))
                if dont_ask:
                    d.dont_ask.setChecked(True)
                (d.accept if accept else d.reject)()
            when_modal(act)
        answer(False)
        assert ask(w) is None  # cancelled: nothing sent, the question back in the box
        assert w.panel.question.toPlainText() == QUESTION
        summary, shown, has_dont_ask = seen[0]
        assert 'passages of the book' in summary and has_dont_ask
        assert '<book_passages>\n[1] (' in shown and 'sk-or-test-key' not in shown
        answer(True, dont_ask=True)
        turn = ask(w)
        assert turn is not None and turn.passages and len(seen) == 2
        assert prefs['book_text_consent'] == [f'{books.library_id}:1|openrouter']
        turn = ask(w, 'And PDF?')  # not asked again for this book and provider
        assert len(seen) == 2 and turn.question == 'And PDF?' and turn.passages
        assert 'without asking' in w.panel.scope_row.note.text()
        w.close()
    finally:
        secret_store().set('openrouter', 'api_key', '')


def test_other_formats_are_read_through_a_calibre_job(qapp, prefs, gui, books, tiny):
    use_server(prefs, tiny.base_url)
    assert books.db.formats(2) == ('AZW3',)
    jobs_before = len(gui.job_manager.jobs)
    w = window(gui, books, (2,))
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
    turn = ask(w)
    assert turn is not None and turn.passages and not turn.error
    jobs = gui.job_manager.jobs[jobs_before:]
    assert [j.description for j in jobs] == ['Book AI: reading the text of Quick Start Guide']
    assert not jobs[0].failed and 'Conversion' in ' '.join(p.chapter for p in turn.places) + turn.passages
    w.close()
    w = window(gui, books, (2,))  # read once: from the cache now, no second job
    assert ask(w).passages and len(gui.job_manager.jobs) == jobs_before + 1
    w.close()


def test_stop_while_the_book_is_converted(qapp, prefs, gui, books, tiny):
    use_server(prefs, tiny.base_url)
    from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
    TextCache(default_folder()).drop(books.library_id, 2)
    w = window(gui, books, (2,))
    w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
    w.panel.question.setPlainText(QUESTION)
    w.panel.send_button.click()
    assert w.panel.streaming and w.panel.send_button.text() == '&Stop'
    assert 'Reading the text of the book' in w.panel.chat.toPlainText()
    wait_until(lambda: w.panel.grounding.source.job is not None)  # not in the cache: converted in a job
    job = w.panel.grounding.source.job
    w.panel.send_button.click()  # Stop
    assert not w.panel.streaming and 'Stopped. Nothing was sent.' in w.panel.chat.toPlainText()
    wait_until(lambda: job.duration is not None)
    assert job.killed and not w.conv.turns
    w.close()


def test_passages_ranked_by_meaning_with_a_local_provider(qapp, prefs, gui, books):
    """With ranking by meaning on, the passages sent are the fusion of BM25 and the provider's
    embeddings (llama-server's, for real), made once for the book; the provider is local."""
    from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, embed_question
    from calibre_plugins.bookai.grounding.index import Index, passages
    from calibre_plugins.bookai.grounding.scopes import excerpt
    from calibre_plugins.bookai.providers.registry import get_provider
    with LlamaServer('tiny', alias='tiny', ctx=16384,
                     extra_args=('--temp', '0', '-n', '16', '--embeddings', '--pooling', 'mean',
                                 '--ubatch-size', '2048', '--batch-size', '2048')) as server:
        use_server(prefs, server.base_url)
        prefs['retrieval'] = 'embeddings'
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
        turn = ask(w)
        assert turn is not None and turn.passages and turn.answer and not turn.error
        assert 'ranked by meaning' not in w.panel.chat.toPlainText()
        made = w.panel.grounding.source.loaded.meaning
        assert made is not None and len(made) == len(w.panel.grounding.source.loaded.index.passages)
        # the same ranking, made here directly
        book = read_epub(books.db.format_abspath(1, 'EPUB'))
        index = Index(passages(book))
        provider = get_provider('openai_compatible')
        ei = EmbeddingIndex.build(provider, index.passages)
        expected = excerpt(book, 'book', QUESTION, None, '', prefs['book_text_budget'], index, ei,
                           embed_question(provider, ei, QUESTION))
        assert [p.position for p in turn.places] == [p.position for p in expected.places]
        assert [p.position for p in turn.places] != [p.position for p in excerpt(
            book, 'book', QUESTION, None, '', prefs['book_text_budget'], index).places]
        turn = ask(w, 'And PDF?')  # the book's passages were embedded once: now only the question
        assert turn.passages and w.panel.grounding.source.loaded.meaning is made
        w.close()


def test_the_window_and_the_command_line_send_the_same_request(qapp, prefs, gui, books):
    """One turn for every way in (issue 27): with ranking by meaning on and the reader's own "Book
    text per question, at most", the discussion window and `ask` send byte-identical requests
    (the passages embedded, the question embedded, the chat) to the same real llama-server,
    recorded on their way to it."""
    from calibre_plugins.bookai import cli
    from calibre_plugins.bookai.core.messages import estimated_tokens, Message, Role
    with LlamaServer('tiny', alias='tiny', ctx=16384,
                     extra_args=('--temp', '0', '-n', '16', '--embeddings', '--pooling', 'mean',
                                 '--ubatch-size', '2048', '--batch-size', '2048')) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        prefs['retrieval'] = 'embeddings'
        prefs['book_text_budget'] = 600  # not the default (1,500): the command line must read it too
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
        turn = ask(w)
        assert turn is not None and turn.passages and not turn.error
        w.close()
        from_window = list(proxy.received)
        proxy.received.clear()
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(['ask', '--library', books.db.backend.library_path, '--book', '1', '--scope', 'book',
                         '--prompt', QUESTION], stdout=out, stderr=err)
        assert code == 0, err.getvalue()
        from_cli = list(proxy.received)
    embedded = [r for r in from_window if r[1].endswith('/embeddings')]
    assert len(embedded) >= 2  # the book's passages (in batches), then the question: ranked by meaning
    assert from_cli == from_window  # the same requests, byte for byte, in the same order
    (chat,) = [json.loads(body) for _m, path, body in from_cli if path.endswith('/chat/completions')]
    passages = next(m['content'] for m in chat['messages'] if '<book_passages>' in m['content'])
    assert estimated_tokens([Message(Role.USER, passages)]) <= 600 + 100  # the reader's budget, and the question


def test_ranking_by_meaning_that_fails_falls_back_to_words(qapp, prefs, gui, books):
    """A server that cannot embed the passages (llama-server's default batch is too small for the tiny
    model's long passages): said in words, and the passages are ranked by their words."""
    with LlamaServer('tiny', alias='tiny', ctx=16384,
                     extra_args=('--temp', '0', '-n', '16', '--embeddings', '--pooling', 'mean')) as server:
        use_server(prefs, server.base_url)
        prefs['retrieval'] = 'embeddings'
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('book'))
        turn = ask(w)
        assert turn.passages and turn.answer and not turn.error
        assert 'could not be ranked by meaning' in w.panel.chat.toPlainText()
        assert w.panel.grounding.source.loaded.meaning is None
        w.close()


def test_everything_read_asks_its_own_consent_and_goes_once(qapp, prefs, gui, books):
    """"Everything up to where I am" to a provider not on this computer (Grok's wire, answered by
    llama-server as "grok-3", whose window the dated table has): the reader's consent for passages
    does not cover it; What will be sent says its tokens; then every paragraph read goes, none after
    the place, and the next question of the conversation does not send it again."""
    from calibre_plugins.bookai.conversation.prompts import PASSAGES_ABOVE
    from calibre_plugins.bookai.settings.secrets import secret_store
    with LlamaServer('tiny', alias='grok-3', ctx=8192, extra_args=('--temp', '0', '-n', '8')) as server, \
            RecordingProxy(server.base_url) as proxy:
        book, cfi = save_reading_position(books, 1, 0.08)
        until = book.offset_of_cfi(cfi)
        read = [' '.join(p.text.split()) for p in book.paragraphs if p.start + len(p.text) <= until]
        after = next(' '.join(p.text.split()) for p in book.paragraphs if p.start + len(p.text) > until)
        use_online(prefs, proxy.base_url, (f'{books.library_id}:1|grok',))  # passages: yes, without asking
        try:
            w = window(gui, books)
            w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('so-far'))
            assert 'before they are sent' in w.panel.scope_row.note.text()
            seen = []

            def act(d):
                seen.append(d.summary.text())
                d.dont_ask.setChecked(True)
                d.accept()
            when_modal(act)
            turn = ask(w, 'What has happened so far?')
            assert turn is not None and turn.answered, w.panel.chat.toPlainText()[-600:]
            assert len(seen) == 1 and 'About ' in seen[0] and 'tokens' in seen[0]
            assert f'{books.library_id}:1#so-far|grok' in prefs['book_text_consent']
            assert 'Everything up to where you are goes with this question' in w.panel.chat.toPlainText()
            sent = ' '.join(' '.join(m['content'] for m in proxy.chat_requests()[-1]['messages']).split())
            assert read and all(text in sent for text in read) and after[:60] not in sent
            first = proxy.chat_requests()[-1]['messages']
            turn = ask(w, 'Who is who?')
            assert turn is not None and turn.answered and len(seen) == 1  # not asked again
            again = proxy.chat_requests()[-1]['messages']
            assert again[:2] == first[:2]  # the same bytes first: what a provider's cache keeps
            assert again[-1]['content'].startswith(PASSAGES_ABOVE)
            assert sum(m['content'].count(read[-1]) for m in again) == 1
            w.close()
        finally:
            secret_store().set('grok', 'api_key', '')


def test_everything_read_from_summaries_the_same_from_the_window_and_the_command_line(qapp, prefs, gui, sandbox,
                                                                                      tmp_path):
    """"Everything up to where I am" when the text read is more than the model reads at once (what
    llama-server says at /props): the summaries kept for the earlier chapters, numbered, with the chapter
    being read in full; the discussion window and `ask --scope so-far` send the same chat request, byte
    for byte, and the sentinel right after the place is in neither."""
    from calibre_plugins.bookai import cli
    from calibre_plugins.bookai.conversation.summaries import (
        BookKey, BookSummaries, Summary, SummaryCache, chapter_segments,
    )
    from helpers.sentinels import SENTINELS, bodies_with_sentinels, epub_with_sentinel
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.07)
    books = open_library(sandbox.make_library(path), tmp_path)
    book = read_epub(books.db.format_abspath(1, 'EPUB'))
    at = next(p.start for p in book.paragraphs if p.text == SENTINELS[0])
    _book, cfi = save_reading_position(books, 1, at / book.length)
    until = book.offset_of_cfi(cfi)
    kept = BookSummaries(SummaryCache(), BookKey(books.library_id, 1, 'EPUB'))
    segments = chapter_segments(book, until, current=False)
    for s in segments:
        kept.keep(Summary('openai_compatible/tiny', s.chapter, s.title, s.first, s.last, True, s.end, s.digest,
                          f'In {s.title} the Bennets talk [{s.first}].', 1.0))
    with LlamaServer('tiny', alias='tiny', ctx=12288, extra_args=('--temp', '0', '-n', '8')) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('so-far'))
        turn = ask(w, 'What has happened so far?')
        assert turn is not None and turn.answered, w.panel.chat.toPlainText()[-600:]
        assert f'the {len(segments)} earlier chapters go as their summaries' in w.panel.chat.toPlainText()
        w.close()
        from_window = proxy.chat_requests()[-1]
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(['ask', '--library', books.db.backend.library_path, '--book', '1', '--scope', 'so-far',
                         '--prompt', 'What has happened so far?'], stdout=out, stderr=err)
        assert code == 0, err.getvalue()
        from_cli = proxy.chat_requests()[-1]
        received = list(proxy.received)
    assert len(proxy.chat_requests()) == 2 and from_cli == from_window
    sent = from_cli['messages'][-1]['content']
    assert sent.index('<chapter_summaries>') < sent.index('<book_passages>')
    assert all(f'In {s.title} the Bennets talk [{n}].' in sent for n, s in enumerate(segments, 1))
    assert f'[{len(segments) + 1}] (' in sent  # the chapter being read, numbered after the summaries' passages
    assert bodies_with_sentinels(received) == []


def test_the_kept_summaries_and_xray_reach_the_lookups_read_off_the_gui_thread(qapp, prefs, gui, books, tiny,
                                                                                monkeypatch):
    """The chapter summaries and the X-Ray kept for the book are files: the discussion window reads
    them for the model's lookups in the thread that learns the room, never on the GUI thread, up to
    the reader's place; an X-Ray kept puts its tool among those offered with the question."""
    import threading
    from calibre_plugins.bookai.grounding.book_tools import Kept, KeptXRay
    from calibre_plugins.bookai.gui import conversation_panel
    read = []

    def kept_for_lookups(provider, model, book, position, key, xray_book, language=''):
        read.append((threading.current_thread() is threading.main_thread(), position, key.book_id))
        return Kept({}, KeptXRay(0, lambda name: None))
    monkeypatch.setattr(conversation_panel, 'kept_for_lookups', kept_for_lookups)
    with RecordingProxy(tiny.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        book, cfi = save_reading_position(books, 1, 0.4)
        w = window(gui, books)
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData('position'))
        turn = ask(w)
        w.close()
        received = list(proxy.received)
    assert turn is not None and not turn.error
    ((on_gui_thread, position, book_id),) = read
    assert not on_gui_thread and book_id == 1
    assert position == pytest.approx(book.fraction(book.offset_of_cfi(cfi)), abs=0.01)
    chat = next(json.loads(body) for _m, path, body in received if path.endswith('/chat/completions'))
    assert 'xray_entry' in {t['function']['name'] for t in chat['tools']}
