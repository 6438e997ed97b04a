# License: GPLv3 Copyright: the Book AI developers
"""A cover put into a calibre library, through calibre's own database API, and put back.

db is calibre's Cache (the GUI's current_db.new_api, or calibre.library.db(path).new_api
on the command line). Nothing of the reader's is lost:

- A cover is replaced only with an image Book AI has itself decoded, within bounds, and written
  anew (core.images.decode_images: a core.images.Decoded with its baseline JPEG), never with
  the bytes a service sent.
- The old cover is kept for Undo (covers.undo) first: if it cannot be kept, or the book is gone,
  nothing is written to the library.
- The new cover is read back through calibre's db and checked (core.images.structure: a whole
  JPEG of the size Book AI made). Any failure (calibre raising, as calibre 6.13 does after it
  has emptied cover.jpg, or a cover that does not read back) puts the old bytes back, and says
  so in words (NotReplaced). The Undo entry is forgotten only once the old cover is back in
  place, byte for byte; while it is not, Undo keeps it.
- Undo puts the kept bytes back the same way: the cover it replaces is put back if they do not
  read back whole, and the entry is forgotten only once they do.

calibre decodes and writes a cover with Qt on the calling thread: in calibre's main window, the
GUI thread (gui.worker's note), one book a step; what Book AI gives it is small and baseline.
"""

from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.images import Decoded, cover_box, structure
from calibre_plugins.bookai.covers.undo import CoverUndo, KeptCover

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()


class BookGone(Exception):
    """The book is no longer in the library."""

    def __init__(self, book_id: int) -> None:
        super().__init__(_('The book you made a cover for has been deleted from the calibre library.'))
        self.book_id = book_id


class NotReplaced(Exception):
    """The cover could not be put on the book (or put back by Undo), said in a sentence that says
    where the old one is: back on the book, or kept for Undo."""


def library_id_of(db: 'Cache') -> str:
    """The library's id, as the rest of Book AI keys a library (calibre's library_id)."""
    return str(db.library_id)


def reason_of(e: BaseException) -> str:
    """What went wrong, in a few words, for a sentence."""
    if isinstance(e, OSError):
        return str(e.strerror or e)
    if isinstance(e, (NotReplaced, ProviderError)):
        return str(e)
    return f'{type(e).__name__}: {e}' if str(e) else type(e).__name__


def put_back(db: 'Cache', book_id: int, old: bytes | None) -> bool:
    """The book's cover made old again (None: no cover), as calibre stores any cover; whether it
    reads back byte for byte."""
    try:
        db.set_cover({book_id: old})
        return db.cover(book_id) == old
    except Exception:  # calibre could not: told by the caller, the entry kept for Undo
        return False


def check_new_cover(db: 'Cache', book_id: int, cover: Decoded) -> None:
    """Raises NotReplaced unless the book's cover, read back through calibre's db, is the JPEG
    Book AI made: whole, of its size (calibre writes a JPEG that fits its largest cover as it is)."""
    back = db.cover(book_id)
    if not back:
        raise NotReplaced(_('calibre has no cover for the book after writing it'))
    if back != cover.jpeg:
        try:
            found = structure(back, _('The cover calibre wrote'))
        except ProviderError as e:
            raise NotReplaced(str(e)) from None
        if (found.mime, found.width, found.height) != ('image/jpeg', cover.width, cover.height):
            raise NotReplaced(_('the cover calibre wrote is not the one Book AI made'))


def replace_cover(db: 'Cache', library_id: str, book_id: int, cover: Decoded, undo: CoverUndo) -> None:
    """Make cover (Book AI's own JPEG, core.images.decode_images) the book's cover, after keeping
    the cover it had in undo; read back and checked. Raises BookGone when the book is no longer
    in the library, undo.UndoNotKept when the old cover could not be kept (nothing is replaced then),
    NotReplaced (a sentence) when the new cover is not one Book AI decoded or could not be
    written: the old cover is then back, or, when even that failed, kept for Undo."""
    if not isinstance(cover, Decoded) or not cover.ok or not cover.jpeg:
        raise NotReplaced(_('The new cover was not decoded by Book AI, so it was not put on the book.'))
    box = cover_box()
    if cover.width > box[0] or cover.height > box[1]:
        raise NotReplaced(_('The new cover is larger than calibre keeps covers, so it was not put on the book.'))
    if not db.has_id(book_id):
        raise BookGone(book_id)
    old = db.cover(book_id) or None
    entry = undo.keep(library_id, book_id, old)
    try:
        db.set_cover({book_id: cover.jpeg})
        check_new_cover(db, book_id, cover)
    except BaseException as e:
        if put_back(db, book_id, old):
            undo.forget(library_id, book_id, entry)
            sentence = _('The new cover could not be written ({reason}); the book has its old cover, as it '
                         'was.').format(reason=reason_of(e))
        else:
            sentence = _('The new cover could not be written ({reason}), and the old cover could not be put back '
                         'in the library: it is kept for Undo. Undo cover change puts it back.').format(
                reason=reason_of(e))
        if not isinstance(e, Exception):  # Ctrl-C, a worker's SystemExit: the old cover is back first
            raise
        raise NotReplaced(sentence) from None


def undo_cover(db: 'Cache', library_id: str, book_id: int, undo: CoverUndo, kept: KeptCover | None = None) -> bool:
    """Put back the cover the book had before Book AI's last replaced it (or take the cover
    off, when it had none): kept, read before (in a thread), or else now (undo.last()). False
    when there is nothing to undo; BookGone when the book is no longer in the library (what is
    kept for it is left, for prune() to forget); NotReplaced (a sentence) when the kept cover is
    not an image Book AI accepts or could not be written (the book then has the cover it had,
    and the entry is kept)."""
    kept = kept if kept is not None else undo.last(library_id, book_id)
    if kept is None:
        return False
    if not db.has_id(book_id):
        raise BookGone(book_id)
    if kept.data is not None:
        try:
            structure(kept.data, _('The cover kept for Undo'))
        except ProviderError as e:
            raise NotReplaced(str(e) + ' ' + _('The book keeps the cover it has.')) from None
    current = db.cover(book_id) or None
    try:
        db.set_cover({book_id: kept.data})
        if (db.cover(book_id) or None) != kept.data:
            raise NotReplaced(_('the cover calibre wrote is not the one kept'))
    except BaseException as e:
        if put_back(db, book_id, current):
            sentence = _('The old cover could not be put back ({reason}); the book has the cover it had, and Undo '
                         'still keeps the old one.').format(reason=reason_of(e))
        else:
            sentence = _('The old cover could not be put back ({reason}), nor the cover the book had; Undo still '
                         'keeps the old one.').format(reason=reason_of(e))
        if not isinstance(e, Exception):
            raise
        raise NotReplaced(sentence) from None
    undo.forget(library_id, book_id, kept.entry)
    return True
