# License: GPLv3 Copyright: the Book AI developers
""""Ask for what to read next" from this library, offscreen, on a real calibre library: the index by
meaning made by the real embedding model, in calibre's job (as Search library by meaning makes it) (all-MiniLM-L6-v2 in llama-server), the books offered sent to a
model (scripted: it answers with a number sent, a number not sent, a link and HTML of its own), and the
discussion that opens: only the numbers sent become links, and a link selects its book in calibre's list
(said when the list, as shown, does not have it)."""

import re

from qt.core import QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.main_window import read_next
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.calibre_gui import LibraryView, shoot, stand_in_gui, wait_until
from helpers.meaning_library import make_meaning_library
from helpers.peers import use_server
from helpers.scripted_model import ScriptedModel

CANDIDATE = re.compile(r'^\[(\d+)\] (.+?) by ', re.M)
BOOK_LINK = re.compile(r'href="bookai:book/(\d+)/(\d+)"')


def hostile_answer(request: dict) -> str:
    """The first book offered, by its number and title; a number never sent; a link and HTML of its own
    that point at the second and third books."""
    offered = CANDIDATE.findall(request['messages'][-1]['content'])
    number, title = offered[0]
    return (f'[{number}] {title}: the same quiet island, a storm and an apprentice.\n\n'
            '[99] A Book Not Offered: it does not exist.\n\n'
            '[Read this](bookai:book/0/2) and <a href="bookai:book/0/3">this</a>.')


class StandInAction:
    """What from_library() asks of Book AI's button: calibre's window, the library, a window opened."""

    def __init__(self, gui, library):
        self.gui, self.lib, self.windows = gui, library, []

    def library(self):
        return self.lib

    def open_window(self, library, conversation):
        w = DiscussionWindow(library, conversation, self.gui)
        self.windows.append(w)
        w.show()
        return w


def test_suggestions_from_the_library_link_only_the_books_offered(qapp, prefs, embed, tmp_path, artifacts):
    path, ids = make_meaning_library(tmp_path)
    from calibre.library import db
    gui = stand_in_gui(job_manager=True)  # the index is brought up to date as calibre's job
    gui.current_db = db(str(path))
    library = BookLibrary(gui.current_db.new_api, History(str(tmp_path / 'history')))
    gui.library_view = LibraryView()
    action = StandInAction(gui, library)
    with ScriptedModel(hostile_answer) as model:
        use_server(prefs, model.url)
        prefs['providers'] = dict(prefs['providers'], lmstudio={'base_url': embed.base_url + '/v1',
                                                                'model': embed.model})
        prefs['library_embeddings_provider'] = 'lmstudio'
        read_next.from_library(action, [ids[0], ids[1]])
        wait_until(lambda: action.windows and action.windows[0].conv.turns
                   and action.windows[0].panel.cancel is None)
    w = action.windows[0]
    try:
        turn = w.conv.turns[0]
        assert w.conv.book_ids == (ids[0], ids[1]) and turn.answer.startswith('[1] ')
        offered = [b for b, _title in turn.suggested]
        assert offered[0] == ids[5] and not {ids[0], ids[1]} & set(offered)  # the nearest; the seeds left out
        assert len(model.requests) == 1 and 'Return to Vesterholm' in model.requests[0]['messages'][-1]['content']
        html = w.panel.chat.toHtml()
        assert set(BOOK_LINK.findall(html)) == {('0', '1')}  # the number sent, in the answer and listed under it
        assert 'Suggested from your library' in w.panel.chat.toPlainText()
        assert '99?' in w.panel.chat.toPlainText()  # flagged, not linked
        shoot(w, artifacts / 'read-next-from-library.png', 5000)
        w.panel.chat.anchorClicked.emit(QUrl('bookai:book/0/1'))
        assert gui.library_view.selected == [ids[5]]
        for hostile in ('bookai:book/0/99', 'bookai:book/0/0', 'bookai:book/7/1', 'bookai:book/0/1x',
                        'bookai:book/0/' + '9' * 40):
            w.panel.chat.anchorClicked.emit(QUrl(hostile))
            assert gui.library_view.selected == [ids[5]], hostile
        gui.library_view.shown = {ids[0]}  # a search that hides the book
        w.panel.chat.anchorClicked.emit(QUrl('bookai:book/0/1'))
        assert gui.library_view.selected == [] and 'not in the book list' in w.panel.chat.toPlainText()
        # the History's conversation, opened again, links the same book
        again = DiscussionWindow(library, Conversation.from_dict(w.conv.as_dict()), gui)
        try:
            gui.library_view.shown = None
            assert set(BOOK_LINK.findall(again.panel.chat.toHtml())) == {('0', '1')}
            again.panel.chat.anchorClicked.emit(QUrl('bookai:book/0/1'))
            assert gui.library_view.selected == [ids[5]]
        finally:
            again.close()
    finally:
        w.close()
        library.db.close()
