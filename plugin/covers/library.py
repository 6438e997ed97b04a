# License: GPLv3 Copyright: the Book AI developers
"""A cover put into a calibre library, through calibre's own database API, and put back.

db is calibre's Cache (the GUI's current_db.new_api, or calibre.library.db(path).new_api
on the command line). A cover is replaced only once the old one is kept for Undo
(covers.undo): if it cannot be kept, or the book is gone, nothing is written to the library.
"""

from typing import TYPE_CHECKING

from calibre_plugins.bookai.covers.undo import CoverUndo

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()


class BookGone(Exception):
    """The book is no longer in the library."""

    def __init__(self, book_id: int) -> None:
        super().__init__(_('The book you made a cover for has been deleted from the calibre library.'))
        self.book_id = book_id


def library_id_of(db: 'Cache') -> str:
    """The library's id, as the rest of Book AI keys a library (calibre's library_id)."""
    return str(db.library_id)


def replace_cover(db: 'Cache', library_id: str, book_id: int, data: bytes, undo: CoverUndo) -> None:
    """Make data the book's cover (calibre stores it as calibre does with any cover), after
    keeping the cover it had in undo. Raises BookGone when the book is no longer in the
    library, undo.NotKept when the old cover could not be kept (nothing is replaced then), and
    what calibre raises when it cannot write the cover (then nothing is kept for Undo)."""
    if not db.has_id(book_id):
        raise BookGone(book_id)
    old = db.cover(book_id)
    entry = undo.keep(library_id, book_id, old if old else None)
    try:
        db.set_cover({book_id: data})
    except BaseException:
        undo.forget(library_id, book_id, entry)
        raise


def undo_cover(db: 'Cache', library_id: str, book_id: int, undo: CoverUndo) -> bool:
    """Put back the cover the book had before Book AI's last replaced it (or take the cover
    off, when it had none). False when there is nothing to undo; BookGone when the book is no
    longer in the library (what is kept for it is left, for prune() to forget)."""
    kept = undo.last(library_id, book_id)
    if kept is None:
        return False
    if not db.has_id(book_id):
        raise BookGone(book_id)
    db.set_cover({book_id: kept.data})
    undo.forget(library_id, book_id, kept.entry)
    return True
