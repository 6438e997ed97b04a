# License: GPLv3 Copyright: the Book AI developers
"""The History window, offscreen, over a real calibre library: its search box filters the list as
the words are typed (and says when nothing matches), and Export… writes the selected
conversations as Markdown or HTML, privately and whole, where the file dialog says."""

import stat

import pytest
from qt.core import QApplication

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.prompts import numbered_block
from calibre_plugins.bookai.core.messages import WebLink
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.main_window import history_window
from calibre_plugins.bookai.main_window.history_window import HistoryWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import shoot, wait_until
from helpers.conversations import answered


@pytest.fixture
def books(sandbox, tmp_path):
    path = sandbox.make_library(quick_start_epub(), quick_start_epub('deu'))
    from calibre.library import db
    return BookLibrary(db(str(path)).new_api, History(str(tmp_path / 'history')))


def keep(library, book_id, title, authors, question, answer, asked, places=(), passages='', links=()):
    conv = answered(BookInfo(book_id, title, authors), library.library_id, question, answer, asked, asked - 30,
                    places=places, passages=passages, links=links)
    library.history.save(conv)
    return conv


def kept(library):
    block = numbered_block([('Converting books', 'Click the Convert books button to convert an ebook.')])
    return [
        keep(library, 1, 'Quick Start Guide', ('John Schember',), 'How do I convert an ebook?',
             'Use **Convert books** [1].', 1_700_000_300, (Place('Converting books', 0.42),), block,
             (WebLink('calibre manual', 'https://manual.calibre-ebook.com/conversion.html'),)),
        keep(library, 2, 'Schnellstart', ('John Schember',), 'Wie lese ich ein Buch?', 'Mit dem E-book viewer.',
             1_700_000_200),
        keep(library, 1, 'Quick Start Guide', ('John Schember',), 'What is a library?',
             'A folder of books <script>alert(1)</script>.', 1_700_000_100),
    ]


def titles(w):
    return [w.list.topLevelItem(i).text(0) for i in range(w.list.topLevelItemCount())]


def typed(w, text):
    w.search.setText(text)  # as typing does: the list follows once typing pauses
    wait_until(lambda: not w.search_timer.isActive())
    QApplication.processEvents()


def test_the_search_box_filters_the_list_as_words_are_typed(qapp, books):
    convs = kept(books)
    w = HistoryWindow(books, lambda conv: None)
    w.show()
    assert w.list.topLevelItemCount() == 3 and w.search.isVisible()
    typed(w, 'SCHNELLSTART')
    assert titles(w) == ['Schnellstart']
    typed(w, 'convert ebook')  # both words, in a question and an answer
    assert titles(w) == ['Quick Start Guide'] and w.selected_ids() == []
    typed(w, 'schember library')  # an author and a question: every word must match
    assert [w.list.topLevelItem(0).data(0, 256)] == [convs[2].id]
    typed(w, 'nothing like this')
    assert w.list.topLevelItemCount() == 0 and w.notice.text() == 'No conversation matches "nothing like this".'
    assert not w.export_button.isEnabled()
    typed(w, '')
    assert w.list.topLevelItemCount() == 3 and w.notice.text() == ''
    w.close()


def test_export_writes_the_selected_conversations_privately(qapp, books, tmp_path, monkeypatch, artifacts):
    kept(books)
    asked = []
    target = {'path': str(tmp_path / 'out' / 'history.html')}
    (tmp_path / 'out').mkdir()

    def choose(parent, name, title, filters=(), all_files=True, initial_filename=None, **kw):
        asked.append((title, [f[1] for f in filters], initial_filename))
        return target['path']
    monkeypatch.setattr(history_window, 'choose_save_file', choose)
    w = HistoryWindow(books, lambda conv: None)
    w.resize(760, 420)
    w.show()
    typed(w, 'quick start')
    assert not w.export_button.isEnabled()
    w.list.selectAll()
    assert w.export_button.isEnabled()
    shoot(w, artifacts / 'history.png', 10_000, for_readme=True)
    w.export_button.click()
    assert asked == [('Export 2 conversations', [['md'], ['html']], 'Book_AI_conversations.md')]
    out = tmp_path / 'out' / 'history.html'
    html = out.read_text('utf-8')
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert html.startswith('<!DOCTYPE html>') and html.count('<article') == 2
    assert html.index('How do I convert an ebook?') < html.index('What is a library?')  # the list's order
    assert 'Converting books, at 42%' in html and 'https://manual.calibre-ebook.com/conversion.html' in html
    assert '<script' not in html and '&lt;script&gt;' in html
    assert w.notice.text() == f'2 conversations were saved in {out}.'
    assert [p.name for p in out.parent.iterdir()] == ['history.html']  # no temporary file left
    # one conversation, a name without an extension: Markdown, and the name gets .md
    target['path'] = str(tmp_path / 'out' / 'one')
    w.list.clearSelection()
    w.list.topLevelItem(0).setSelected(True)
    w.export_button.click()
    assert asked[-1] == ('Export the conversation', [['md'], ['html']], 'Quick_Start_Guide.md')
    md = (tmp_path / 'out' / 'one.md').read_text('utf-8')
    assert md.startswith('# Quick Start Guide\n') and 'Use **Convert books** [1].' in md
    assert '1. *Converting books, at 42%*' in md
    w.close()


def test_export_into_a_folder_that_cannot_be_written_says_so(qapp, books, tmp_path, monkeypatch):
    kept(books)
    monkeypatch.setattr(history_window, 'choose_save_file', lambda *a, **kw: str(tmp_path / 'gone' / 'x.md'))
    (tmp_path / 'gone').write_text('a file where the folder should be')
    said = []
    monkeypatch.setattr(history_window, 'error_dialog', lambda parent, title, msg, show=False: said.append(msg))
    w = HistoryWindow(books, lambda conv: None)
    w.show()
    w.list.topLevelItem(0).setSelected(True)
    w.export_button.click()
    assert len(said) == 1 and said[0].startswith('The conversations could not be saved in ')
    assert (tmp_path / 'gone').read_text() == 'a file where the folder should be'
    w.close()
