# License: GPLv3 Copyright: the Book AI developers
"""Ask my library, the window: offscreen, on a real library whose full-text index calibre made,
answered by a real llama-server; the passages found go with the question, their citations
open the passage and its book in the viewer."""

import json
import time

import pytest
from qt.core import QApplication, QEventLoop, QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.prompts import passage_texts
from calibre_plugins.bookai.main_window.ask_library import LibraryQuestionWindow
from helpers.calibre_gui import stand_in_gui, when_modal
from helpers.library import LIGHTHOUSE_ID, ORCHARD_ID, make_library
from helpers.peers import http, use_server
from helpers.sandbox import Sandbox

QUESTION = 'Who kept the lighthouse on Vesterholm?'


TINY_TOKENS, TINY_CONTEXT = 16, 16384


@pytest.fixture(scope='module')
def library_path(tmp_path_factory):
    return make_library(Sandbox(tmp_path_factory.mktemp('fts-window')))


@pytest.fixture
def prefs(prefs, tiny):
    """The plugin's preferences (kept as they were by the suite's fixture), asking the tiny server."""
    use_server(prefs, tiny.base_url)
    return prefs


@pytest.fixture
def library(library_path, tmp_path):
    from calibre.library import db
    cache = db(str(library_path)).new_api
    yield BookLibrary(cache, History(str(tmp_path / 'history')))
    cache.close()


def window(qapp, library, selected=()):
    w = LibraryQuestionWindow(library, Conversation([], library.library_id), selected, stand_in_gui())
    w.show()
    return w


def ask(w, question=QUESTION):
    w.panel.question.setPlainText(question)
    w.panel.send_button.click()
    end = time.monotonic() + 120
    while w.panel.streaming:
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        assert time.monotonic() < end, 'timed out'
        time.sleep(0.005)
    return w.conv.turns[-1] if w.conv.turns else None


def test_a_question_answered_from_the_books_found(qapp, prefs, library, tiny, artifacts):
    w = window(qapp, library)
    assert [w.where.itemData(i) for i in range(w.where.count())] == ['all']
    turn = ask(w)
    assert turn is not None and not turn.error and turn.answer, w.panel.chat.toPlainText()[-500:]
    assert turn.passages.startswith('These passages were found by a full-text search')
    assert '[1] (The Keeper of the Lighthouse, by ' in turn.passages
    assert turn.places[0].book_id == LIGHTHOUSE_ID and turn.places[0].fmt == 'TXT'
    sent = Conversation([], library.library_id).messages_for(QUESTION, turn.passages)
    assert sent[0].text.startswith('I wish to ask about the books in my library.')
    status, headers, body = http('POST', tiny.base_url + '/v1/chat/completions', {
        'model': 'tiny', 'temperature': 0, 'messages': [{'role': m.role.value, 'content': m.text} for m in sent]})
    assert turn.answer == json.loads(body)['choices'][0]['message']['content']
    # a citation: the passage and its book, and the viewer opened at it
    turn.answer = 'It was Ada Brine\'s keeper [1].'
    w.panel.show_conversation()
    shown = []

    def check(d):
        shown.append((d.where.text(), d.text.toPlainText()))
        d.open_button.click()
    when_modal(check)
    w.panel.chat.on_link(QUrl('bookai:cite/0/1'))
    assert shown == [('From The Keeper of the Lighthouse', passage_texts(turn.passages)[1])]
    (book_id, fmt, open_at), = w.gui.iactions['View'].opened
    assert (book_id, fmt) == (LIGHTHOUSE_ID, 'TXT') and open_at.startswith('search:')
    assert open_at[len('search:'):] in ' '.join(passage_texts(turn.passages)[1].split())
    assert w.grab().save(str(artifacts / 'ask-my-library.png'))
    w.close()


def test_only_the_selected_books(qapp, prefs, library):
    w = window(qapp, library, (ORCHARD_ID,))
    assert w.where.currentData() == 'selected'
    turn = ask(w, 'Which fruit grew in the orchard, and who kept the lighthouse?')
    assert turn.places and {p.book_id for p in turn.places} == {ORCHARD_ID}
    w.close()


def test_nothing_found_sends_nothing(qapp, prefs, library):
    w = window(qapp, library)
    assert ask(w, 'xylophone quasar') is None
    assert 'Nothing in the full-text index' in w.panel.chat.toPlainText()
    assert w.panel.question.toPlainText() == 'xylophone quasar'
    w.close()


def test_a_library_without_a_full_text_index_says_how_to_turn_it_on(qapp, prefs, tmp_path):
    from calibre.library import db
    path = make_library(Sandbox(tmp_path / 'plain'), fts=False)
    cache = db(str(path)).new_api
    try:
        w = window(qapp, BookLibrary(cache, History(str(tmp_path / 'history'))))
        assert ask(w) is None
        text = w.panel.chat.toPlainText()
        assert 'full-text' in text.lower() and 'Nothing was sent.' in text
        assert w.panel.question.toPlainText() == QUESTION
        w.close()
    finally:
        cache.close()
