# License: GPLv3 Copyright: the Book AI developers
"""What the reader sees of the model's lookups (gui/lookups.py) in the discussion window and in
Ask my library, offscreen, on a real calibre library: a line each under the answer as they come
while it streams, then folded into one line that unfolds when clicked, the same when the turn is
reopened from the History, each passage a link that opens the book at its place as citations do;
nothing for a turn that looked nothing up; a model's words as plain, bounded text, never HTML.

The answer comes from a real llama-server. The loop that makes lookups (conversation/lookups.py)
is another part's: here Exchange.chunks is wrapped to yield LookedUp events before the server's
answer, and to keep the turn's lookups and places as that loop does."""

import threading

import pytest
from qt.core import QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.lookups import LookedUp, Lookup
from calibre_plugins.bookai.conversation.prompts import numbered_block
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import shoot, stand_in_gui, wait_until, when_modal
from helpers.peers import use_server

TINY_TOKENS, TINY_CONTEXT = 16, 16384
HOSTILE = '\x1b[31m<script>alert(1)</script><b>bold</b>\u202e' + 'x' * 10_000


@pytest.fixture(scope='module')
def gui(qapp):
    return stand_in_gui()


@pytest.fixture
def books(sandbox, tmp_path):
    from calibre.library import db
    return BookLibrary(db(str(sandbox.make_library(quick_start_epub()))).new_api, History(str(tmp_path / 'history')))


def lookups_of(books, first=1):
    """Two lookups in the Quick Start Guide, as the book's tools make them: a search that found two
    passages (numbered from first), then a refused read; and the book as Book AI reads it."""
    book = read_epub(books.db.format_abspath(1, 'EPUB'))
    found = [p for p in book.paragraphs if len(p.text) > 80][3:5]
    places = tuple(Place('Chapter', book.fraction(p.start), book.cfi_at(p.start)) for p in found)
    search = Lookup('search_book', '{"query": "convert"}', "searched 'convert': 2 passages", first, places,
                    text=numbered_block((('Chapter', p.text) for p in found), start=first))
    refused = Lookup('read_around', '{"passage": 99}', 'read around [99]: the reader has not reached that part',
                     refused=True, text='The reader has not reached that part.')
    return (search, refused), found


def window(gui, books, conv=None):
    w = DiscussionWindow(books, conv or Conversation.about(books, [1]), gui)
    w.show()
    return w


def shown(w):
    return w.panel.chat.toPlainText()


def open_citation(w, gui, number):
    """Click citation number of the first turn, and Open in viewer: what calibre was asked to open."""
    seen = []

    def check(d):
        seen.append((d.windowTitle(), d.text.toPlainText()))
        d.open_button.click()
    when_modal(check)
    w.panel.chat.on_link(QUrl(f'bookai:cite/0/{number}'))
    opened = list(gui.iactions['View'].opened)
    gui.iactions['View'].opened.clear()
    return seen, opened


def test_lookups_show_as_they_come_then_fold(qapp, prefs, gui, books, tiny, monkeypatch, artifacts):
    use_server(prefs, tiny.base_url)
    (search, refused), found = lookups_of(books)
    go_on = threading.Event()
    real = Exchange.chunks

    def chunks(self):  # as the lookup loop: each lookup told (Exchange.take keeps it), then the answer
        for lookup in (search, refused):
            yield LookedUp(lookup)
            if lookup is search:
                go_on.wait(120)  # the test looks at the window while the answer is still coming
        yield from real(self)
    monkeypatch.setattr(Exchange, 'chunks', chunks)
    w = window(gui, books)
    assert w.panel.scope == 'metadata'  # nothing sent with the question: only the lookups' passages
    w.panel.question.setPlainText('How do I convert a book?')
    w.panel.send_button.click()
    try:
        wait_until(lambda: 'Looked up:' in shown(w), state=lambda: shown(w)[-300:])
        assert w.panel.streaming
        assert "Looked up: searched 'convert': 2 passages [1] [2]" in shown(w)
        assert 'bookai:cite/0/1' in w.panel.chat.toHtml() and 'refused' not in shown(w)
        shoot(w, artifacts / 'lookups-live.png', 10_000)
        seen, opened = open_citation(w, gui, 2)  # a link while the answer streams opens its place too
        assert seen == [('Passage 2', found[1].text)] and opened == [(1, 'EPUB', search.places[1].cfi)]
    finally:
        go_on.set()
    wait_until(lambda: not w.panel.streaming)
    turn = w.conv.turns[-1]
    assert not turn.error and turn.lookups == (search, refused)
    text = shown(w)
    assert '▸ 2 lookups' in text and 'Looked up' not in text  # folded once the answer has ended
    assert 'Sent with passages' not in text  # the lookups' passages were not sent with the question
    w.panel.chat.on_link(QUrl('bookai:lookups/0'))
    text = shown(w)
    assert '▾ 2 lookups' in text
    lines = text[text.index('▾ 2 lookups'):].splitlines()
    assert lines[1:3] == ["Looked up: searched 'convert': 2 passages [1] [2]",
                          'Looked up, refused: read around [99]: the reader has not reached that part']
    shoot(w, artifacts / 'lookups-unfolded.png', 10_000)
    w.panel.chat.on_link(QUrl('bookai:lookups/0'))
    assert 'Looked up' not in shown(w) and '▸ 2 lookups' in shown(w)
    w.close()


