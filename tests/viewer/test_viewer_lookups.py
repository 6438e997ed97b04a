# License: GPLv3 Copyright: the Book AI developers
"""The E-book viewer's panel shows what the model looked up under the answer, folded, as the
library's windows do (tests/main_window/test_lookups_shown.py has the whole story), and a lookup's
passage clicked sends the viewer to its place, as a citation does. Book AI's real panel, around a
stand-in for the viewer that records where it was sent."""

import shutil

from qt.core import QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.lookups import Lookup
from calibre_plugins.bookai.conversation.prompts import numbered_block
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.scopes import Place
from helpers.books import quick_start_epub
from helpers.calibre_gui import StandInViewer, shoot, wait_until


class WebView:
    """The viewer's web view, at no place that maps to the book's text; where Book AI sent it."""

    current_cfi = ''

    def __init__(self) -> None:
        self.went: list[tuple[str, object]] = []

    def goto_cfi(self, cfi: str, *args) -> None:
        self.went.append(('cfi', cfi))

    def goto_frac(self, frac: float) -> None:
        self.went.append(('frac', frac))


def test_the_viewer_panel_shows_lookups_and_goes_to_their_passages(qapp, prefs, tmp_path, artifacts):
    from calibre_plugins.bookai.viewer.panel import AskPanel
    path = tmp_path / 'guide.epub'
    shutil.copy(quick_start_epub(), path)
    viewer = StandInViewer(path)
    viewer.web_view = WebView()
    book = read_epub(path)
    found = [p for p in book.paragraphs if len(p.text) > 80][2:4]
    places = tuple(Place('Chapter', book.fraction(p.start), book.cfi_at(p.start)) for p in found)
    lookup = Lookup('search_book', '{"query": "library"}', "searched 'library': 2 passages", 1, places,
                    text=numbered_block((('Chapter', p.text) for p in found), start=1))
    panel = AskPanel(viewer)
    panel.resize(420, 640)
    panel.show()
    p = panel.panel
    loaded = []
    p.grounding.source.load(lambda text, error: loaded.append((text, error)))  # as a question would read it
    wait_until(lambda: loaded)
    assert loaded[0][0] is not None, loaded
    conv = Conversation(p.conv.books)
    conv.turns.append(Turn('Where is the library?', answer='In [2].', finish_reason='stop', places=places,
                           lookups=(lookup,)))
    p.set_conversation(conv)
    assert '▸ 1 lookup' in p.chat.toPlainText() and 'Looked up' not in p.chat.toPlainText()
    p.chat.on_link(QUrl('bookai:lookups/0'))
    assert "Looked up: searched 'library': 2 passages [1] [2]" in p.chat.toPlainText()
    shoot(panel, artifacts / 'viewer-lookups.png', 10_000)
    p.chat.on_link(QUrl('bookai:cite/0/2'))  # the lookup's second passage: the viewer jumps there
    p.chat.on_link(QUrl('bookai:cite/0/1'))
    assert viewer.web_view.went == [('cfi', places[1].cfi), ('cfi', places[0].cfi)]
    assert places[0].cfi.startswith('epubcfi(/') and places[0].cfi != places[1].cfi
    panel.close()
