# License: GPLv3 Copyright: the Book AI developers
"""Save to book in the discussion window when the library does not take the note for every book:
the window says in words which books got it and what became of the other (its old text back), and
calibre's book list is refreshed for the books that changed only; a field changed by another
program meanwhile is left as that program wrote it, and said so."""

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.calibre_gui import when_modal


@pytest.fixture
def books(tmp_path):
    """A new library of two books, each with comments of its own."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as open_db
    folder = tmp_path / 'library'
    folder.mkdir()
    db = open_db(str(folder)).new_api
    for title in ('First', 'Second'):
        mi = Metadata(title, ['Ann Author'])
        mi.comments = f'<p>{title}, in the reader\'s words.</p>'
        db.create_book_entry(mi)
    library = BookLibrary(db, History(str(tmp_path / 'history')))
    yield library
    db.close()


def answered(library) -> Conversation:
    conv = Conversation.about(library, [1, 2])
    conv.turns = [Turn('What is it about?', 'It is about a lighthouse.', model='m', finish_reason='stop')]
    return conv


def save_accepting(w):
    def act(d):
        d.field_box.setCurrentIndex(d.field_box.findData('comments'))
        d.accept()
    when_modal(act)
    w.save_to_book(0)


def test_one_book_refused_the_other_saved_and_said_so(qapp, prefs, books):
    db = books.db
    old = db.field_for('comments', 2)
    db.backend.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON comments WHEN NEW.book = 2 "
                       "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    refreshed = []
    w = DiscussionWindow(books, answered(books), on_saved=refreshed.append)
    w.show()
    save_accepting(w)
    shown = w.panel.chat.toPlainText()
    assert 'Saved to Comments of 1 book(s).' in shown
    said = shown[shown.index('"Second": the note could not be saved ('):]
    assert 'database or disk is full' in said and '); what Comments held before is back.' in said  # as apsw words it
    assert 'Nothing was saved' not in shown
    assert refreshed == [[1]]
    assert 'lighthouse' in db.field_for('comments', 1) and db.field_for('comments', 2) == old
    w.close()


def test_a_field_changed_by_another_program_is_left_as_it_was_written(qapp, prefs, books):
    db = books.db
    db.backend.execute('UPDATE comments SET text=? WHERE book=?', ('<p>From a sync tool.</p>', 1))
    refreshed = []
    w = DiscussionWindow(books, answered(books), on_saved=refreshed.append)
    w.show()
    save_accepting(w)
    shown = w.panel.chat.toPlainText()
    assert '"First": its Comments was changed by another program meanwhile' in shown
    assert refreshed == [[2]]
    from calibre.library import db as open_db
    other = open_db(db.backend.library_path).new_api
    try:
        assert other.field_for('comments', 1) == '<p>From a sync tool.</p>'
        assert 'lighthouse' in other.field_for('comments', 2)
    finally:
        other.close()
    w.close()
