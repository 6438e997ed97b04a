# License: GPLv3 Copyright: the Book AI developers
"""A cover put into a real calibre library through calibre's own database API, and put back by
Undo byte for byte; a book that had no cover gets "no cover" back; a deleted book, an old cover
that cannot be kept, or calibre failing to write leave the library and Undo as they were."""

import pytest

from helpers.images import png


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


def test_a_cover_is_replaced_and_undone_byte_for_byte(db, undo):
    from calibre_plugins.bookai.covers.library import library_id_of, replace_cover, undo_cover
    lib = library_id_of(db)
    old, new = db.cover(1), jpeg(0xE0)
    assert old and old != new
    replace_cover(db, lib, 1, new, undo)
    assert db.cover(1) == new
    assert undo.last(lib, 1).data == old and undo.books(lib) == [1]
    assert undo_cover(db, lib, 1, undo) is True
    assert db.cover(1) == old and db.field_for('cover', 1)
    assert undo.last(lib, 1) is None and undo_cover(db, lib, 1, undo) is False
    assert db.cover(1) == old


def test_a_png_is_stored_as_calibre_stores_any_cover(db, undo):
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    old = db.cover(1)
    replace_cover(db, db.library_id, 1, png(60, 90, 0xC0), undo)
    stored = db.cover(1)
    assert stored[:2] == b'\xff\xd8' and stored != old  # calibre keeps covers as JPEG
    assert undo_cover(db, db.library_id, 1, undo) and db.cover(1) == old


def test_covers_replaced_twice_come_back_in_order(db, undo):
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    lib = db.library_id
    first, second, third = db.cover(1), jpeg(0x60), jpeg(0xA0)
    replace_cover(db, lib, 1, second, undo)
    replace_cover(db, lib, 1, third, undo)
    assert db.cover(1) == third
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == second
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == first


def test_a_book_without_a_cover_gets_no_cover_back(db, undo):
    from calibre_plugins.bookai.covers.library import replace_cover, undo_cover
    lib = db.library_id
    assert db.cover(2) is None
    replace_cover(db, lib, 2, jpeg(0x90), undo)
    assert db.cover(2) is not None and db.field_for('cover', 2)
    kept = undo.last(lib, 2)
    assert kept is not None and kept.data is None
    assert undo_cover(db, lib, 2, undo) is True
    assert db.cover(2) is None and not db.field_for('cover', 2)
    assert undo.books(lib) == []


def test_a_deleted_book_is_told_and_nothing_is_written(db, undo):
    from calibre_plugins.bookai.covers.library import BookGone, replace_cover
    lib = db.library_id
    db.remove_books((3,))
    with pytest.raises(BookGone) as e:
        replace_cover(db, lib, 3, jpeg(0x90), undo)
    assert 'deleted from the calibre library' in str(e.value) and e.value.book_id == 3
    assert undo.books(lib) == [] and undo.last(lib, 3) is None
    assert db.cover(1) and db.cover(2) is None  # the others untouched


def test_undo_for_a_book_deleted_since_is_told(db, undo):
    from calibre_plugins.bookai.covers.library import BookGone, replace_cover, undo_cover
    lib = db.library_id
    replace_cover(db, lib, 2, jpeg(0x90), undo)
    db.remove_books((2,))
    with pytest.raises(BookGone):
        undo_cover(db, lib, 2, undo)


def test_calibre_failing_to_write_leaves_no_undo_entry(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers.library import replace_cover
    lib = db.library_id
    old = db.cover(1)

    def fails(book_id_data_map):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(db, 'set_cover', fails)
    with pytest.raises(OSError):
        replace_cover(db, lib, 1, jpeg(0x90), undo)
    monkeypatch.undo()
    assert db.cover(1) == old
    assert undo.last(lib, 1) is None and undo.books(lib) == []


def test_an_old_cover_that_cannot_be_kept_is_not_replaced(db, undo, monkeypatch):
    from calibre_plugins.bookai.covers import undo as undo_module
    from calibre_plugins.bookai.covers.library import replace_cover
    lib = db.library_id
    old = db.cover(1)
    monkeypatch.setattr(undo_module, 'MAX_ENTRY_BYTES', 10)
    with pytest.raises(undo_module.NotKept):
        replace_cover(db, lib, 1, jpeg(0x90), undo)
    assert db.cover(1) == old and undo.books(lib) == []


def test_book_requests_carry_each_books_own_prompt(db):
    from calibre_plugins.bookai.covers.bulk import book_requests
    from calibre_plugins.bookai.covers.prompt import CoverChoices, cover_prompt
    choices = CoverChoices('A quiet lake.', True, True, False, False, '3:4', {}, '')
    db.remove_books((3,))
    reqs = book_requests(db, [2, 3, 1], choices)  # 3 is gone: left out
    assert [(r.book_id, r.title) for r in reqs] == [(2, 'Book 2'), (1, 'Book 1')]
    assert reqs[0].prompt == cover_prompt(db.get_metadata(2), choices)
    assert reqs[0].prompt.startswith('Design a book cover for the book "Book 2" by Ann Author.\n\nA quiet lake.')