def test_a_turn_reopened_from_the_history_shows_its_lookups(qapp, prefs, gui, books):
    (search, refused), found = lookups_of(books, first=2)
    book = read_epub(books.db.format_abspath(1, 'EPUB'))
    sent = Place('Chapter', 0.01, book.cfi_at(book.paragraphs[0].start))
    conv = Conversation.about(books, [1])
    conv.turns.append(Turn('How do I convert a book?', answer='As [2] says, and [1]; not [9].', model='tiny',
                           finish_reason='stop', passages=numbered_block([('Chapter', book.paragraphs[0].text)]),
                           places=(sent,) + search.places, lookups=(search, refused)))
    conv.turns.append(Turn('And nothing looked up?', answer='No [1].', model='tiny', finish_reason='stop'))
    books.history.save(conv)
    kept = books.history.load(books.library_id, conv.id)
    assert kept is not None and kept.turns[0].lookups == (search, refused)
    w = window(gui, books, kept)
    text = shown(w)
    assert text.count('lookups') == 1 and '▸ 2 lookups' in text and 'Sent with passages of the book: 1.' in text
    assert 'Looked up' not in text  # folded
    html = w.panel.chat.toHtml()
    assert 'bookai:cite/0/2' in html and 'bookai:cite/0/1' in html and '9?' in text
    assert 'bookai:cite/1/' not in html and 'bookai:lookups/1' not in html  # nothing for a turn with none
    w.panel.chat.on_link(QUrl('bookai:lookups/0'))
    assert "Looked up: searched 'convert': 2 passages [2] [3]" in shown(w)
    assert w.panel.chat.lookups_shown == {0}
    seen, opened = open_citation(w, gui, 3)  # the lookup's second passage
    assert seen == [('Passage 3', found[1].text)] and opened == [(1, 'EPUB', search.places[1].cfi)]
    seen, opened = open_citation(w, gui, 1)  # the passage sent with the question, as before
    assert opened == [(1, 'EPUB', sent.cfi)]
    w.close()


def test_a_models_words_in_a_lookup_are_plain_bounded_text(qapp, prefs, gui, books):
    (search, _refused), found = lookups_of(books)
    hostile = Lookup('<img src=x>', '{"q": "<script>alert(2)</script>' + 'y' * 10_000 + '"}', HOSTILE, 1,
                     search.places, text=search.text)
    conv = Conversation.about(books, [1])
    conv.turns.append(Turn('Q', answer='A [1].', finish_reason='stop', places=search.places, lookups=(hostile,)))
    w = window(gui, books, conv)
    w.panel.chat.on_link(QUrl('bookai:lookups/0'))
    text, html = shown(w), w.panel.chat.toHtml()
    line = next(line for line in text.splitlines() if line.startswith('Looked up'))
    assert line.startswith('Looked up: \\x1b[31m<script>alert(1)</script><b>bold</b>\\u202exxx')
    assert len(line) < 400 and '…' in line  # bounded: 10,000 characters are not shown
    assert '\x1b' not in text and '\u202e' not in text
    assert '<script' not in html and '<b>bold' not in html and '<img' not in html and 'alert(2)' not in html
    w.close()


