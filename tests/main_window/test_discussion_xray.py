# License: GPLv3 Copyright: the Book AI developers
"""The X-Ray tab of the library's discussion window about one book, offscreen, on the real novel
in a real calibre library, at the place the E-book viewer saved: made by a scripted model behind a
real provider (helpers.scripted_model), its links opening the viewer at their places; and, for a
provider not on this computer (Grok's wire, answered on loopback), the reader's consent first,
with what it will send and cost, asked once per book."""

import json
import os

import pytest
from qt.core import QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.calibre_gui import shoot, stand_in_gui, wait_until, when_modal
from helpers.novel import EPUB
from helpers.peers import use_online, use_server
from helpers.scripted_model import NOVEL_ROSTER, ScriptedModel, roster_answer


@pytest.fixture(scope='module')
def gui(qapp):
    return stand_in_gui()


@pytest.fixture
def novel_library(sandbox, tmp_path):
    from calibre.library import db
    path = sandbox.make_library(EPUB)
    return BookLibrary(db(str(path)).new_api, History(str(tmp_path / 'history')))


def read_to(library, chapter: int):
    """Keep a last-read place at the start of the novel's chapter, as calibre's E-book viewer does
    (tests/hosts/test_viewer_panel.py has the real viewer do it)."""
    from calibre_plugins.bookai.grounding.reading_position import viewer_annotations_file
    path = library.db.format_abspath(1, 'EPUB')
    book = read_epub(path)
    annotations = viewer_annotations_file(path)
    os.makedirs(os.path.dirname(annotations), exist_ok=True)
    with open(annotations, 'w') as f:
        json.dump([{'pos': book.cfi_at(book.chapters[chapter].start), 'pos_type': 'epubcfi',
                    'timestamp': '2026-12-01T10:00:00+00:00', 'type': 'last-read'}], f)
    return book


def window(gui, library):
    w = DiscussionWindow(library, Conversation.about(library, [1]), gui)
    w.resize(900, 640)
    w.show()
    return w


def xray_tab(w):
    w.tabs.setCurrentWidget(w.xray)
    x = w.xray
    wait_until(lambda: x.work is None and (x.xray is not None or x.status.text() != ''),
               state=lambda: (x.summary.text(), x.status.text()))
    return x


def build(x):
    x.build_button.click()
    wait_until(lambda: x.work is None, state=lambda: (x.summary.text(), x.status.text()))


def names(x):
    return [x.list.topLevelItem(g).child(i).text(0) for g in range(x.list.topLevelItemCount())
            for i in range(x.list.topLevelItem(g).childCount())]


def test_the_library_window_shows_the_xray(qapp, prefs, gui, novel_library, artifacts):
    book = read_to(novel_library, 16)  # Chapters 1 to 15 read: Mr. Collins and Mr. Wickham have come
    with ScriptedModel(roster_answer(NOVEL_ROSTER)) as model:
        use_server(prefs, model.url)
        w = window(gui, novel_library)
        assert w.tabs.tabText(0) == 'Chat' and w.tabs.tabText(1) == 'X-Ray' and w.tabs.currentWidget() is not w.xray
        assert w.panel.scope_row is not None  # the chat as it was, in its tab
        x = xray_tab(w)
        assert 'No X-Ray is kept for this book yet' in x.summary.text() and not model.requests
        build(x)
        assert len(model.requests) == 16 and x.xray.complete, x.status.text()
    assert {'Elizabeth Bennet', 'Mr. Collins', 'Mr. Wickham', 'Longbourn', 'the entail'} <= set(names(x))
    assert 'Pemberley' in names(x) and 'Lady Catherine' not in ' '.join(names(x))
    x.show_named('Mr. Wickham')
    assert x.entity.name == 'Mr. Wickham' and x.entity.first.chapter == 'Chapter 15'
    assert 'First appears: Chapter 15, at ' in x.details.toPlainText()
    # a link opens the book in the E-book viewer at that place
    x.details.anchorClicked.emit(QUrl('bookai:cite/0'))
    (book_id, fmt, open_at), = gui.iactions['View'].opened
    assert (book_id, fmt) == (1, 'EPUB') and open_at == x.entity.citations[0].place.cfi
    assert book.chapter_at(book.offset_of_cfi(open_at)).title == 'Chapter 15'
    gui.iactions['View'].opened.clear()
    x.show_named('Elizabeth Bennet')
    shoot(w, artifacts / 'discussion-xray.png', 20_000)
    w.close()


def test_an_online_provider_asks_first_once_per_book(qapp, prefs, gui, novel_library):
    """Grok (a provider on the internet, its wire answered on loopback): the reader sees the chapters,
    tokens and cost, and where they go; cancelled, nothing is sent; agreed with "Don't ask again for
    this book", the next update asks no more. The consent for passages does not cover it."""
    from calibre_plugins.bookai.settings.secrets import secret_store
    read_to(novel_library, 4)
    key = f'{novel_library.library_id}:1'
    with ScriptedModel(roster_answer(NOVEL_ROSTER), model='grok-3') as model:
        use_online(prefs, model.url, (f'{key}|grok',))  # passages: yes, without asking
        try:
            w = window(gui, novel_library)
            x = xray_tab(w)
            seen = []

            def answer(accept, dont_ask=False):
                def act(d):
                    seen.append((d.windowTitle(), d.summary.text()))
                    d.dont_ask.setChecked(dont_ask)
                    (d.accept if accept else d.reject)()
                when_modal(act)
            answer(False)
            build(x)
            assert len(seen) == 1 and x.status.text() == 'Nothing was sent.' and not model.requests
            title, said = seen[0]
            assert title == 'Send the book for the X-Ray?'
            # Book AI's dated price table has no Grok model: the cost is said to be unknown, never free
            assert '4 chapters to read for the X-Ray: about ' in said and 'tokens sent, cost unknown.' in said, said
            assert '<b>xAI Grok, at 127.0.0.1</b>, model <b>grok-3</b>' in said
            assert 'Nothing after your place is sent.' in said
            answer(True, dont_ask=True)
            build(x)
            assert len(seen) == 2 and len(model.requests) == 4 and x.xray.complete, x.status.text()
            assert f'{key}|grok|xray' in prefs['book_text_consent']
            assert 'Elizabeth Bennet' in names(x)
            read_to(novel_library, 6)  # moving on: not asked again
            x.refresh()
            wait_until(lambda: x.work is None)
            assert x.build_button.text() == 'Update X-Ray' and len(x.xray.missing) == 2
            build(x)
            assert len(seen) == 2 and len(model.requests) == 6 and x.xray.complete
            assert all('xai-test-key' not in json.dumps(r) for r in model.requests)
            w.close()
        finally:
            secret_store().set('grok', 'api_key', '')


def test_closing_the_window_stops_the_xray(qapp, prefs, gui, novel_library):
    """Closed while it is made: the build stops, and what was read is kept."""
    import threading
    from calibre_plugins.bookai.conversation import xray as xr
    read_to(novel_library, 6)
    good, release = roster_answer(NOVEL_ROSTER), threading.Event()

    def answer(request):
        if len(model.requests) == 2:
            release.wait(60)
        return good(request)
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        w = window(gui, novel_library)
        x = xray_tab(w)
        x.build_button.click()
        wait_until(lambda: len(model.requests) == 2)
        cancel = x.cancel
        w.close()
        assert cancel.cancelled and x.closed
        release.set()
        key = xr.XRayKey(f'{novel_library.library_id}:1', 'openai_compatible', 'tiny', x.key.language)
        wait_until(lambda: [r.chapter for r in xr.XRayCache().records(key)[0]] == [0])
