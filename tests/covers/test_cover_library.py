# License: GPLv3 Copyright: the Book AI developers
"""A cover put into a real calibre library through calibre's own database API, and put back by
Undo byte for byte; a book that had no cover gets "no cover" back; a deleted book, an old cover
that cannot be kept, or calibre failing to write leave the library and Undo as they were.

Only an image Book AI decoded itself (core.images.decode_images, in calibre's worker) is put on a
book: its own baseline JPEG, within calibre's largest cover size. The new cover is read back
through calibre's db; when calibre fails (as calibre 6.13 does, emptying cover.jpg before it
raises) or what it wrote does not read back, the old bytes are put back and that is said in
words; the Undo entry is forgotten only once the old cover is back in place."""

import os

import pytest

from helpers.images import png, png_bomb, png_of_side


def jpeg(grey: int) -> bytes:
    """A JPEG as calibre stores a cover (calibre's own conversion of a PNG)."""
    from calibre.utils.img import save_cover_data_to
    data = save_cover_data_to(png(30, 40, grey))
    assert data[:2] == b'\xff\xd8'
    return data


@pytest.fixture
def db(tmp_path):
    """A real calibre library of three books: 1 with a cover, 2 and 3 without."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as open_library
    cache = open_library(str(tmp_path / 'library')).new_api
    for i in (1, 2, 3):
        assert cache.create_book_entry(Metadata(f'Book {i}', ['Ann Author'])) == i
    cache.set_cover({1: jpeg(0x20)})
    assert cache.field_for('cover', 1) and not cache.field_for('cover', 2)
    yield cache
    cache.close()


@pytest.fixture
def undo(tmp_path):
    from calibre_plugins.bookai.covers.undo import CoverUndo
    return CoverUndo(str(tmp_path / 'undo'))


def test_the_library_id_is_calibres(db):
    from calibre_plugins.bookai.covers.library import library_id_of
    from calibre_plugins.bookai.covers.undo import PLAIN_ID
    assert library_id_of(db) == db.library_id and PLAIN_ID.fullmatch(library_id_of(db))


def decoded(data: bytes):
    """data as Book AI decodes a cover for the library (in calibre's worker)."""
    from calibre_plugins.bookai.core.images import decode_images
    (d,) = decode_images([data], ['The new cover'], cover=True)
    assert d.ok, d.problem
    return d


def cover_file(db, book_id: int) -> bytes:
    """The book's cover.jpg as it is on disk ('' when there is none)."""
    path = os.path.join(db.backend.library_path, db.field_for('path', book_id), 'cover.jpg')
    if not os.path.exists(path):
        return b''
    with open(path, 'rb') as f:
        return f.read()


def calibre_613_failing(db, monkeypatch, times: int = 1):
    """db.set_cover failing as calibre 6.13's does when its export fails: cover.jpg opened for writing
    (emptied), then an error; `times` times, then as calibre does."""
    real = db.set_cover
    left = [times]

    def fails(book_id_data_map):
        if left[0] <= 0:
            return real(book_id_data_map)
        left[0] -= 1
        for book_id in book_id_data_map:
            open(os.path.join(db.backend.library_path, db.field_for('path', book_id), 'cover.jpg'), 'wb').close()
        raise ValueError('Failed to export image as JPEG with error: Image is empty')
    monkeypatch.setattr(db, 'set_cover', fails)


def test_a_cover_is_replaced_and_undone_byte_for_byte(db, undo):
    from calibre_plugins.bookai.covers.library import library_id_of, replace_cover, undo_cover
    lib = library_id_of(db)
    old, new = db.cover(1), decoded(jpeg(0xE0))
    assert old and old != new.jpeg and (new.width, new.height) == (30, 40)
    replace_cover(db, lib, 1, new, undo)
    assert db.cover(1) == new.jpeg == cover_file(db, 1)  # Book AI's own JPEG, as calibre keeps it
    assert undo.last(lib, 1).data == old and undo.books(lib) == [1]
    assert undo_cover(db, lib, 1, undo) is True
    assert db.cover(1) == old and db.field_for('cover', 1)
    assert undo.last(lib, 1) is None and undo_cover(db, lib, 1, undo) is False
    assert db.cover(1) == old


def test_a_png_goes_in_as_book_ais_own_jpeg(db, undo):
    from calibre_plugins.bookai.core.images import structure
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    old = db.cover(1)
    new = decoded(png(60, 90, 0xC0))
    replace_cover(db, db.library_id, 1, new, undo)
    stored = db.cover(1)
    found = structure(stored, 'It')
    assert stored == new.jpeg and (found.mime, found.width, found.height, found.progressive) == (
        'image/jpeg', 60, 90, False)  # baseline, as Book AI wrote it
    assert undo_cover(db, db.library_id, 1, undo) and db.cover(1) == old


def test_a_cover_larger_than_calibre_keeps_is_made_to_fit(db, undo):
    from calibre.utils.config_base import tweaks

    from calibre_plugins.bookai.covers.library import replace_cover
    most_w, most_h = tweaks['maximum_cover_size']
    new = decoded(png_of_side(3000, 4500))
    assert new.width <= most_w and new.height <= most_h and abs(new.width / new.height - 3000 / 4500) < 0.01
    replace_cover(db, db.library_id, 1, new, undo)
    assert db.cover(1) == new.jpeg


def test_covers_replaced_twice_come_back_in_order(db, undo):
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    lib = db.library_id
    first, second, third = db.cover(1), decoded(jpeg(0x60)), decoded(jpeg(0xA0))
    replace_cover(db, lib, 1, second, undo)
    replace_cover(db, lib, 1, third, undo)
    assert db.cover(1) == third.jpeg
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == second.jpeg
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == first


def test_a_book_without_a_cover_gets_no_cover_back(db, undo):
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    lib = db.library_id
    assert db.cover(2) is None
    replace_cover(db, lib, 2, decoded(jpeg(0x90)), undo)
    assert db.cover(2) is not None and db.field_for('cover', 2)
    kept = undo.last(lib, 2)
    assert kept is not None and kept.data is None
    assert undo_cover(db, lib, 2, undo) is True
    assert db.cover(2) is None and not db.field_for('cover', 2)
    assert undo.books(lib) == []


def test_a_deleted_book_is_told_and_nothing_is_written(db, undo):
    from calibre_plugins.bookai.covers.library import BookGone, replace_cover
    lib = db.library_id
    new = decoded(jpeg(0x90))
    db.remove_books((3,))
    with pytest.raises(BookGone) as e:
        replace_cover(db, lib, 3, new, undo)
    assert 'deleted from the calibre library' in str(e.value) and e.value.book_id == 3
    assert undo.books(lib) == [] and undo.last(lib, 3) is None
    assert db.cover(1) and db.cover(2) is None  # the others untouched


def test_undo_for_a_book_deleted_since_is_told(db, undo):
    from calibre_plugins.bookai.covers.library import BookGone, replace_cover, undo_cover
    lib = db.library_id
    replace_cover(db, lib, 2, decoded(jpeg(0x90)), undo)
    db.remove_books((2,))
    with pytest.raises(BookGone):
        undo_cover(db, lib, 2, undo)


def test_bytes_book_ai_did_not_decode_are_never_put_on_a_book(db, undo):
    from calibre_plugins.bookai.core.images import Decoded
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover
    old = db.cover(1)
    for cover in (jpeg(0x90), png(30, 40), Decoded('The new cover is damaged.'), None):
        with pytest.raises(NotReplaced) as e:
            replace_cover(db, db.library_id, 1, cover, undo)
        assert 'was not decoded by Book AI, so it was not put on the book' in str(e.value)
    assert db.cover(1) == old and undo.books(db.library_id) == []


def test_calibre_emptying_the_cover_then_failing_puts_the_old_one_back(db, undo, monkeypatch):
    """Issue 26: calibre 6.13's save_cover_data_to opens cover.jpg for writing before its export
    fails; the old cover was then lost, and its Undo entry forgotten. Now the old bytes are put back,
    it is said, and no Undo entry is left for a cover that is back."""
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover
    lib = db.library_id
    old = db.cover(1)
    new = decoded(jpeg(0x90))
    calibre_613_failing(db, monkeypatch)
    with pytest.raises(NotReplaced) as e:
        replace_cover(db, lib, 1, new, undo)
    assert str(e.value) == ('The new cover could not be written (ValueError: Failed to export image as JPEG with '
                            'error: Image is empty); the book has its old cover, as it was.')
    assert db.cover(1) == old == cover_file(db, 1) and db.field_for('cover', 1)
    assert undo.last(lib, 1) is None  # nothing to undo: the old cover is back
    calibre_613_failing(db, monkeypatch)  # a book that had no cover has none again
    with pytest.raises(NotReplaced):
        replace_cover(db, lib, 2, new, undo)
    assert db.cover(2) is None and cover_file(db, 2) == b'' and undo.last(lib, 2) is None


def test_a_cover_that_does_not_read_back_is_undone_at_once(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover
    lib = db.library_id
    old = db.cover(1)
    real = db.set_cover
    monkeypatch.setattr(db, 'set_cover', lambda m: real({b: (v[:len(v) // 2] if v and v != old else v)
                                                         for b, v in m.items()}))
    with pytest.raises(NotReplaced) as e:  # calibre stores half of it: it is not what Book AI made
        replace_cover(db, lib, 1, decoded(png(40, 60)), undo)
    assert 'the book has its old cover, as it was' in str(e.value)
    monkeypatch.undo()
    assert db.cover(1) == old and undo.last(lib, 1) is None


def test_when_the_old_cover_cannot_be_put_back_undo_keeps_it(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover, undo_cover
    lib = db.library_id
    old = db.cover(1)
    calibre_613_failing(db, monkeypatch, times=2)  # the new cover, then the old one put back: both fail
    with pytest.raises(NotReplaced) as e:
        replace_cover(db, lib, 1, decoded(jpeg(0x90)), undo)
    assert 'and the old cover could not be put back in the library: it is kept for Undo' in str(e.value)
    assert cover_file(db, 1) == b''  # what calibre left
    assert undo.last(lib, 1).data == old  # never forgotten while the old cover is not back
    monkeypatch.undo()
    assert undo_cover(db, lib, 1, undo) is True
    assert db.cover(1) == old == cover_file(db, 1) and undo.last(lib, 1) is None


def test_ctrl_c_while_calibre_writes_puts_the_old_cover_back_first(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import replace_cover
    lib = db.library_id
    old = db.cover(1)
    real = db.set_cover
    calls = []

    def interrupted(m):
        calls.append(m)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(m)
    monkeypatch.setattr(db, 'set_cover', interrupted)
    with pytest.raises(KeyboardInterrupt):
        replace_cover(db, lib, 1, decoded(jpeg(0x90)), undo)
    assert db.cover(1) == old and undo.last(lib, 1) is None


def test_undo_that_cannot_be_written_keeps_the_cover_and_the_entry(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover, undo_cover
    lib = db.library_id
    first = db.cover(1)
    new = decoded(jpeg(0x90))
    replace_cover(db, lib, 1, new, undo)
    calibre_613_failing(db, monkeypatch)
    with pytest.raises(NotReplaced) as e:
        undo_cover(db, lib, 1, undo)
    assert str(e.value).startswith('The old cover could not be put back (ValueError: Failed to export image')
    assert 'the book has the cover it had, and Undo still keeps the old one' in str(e.value)
    assert db.cover(1) == new.jpeg and undo.last(lib, 1).data == first
    monkeypatch.undo()
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == first


def test_a_hostile_entry_is_not_given_to_calibre(db, undo):
    """What Undo keeps is Book AI's own file, but a file: its bytes go to calibre (which decodes
    them on the GUI thread) only once their structure is checked."""
    from calibre_plugins.bookai.covers.library import NotReplaced, undo_cover
    lib = db.library_id
    before = db.cover(1)
    undo.keep(lib, 1, png_bomb(64, 64, 10 ** 8))
    with pytest.raises(NotReplaced) as e:
        undo_cover(db, lib, 1, undo)
    assert str(e.value).startswith('The cover kept for Undo holds far more data than its 64x64 pixels need')
    assert str(e.value).endswith('The book keeps the cover it has.')
    assert db.cover(1) == before


def test_calibre_failing_to_write_leaves_no_undo_entry(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover
    lib = db.library_id
    old = db.cover(1)
    new = decoded(jpeg(0x90))

    def fails(book_id_data_map):
        if book_id_data_map.get(1) == new.jpeg:
            raise OSError(28, 'No space left on device')
    monkeypatch.setattr(db, 'set_cover', fails)
    with pytest.raises(NotReplaced) as e:
        replace_cover(db, lib, 1, new, undo)
    assert str(e.value) == ('The new cover could not be written (No space left on device); the book has its old '
                            'cover, as it was.')
    monkeypatch.undo()
    assert db.cover(1) == old
    assert undo.last(lib, 1) is None and undo.books(lib) == []


def test_an_old_cover_that_cannot_be_kept_is_not_replaced(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers import undo as undo_module
    from calibre_plugins.bookai.covers.library import replace_cover
    lib = db.library_id
    old = db.cover(1)
    new = decoded(jpeg(0x90))
    monkeypatch.setattr(undo_module, 'MAX_ENTRY_BYTES', 10)
    with pytest.raises(undo_module.UndoNotKept):
        replace_cover(db, lib, 1, new, undo)
    assert db.cover(1) == old and undo.books(lib) == []


def test_book_requests_carry_each_books_own_prompt(db):
    from calibre_plugins.bookai.covers.making import book_requests
    from calibre_plugins.bookai.covers.prompt import CoverChoices, cover_prompt
    choices = CoverChoices('A quiet lake.', True, True, False, False, '3:4', {}, '')
    db.remove_books((3,))
    reqs, notes = book_requests(db, [2, 3, 1], choices)  # 3 is gone: left out
    assert notes == []
    assert [(r.book_id, r.title) for r in reqs] == [(2, 'Book 2'), (1, 'Book 1')]
    assert reqs[0].prompt == cover_prompt(db.get_metadata(2), choices)
    assert reqs[0].prompt.startswith('Design a book cover for the book "Book 2" by Ann Author.\n\nA quiet lake.')


def test_book_requests_put_each_books_fields_through_the_templates_in_one_worker(db, monkeypatch):
    from calibre_plugins.bookai.core import isolated
    from calibre_plugins.bookai.covers.making import book_requests
    from calibre_plugins.bookai.covers.prompt import CoverChoices
    runs = []
    real_run = isolated.run
    monkeypatch.setattr(isolated, 'run', lambda *a, **k: runs.append(a[:2]) or real_run(*a, **k))
    choices = CoverChoices('A quiet lake.', True, True, False, False, '3:4', {'title': '{title:uppercase()}'}, '')
    reqs, notes = book_requests(db, [2, 1], choices)
    assert notes == []
    assert 'Title: "BOOK 2"' in reqs[0].prompt and 'Title: "BOOK 1"' in reqs[1].prompt
    assert runs == [('covers.prompt', 'evaluate_in_worker')]  # every book in one worker
