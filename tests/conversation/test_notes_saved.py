# License: GPLv3 Copyright: the Book AI developers
"""Save to book never loses a reader's text (conversation.notes.append_note), on a real calibre
library in this process: the note is appended and read back, from calibre and from the database
file; a field another program changed in the database file behind calibre's back is not written;
a write the database refuses, one that reads back as something else, and a failure after the
write each leave (or put back) the old text and say so in words; should even the putting back
fail, the old text is kept in a private file; the other books still get the note."""

import os
import stat

import pytest

from calibre_plugins.bookai.conversation.notes import NotSaved, append_note, on_disk

NOTE = 'A **note** from Book AI.\n'
OLD = '<p>The reader\'s own words.</p>'


@pytest.fixture
def db(tmp_path):
    """A new calibre library with three books, a comments text each, and a long-text column."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as open_db
    folder = tmp_path / 'library'
    folder.mkdir()
    cache = open_db(str(folder)).new_api
    for title in ('First', 'Second', 'Third'):
        mi = Metadata(title, ['Ann Author'])
        mi.comments = f'<p>{title}: {OLD}</p>'
        cache.create_book_entry(mi)
    cache.create_custom_column('notes', 'My notes', 'comments', False, display={'interpret_as': 'long-text'})
    cache.close()
    cache = open_db(str(folder)).new_api  # the new column is there once the library is opened again
    cache.set_field('#notes', {1: 'Kept by hand.', 2: 'Also mine.'})
    yield cache
    cache.close()


def in_file(db, field, book_id):
    """What another process opening the library reads."""
    from calibre.library import db as open_db
    other = open_db(db.backend.library_path).new_api
    try:
        return other.field_for(field, book_id)
    finally:
        other.close()


@pytest.mark.parametrize('field', ['comments', '#notes'])
def test_the_note_is_appended_and_read_back_from_the_file(db, field):
    before = {i: db.field_for(field, i) for i in (1, 2)}
    assert append_note(db, [1, 2, 1], field, NOTE) == [1, 2]  # a book named twice gets the note once
    for i in (1, 2):
        value = db.field_for(field, i)
        assert value.startswith(before[i]) and value.count('from Book AI') == 1
        assert on_disk(db, field, i) == value == in_file(db, field, i)


def test_a_field_changed_by_another_program_is_not_written(db):
    # another program (calibredb in a second process, a sync tool) wrote into the database file:
    # calibre's copy in memory does not know yet
    db.backend.execute('UPDATE comments SET text=? WHERE book=?', ('<p>Written by another program.</p>', 2))
    with pytest.raises(NotSaved) as e:
        append_note(db, [1, 2, 3], 'comments', NOTE)
    assert e.value.saved == [1, 3]
    said = str(e.value)
    assert said.startswith('Saved to Comments of 2 book(s).') and '"Second"' in said and 'another program' in said
    assert in_file(db, 'comments', 2) == '<p>Written by another program.</p>'  # nothing of it lost
    assert 'note' in in_file(db, 'comments', 1) and 'note' in in_file(db, 'comments', 3)


def test_a_write_the_database_refuses_leaves_the_old_text(db):
    old = db.field_for('comments', 2)
    db.backend.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON comments WHEN NEW.book = 2 "
                       "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    with pytest.raises(NotSaved) as e:
        append_note(db, [1, 2], 'comments', NOTE)
    assert e.value.saved == [1]
    said = str(e.value)
    assert '"Second"' in said and 'disk is full' in said and 'held before is back' in said
    assert db.field_for('comments', 2) == on_disk(db, 'comments', 2) == old == in_file(db, 'comments', 2)


def test_a_write_that_reads_back_otherwise_is_undone(db):
    old = db.field_for('#notes', 1)
    table = db.fields['#notes'].metadata['table']
    # something in the database changes what was written (once: putting the old text back works)
    db.backend.execute(f"CREATE TEMP TRIGGER tamper AFTER INSERT ON {table} WHEN NEW.value LIKE '%Book AI%' "
                       f"BEGIN UPDATE {table} SET value='tampered' WHERE book=NEW.book; END")
    with pytest.raises(NotSaved) as e:
        append_note(db, [1], '#notes', NOTE)
    assert e.value.saved == [] and 'held before is back' in str(e.value) and 'Saved to' not in str(e.value)
    assert db.field_for('#notes', 1) == old == in_file(db, '#notes', 1)


def test_a_failure_after_the_write_puts_the_old_text_back(db, monkeypatch):
    old = db.field_for('comments', 3)

    def fails(*args, **kwargs):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(db, '_mark_as_dirty', fails)  # after the value is in the file: it must come out again
    with pytest.raises(NotSaved) as e:
        append_note(db, [3], 'comments', NOTE)
    assert 'No space left on device' in str(e.value) and 'held before is back' in str(e.value)
    monkeypatch.undo()
    assert db.field_for('comments', 3) == old == in_file(db, 'comments', 3)


def test_when_even_putting_back_fails_the_old_text_is_kept_in_a_private_file(db):
    from calibre.constants import cache_dir
    old = db.field_for('#notes', 2)
    table = db.fields['#notes'].metadata['table']
    db.backend.execute(f"CREATE TEMP TRIGGER tamper AFTER INSERT ON {table} "
                       f"BEGIN UPDATE {table} SET value='tampered' WHERE book=NEW.book; END")
    with pytest.raises(NotSaved) as e:
        append_note(db, [2], '#notes', NOTE)
    said = str(e.value)
    assert 'could not be put back' in said
    path = said.rpartition('it is kept in ')[2].rstrip('.')
    assert path.startswith(os.path.join(cache_dir(), 'bookai', 'saved-fields'))
    with open(path, encoding='utf-8') as f:
        assert f.read() == old
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_a_field_that_cannot_hold_notes_is_refused_before_anything_is_written(db):
    before = db.field_for('title', 1)
    with pytest.raises(ValueError):
        append_note(db, [1], 'title', NOTE)
    assert db.field_for('title', 1) == before
