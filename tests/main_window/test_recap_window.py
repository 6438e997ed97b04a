# License: GPLv3 Copyright: the Book AI developers
"""The story so far in the library's discussion window (gui/recap_flow.py, the Story so far
button), offscreen, against a real llama-server and a real calibre library holding the novel with
sentinel text right after the reader's saved place: the recap streams into the chat as a turn
with its passages, from the whole text read or, for a model that reads little, from chapter
summaries made first with their progress shown; nothing after the place reaches the server; an
online provider asks first; Stop during the summaries keeps those made."""

import json
import os

import pytest
from qt.core import QMessageBox

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.calibre_gui import stand_in_gui, wait_until, when_modal
from helpers.peers import LlamaServer, RecordingProxy, use_online, use_server
from helpers.sentinels import bodies_with_sentinels, epub_with_sentinel, place_before_sentinel
from helpers.series import SAGA, saga_library

TINY = ('--temp', '0', '-n', '16', '--override-kv', 'llama.context_length=int:65536')


@pytest.fixture(scope='module')
def gui(qapp):
    return stand_in_gui(job_manager=True)


@pytest.fixture
def novel(sandbox, tmp_path):
    """A library holding the novel with a sentinel right after the place, the place saved as the
    E-book viewer saves it; (the library, the book as read, the place)."""
    from calibre.library import db
    from calibre_plugins.bookai.grounding.reading_position import viewer_annotations_file
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.02)
    lib = sandbox.make_library(path)
    books = BookLibrary(db(str(lib)).new_api, History(str(tmp_path / 'history')))
    fmt_path = books.db.format_abspath(1, 'EPUB')
    book = read_epub(fmt_path)
    place = place_before_sentinel(book)
    annotations = viewer_annotations_file(fmt_path)
    os.makedirs(os.path.dirname(annotations), exist_ok=True)
    with open(annotations, 'w') as f:
        json.dump([{'pos': book.cfi_at(int(place * book.length) - 1), 'pos_type': 'epubcfi',
                    'timestamp': '2026-12-01T10:00:00+00:00', 'type': 'last-read'}], f)
    return books, book, place


def window(gui, books):
    w = DiscussionWindow(books, Conversation.about(books, [1]), gui)
    w.show()
    return w


def recap(w):
    w.panel.recap_button.click()
    wait_until(lambda: not w.panel.streaming and any(t.answered or t.error for t in w.panel.conv.turns),
               timeout=600)
    return w.panel.conv.turns[-1]


def test_the_story_so_far_from_the_text_read(qapp, prefs, gui, novel):
    books, book, place = novel
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        w = window(gui, books)
        turn = recap(w)
        assert turn.answered, w.panel.chat.toPlainText()[-800:]
        assert turn.spoiler_safe and turn.places and all(p.position <= place + 0.001 for p in turn.places)
        assert 'whole text read so far goes to the model' in w.panel.chat.toPlainText()
        assert proxy.chat_requests() and not bodies_with_sentinels(proxy.received)
        b = w.panel.series_button  # a book in no series: no "Previously in the series", and why
        assert b is not None and not b.isEnabled() and b.toolTip() == 'This book is not in a series.'
        sent = ' '.join(' '.join(m['content'] for m in proxy.chat_requests()[-1]['messages']).split())
        read = [' '.join(p.text.split()) for p in book.paragraphs if p.start + len(p.text) <= place * book.length - 1]
        assert read and all(text in sent for text in read[1:])
        w.close()


def says_its_window(monkeypatch, tokens):
    """The model says it reads tokens at once (as a reader sets it for Ollama): the real server reads more, or less."""
    from calibre_plugins.bookai.providers.base import AIProviderPlugin
    from calibre_plugins.bookai.providers.context import ContextWindow
    monkeypatch.setattr(AIProviderPlugin, 'context_window', lambda self, model, cancel=None: ContextWindow(
        tokens, 'setting'))


def test_a_small_model_gets_summaries_made_first_with_their_progress(qapp, prefs, gui, novel, monkeypatch):
    books, book, place = novel
    says_its_window(monkeypatch, 2500)  # less than the 2,400 tokens read, with the conversation and the answer
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        w = window(gui, books)
        seen = []
        w.panel.recap.progressed.connect(lambda done, total, chapter: seen.append((done, total, chapter)))
        turn = recap(w)
        assert turn.answered, w.panel.chat.toPlainText()[-800:]
        shown = w.panel.chat.toPlainText()
        assert 'go as summaries' in shown or 'goes as a summary' in shown, shown[-800:]
        assert seen and seen[0][2]  # a chapter's name, as it was summarized
        assert len(proxy.chat_requests()) > 1 and not bodies_with_sentinels(proxy.received)
        assert '<chapter_summaries>' in proxy.chat_requests()[-1]['messages'][-1]['content']
        w.close()


