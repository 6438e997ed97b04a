# License: GPLv3 Copyright: the Book AI developers
"""Save to book, and Save as note, while the same field is being changed elsewhere: the
text written meanwhile and the note saved are both kept. The save reads the field as
it is at the moment of saving, under calibre's write lock, never as it was when the
window opened."""

import sys
import threading
from datetime import datetime, timezone

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from calibre_plugins.bookai.conversation.notes import append_note
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until, when_modal
from helpers.peers import use_server


TINY_TOKENS = 24


@pytest.fixture
def prefs(prefs, tiny):
    """The plugin's preferences (kept as they were by the suite's fixture), asking the tiny server."""
    use_server(prefs, tiny.base_url)
    return prefs


@pytest.fixture
def books(sandbox, tmp_path):
    """The Quick Start Guide in a library with two custom columns of the comments type."""
    from calibre.library import db as open_db
    path = sandbox.make_library(quick_start_epub())
    db = open_db(str(path)).new_api
    db.create_custom_column('aianswers', 'AI answers', 'comments', False, display={'interpret_as': 'long-text'})
    db.create_custom_column('reviews', 'Reviews', 'comments', False, display={'interpret_as': 'html'})
    db = open_db(str(path)).new_api  # new columns are there once the library is opened again
    return BookLibrary(db, History(str(tmp_path / 'history')))


def answer_in(panel, question='Summarize it.'):
    panel.question.setPlainText(question)
    panel.send_button.click()
    wait_until(lambda: not panel.streaming)
    turn = panel.conv.turns[-1]
    assert turn.answer and not turn.error, turn.error
    return turn


@pytest.mark.parametrize('field', ['comments', '#aianswers', '#reviews'])
def test_text_written_while_the_save_dialog_is_open_is_kept(qapp, prefs, books, field):
    db = books.db
    db.set_field(field, {1: '<p>Written before.</p>' if field != '#aianswers' else 'Written before.'})
    w = DiscussionWindow(books, Conversation.about(books, [1]))
    w.show()
    turn = answer_in(w.panel)

    def edit_elsewhere_then_save(d):
        assert d.book_ids == [1]
        d.field_box.setCurrentIndex(d.field_box.findData(field))
        # another writer (the book details' editor, a plugin, calibredb through calibre) changes the field now
        db.set_field(field, {1: db.field_for(field, 1) + ('\n\nWritten meanwhile.' if field == '#aianswers'
                                                            else '<p>Written meanwhile.</p>')})
        d.accept()
    when_modal(edit_elsewhere_then_save)
    w.save_to_book(0)
    value = db.field_for(field, 1)
    assert value.index('Written before.') < value.index('Written meanwhile.') < value.index(turn.answer.split()[0])
    assert 'Summarize it.' in value
    assert 'Saved to' in w.panel.chat.toPlainText()
    w.close()


def test_no_update_is_lost_while_another_writer_hammers_the_field(qapp, books):
    """Saves and another thread's appends, interleaved on calibre's db: every one of them is kept."""
    db = books.db
    db.set_field('#aianswers', {1: 'Start.'})
    saves, writes = 40, 200
    started = threading.Event()

    def other_writer():  # a well-behaved writer: its own read-modify-write under calibre's lock
        started.set()
        for i in range(writes):
            with db.write_lock:
                db._set_field('#aianswers', {1: db._field_for('#aianswers', 1) + f'\n\nother-{i}.'})
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can: a gap between read and write shows
    try:
        t = threading.Thread(target=other_writer)
        t.start()
        started.wait()
        for i in range(saves):
            append_note(db, [1], '#aianswers', f'Book AI note {i}.')
        t.join()
    finally:
        sys.setswitchinterval(switch)
    value = db.field_for('#aianswers', 1)
    assert value.startswith('Start.')
    assert all(f'Book AI note {i}.' in value for i in range(saves))
    assert all(f'other-{i}.' in value for i in range(writes))
    # and all of it is on disk, as another process opening the library sees it
    from calibre.library import db as open_db
    assert open_db(db.backend.library_path).new_api.field_for('#aianswers', 1) == value


class StandInViewer:
    """What the Ask AI panel uses of calibre's E-book viewer window (gui2/viewer/ui.py), for a
    library book: its annotations in current_book_data, notes_edited() as the viewer's own notes
    editor calls it (the note set, timestamped and saved), and saving into the library through
    calibre's own annotations merge (db.merge_annotations_for_book), as the viewer does."""

    def __init__(self, db, book_id, highlights):
        self.db, self.book_id = db, book_id
        self.current_book_data = {
            'metadata': {'title': db.field_for('title', book_id), 'authors': list(db.field_for('authors', book_id))},
            'book_library_details': {'book_id': book_id, 'library_id': db.library_id},
            'annotations_map': {'highlight': highlights}}
        self.sent = []
        from types import SimpleNamespace
        self.web_view = SimpleNamespace(generic_action=lambda name, data: self.sent.append((name, data)))

    def notes_edited(self, uuid, notes):
        for h in self.current_book_data['annotations_map']['highlight']:
            if h.get('uuid') == uuid:
                h['notes'], h['timestamp'] = notes, now()
        self.db.merge_annotations_for_book(self.book_id, 'EPUB', self.current_book_data['annotations_map']['highlight'])


def now():
    return datetime.now(timezone.utc).isoformat()


def test_a_highlight_note_edited_while_the_panel_is_open_keeps_both(qapp, prefs, books):
    from calibre_plugins.bookai.viewer.panel import AskPanel
    db = books.db
    highlight = {'type': 'highlight', 'uuid': 'h-1', 'highlighted_text': 'calibre is an e-book manager',
                 'start_cfi': '/2/4/2:0', 'end_cfi': '/2/4/2:28', 'spine_index': 2, 'spine_name': 'index.html',
                 'style': {'kind': 'color', 'type': 'builtin', 'which': 'yellow'}, 'notes': 'My first thought.',
                 'timestamp': '2026-01-01T10:00:00+00:00'}
    db.merge_annotations_for_book(1, 'EPUB', [dict(highlight)])
    viewer = StandInViewer(db, 1, [dict(highlight)])
    p = AskPanel(viewer)
    p.show()
    p.selection_changed(highlight['highlighted_text'], {'uuid': 'h-1'})  # the selection is on the highlight
    turn = answer_in(p.panel, 'Explain: {selected}')
    viewer.notes_edited('h-1', 'My first thought, edited in the viewer.')  # the reader edits the note meanwhile
    p.panel.on_link('save', 0)
    assert 'Saved as the note of the highlight.' in p.panel.chat.toPlainText()
    (shown,) = [h['notes'] for h in viewer.current_book_data['annotations_map']['highlight']]
    (saved,) = [a['annotation']['notes'] for a in db.all_annotations_for_book(1) if a['annotation']['type'] == 'highlight']
    for notes in (shown, saved, viewer.sent[-1][1]['notes']):
        assert notes.startswith('My first thought, edited in the viewer.') and turn.answer.strip() in notes
    p.close()