def test_ask_my_library_shows_lookups_across_books(qapp, prefs, books):
    from calibre_plugins.bookai.main_window.ask_library import LibraryQuestionWindow
    book = read_epub(books.db.format_abspath(1, 'EPUB'))
    found = [p for p in book.paragraphs if len(p.text) > 80][:2]
    places = tuple(Place('Quick Start Guide', book.fraction(p.start), '', 1, 'EPUB') for p in found)
    lookup = Lookup('search_library', '{"query": "convert"}', "searched your books for 'convert': 2 passages", 1,
                    places, text=numbered_block((('Quick Start Guide', p.text) for p in found), start=1))
    conv = Conversation([], books.library_id)
    conv.turns.append(Turn('How do I convert?', answer='See [2].', finish_reason='stop', places=places,
                           lookups=(lookup,)))
    gui = stand_in_gui()
    w = LibraryQuestionWindow(books, conv, (), gui)
    w.show()
    assert '▸ 1 lookup' in shown(w) and 'Sent with passages' not in shown(w) and 'Looked up' not in shown(w)
    w.panel.chat.on_link(QUrl('bookai:lookups/0'))
    assert "Looked up: searched your books for 'convert': 2 passages [1] [2]" in shown(w)
    seen = []

    def check(d):
        seen.append((d.where.text(), d.text.toPlainText()))
        d.open_button.click()
    when_modal(check)
    w.panel.chat.on_link(QUrl('bookai:cite/0/2'))
    assert seen == [('From Quick Start Guide', found[1].text)]
    (book_id, fmt, open_at), = gui.iactions['View'].opened
    assert (book_id, fmt) == (1, 'EPUB') and open_at.startswith('search:')
    assert open_at[len('search:'):] in ' '.join(found[1].text.split())
    w.close()


def test_what_will_be_sent_and_consent_say_the_model_may_look_things_up(qapp, prefs, gui, books, tiny, monkeypatch):
    from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel
    from calibre_plugins.bookai.settings.secrets import secret_store
    use_server(prefs, tiny.base_url)
    prefs['providers'] = dict(prefs['providers'], openrouter={'base_url': tiny.base_url + '/v1', 'model': 'tiny'})
    prefs['provider'] = 'openrouter'
    prefs['book_text_consent'] = []
    prefs['confirm_send'] = 'never'
    sentence = 'It can search the book up to your place <b>and</b> read around a passage.'
    secret_store().set('openrouter', 'api_key', 'sk-or-test-key')
    try:
        w = window(gui, books)
        assert w.panel.scope == 'metadata'
        seen = []

        def look(d):
            seen.append((d.summary.text(), d.dont_ask is not None))
            d.reject()
        # today's panel: no lookups, nothing said of them, and no consent asked for the book's details
        when_modal(look)
        w.panel.preview_button.click()
        assert 'look things up' not in seen[-1][0]
        monkeypatch.setattr(ConversationPanel, 'preview_lookups', lambda self, provider, model: (sentence, 8))
        monkeypatch.setattr(ConversationPanel, 'lookups_sentence', lambda self, provider, question: (sentence, 8))
        when_modal(look)
        w.panel.preview_button.click()
        summary = seen[-1][0]
        assert 'While it answers, the model may look things up, at most 8 times.' in summary
        assert 'It can search the book up to your place &lt;b&gt;and&lt;/b&gt; read around' in summary
        assert 'What it finds is sent to OpenRouter too' in summary
        # sending: the lookups' results go online, so the reader consents first, and may say once
        when_modal(look)
        w.panel.question.setPlainText('How do I convert a book?')
        w.panel.send_button.click()
        wait_until(lambda: not w.panel.streaming)
        assert len(seen) == 3 and 'at most 8 times' in seen[-1][0] and seen[-1][1]  # "don't ask again" offered
        assert not w.conv.turns and w.panel.question.toPlainText() == 'How do I convert a book?'  # not sent
        w.close()
    finally:
        secret_store().set('openrouter', 'api_key', '')