def test_a_model_that_reads_less_than_it_says_gets_less(qapp, prefs, gui, novel, monkeypatch):
    """The whole text read is refused as too long: the recap is planned again with less and sent again."""
    books, book, place = novel
    says_its_window(monkeypatch, 32768)
    with LlamaServer('tiny', alias='tiny', ctx=4096, extra_args=('--temp', '0', '-n', '16')) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        w = window(gui, books)
        w.panel.recap_button.click()
        wait_until(lambda: not w.panel.streaming and w.panel.conv.turns and (
            w.panel.conv.turns[-1].answered or 'nothing less' in w.panel.chat.toPlainText()
            or len(proxy.chat_requests()) > 12), timeout=600)
        shown = w.panel.chat.toPlainText()
        assert w.panel.conv.turns[-1].answered, shown[-1500:]
        asked = [r['messages'][-1]['content'] for r in proxy.chat_requests()]
        whole = [i for i, text in enumerate(asked) if 'Tell me the story so far' in text]
        assert len(whole) >= 2 and '<chapter_summaries>' not in asked[whole[0]]  # the whole text, refused
        assert '<chapter_summaries>' in asked[whole[-1]]  # then summaries, answered
        assert len(w.panel.conv.turns) == 1  # the refused turn replaced by the one answered
        assert not bodies_with_sentinels(proxy.received)
        w.close()


def test_an_online_provider_asks_first_and_nothing_goes_without_yes(qapp, prefs, gui, novel):
    books, book, place = novel
    from calibre_plugins.bookai.settings.secrets import secret_store
    with LlamaServer('tiny', alias='grok-3', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_online(prefs, proxy.base_url)
        try:
            w = window(gui, books)
            asked, previews = [], []

            def answer(accept):
                def act(box):
                    if not isinstance(box, QMessageBox):  # What will be sent, as the settings say: after consent
                        previews.append(box.summary.text())
                        return box.accept()
                    asked.append(box.informativeText())
                    if accept:
                        box.checkBox().setChecked(True)
                        next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole
                             ).click()
                        when_modal(act)  # and What will be sent, before the recap goes
                    else:
                        box.reject()
                when_modal(act)
            answer(False)
            w.panel.recap_button.click()
            wait_until(lambda: not w.panel.streaming and 'Nothing was sent.' in w.panel.chat.toPlainText())
            assert asked and 'tokens' in asked[0] and proxy.chat_requests() == []
            answer(True)
            turn = recap(w)
            assert turn.answered and len(asked) == 2 and not bodies_with_sentinels(proxy.received)
            assert len(previews) == 1 and 'tokens' in previews[0]  # consent kept: asked once; then What will be sent
            assert f'{books.library_id}:1#so-far|grok' in prefs['book_text_consent']
            w.close()
        finally:
            secret_store().set('grok', 'api_key', '')


@pytest.fixture
def saga(sandbox, tmp_path):
    """A library of a four-book series (helpers.series); (the library, its folder)."""
    cache, lib = saga_library(sandbox, tmp_path)
    return BookLibrary(cache, History(str(tmp_path / 'history'))), lib


def test_previously_in_the_series_as_the_command_line_sends_it(qapp, prefs, gui, saga, cli):
    """The discussion window about the third book: the earlier two go (their text to be summarized,
    then the summaries), nothing of the third or the fourth; the recap request is the one
    `recap --series` sends with the same settings."""
    books, lib = saga
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        first = window(gui, books)
        b = first.panel.series_button
        assert not b.isEnabled() and 'no earlier book of the series The Saga' in b.toolTip()  # the first book
        first.close()
        w = DiscussionWindow(books, Conversation.about(books, [3]), gui)
        w.show()
        assert w.panel.series_button.isEnabled()
        w.panel.series_button.click()
        wait_until(lambda: not w.panel.streaming and any(t.answered or t.error for t in w.panel.conv.turns),
                   timeout=600)
        turn = w.panel.conv.turns[-1]
        assert turn.answered, w.panel.chat.toPlainText()[-800:]
        asked = [' '.join(m['content'] for m in r['messages']) for r in proxy.chat_requests()]
        assert any(SAGA[0][2] in text for text in asked) and any(SAGA[1][2] in text for text in asked)
        assert not any('ZQX SENTINEL' in text for text in asked)
        assert '## The First Voyage: ' in asked[-1] and '## The Second Voyage: ' in asked[-1]
        assert {p.book_id for p in turn.places} <= {1, 2}
        window_recap = proxy.chat_requests()[-1]
        w.close()
        assert cli('configure', 'openai_compatible', f'base_url={proxy.base_url}/v1', 'model=tiny',
                   'temperature=0').returncode == 0
        r = cli('recap', '--library', lib, '--book', '3', '--series')
        assert r.returncode == 0, r
        assert proxy.chat_requests()[-1] == window_recap
        assert not bodies_with_sentinels(proxy.received)
