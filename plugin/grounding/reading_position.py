# License: GPLv3 Copyright: the Book AI developers
"""Where the reader is in a book: the E-book viewer's saved last-read place.

calibre's E-book viewer keeps it with the book's annotations in its own folder,
<calibre config>/viewer/annots/<sha256 of the book file's path>.json, as a
"last-read" annotation holding a CFI, saved as the reader turns pages. (The
library's database keeps highlights and bookmarks, not this.) The CFI is turned
into a place in the Book.
"""

import os
from datetime import datetime
from hashlib import sha256
from typing import TYPE_CHECKING

from calibre.constants import config_dir

from calibre_plugins.bookai.core.files import read_regular
from calibre_plugins.bookai.core.limits import load_json

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book


# bytes of the viewer's annotations file of one book read at most (calibre's file: a larger one gives no place)
MAX_ANNOTATIONS_BYTES = 16 * 1024 * 1024


def viewer_annotations_file(path: str) -> str:
    """The E-book viewer's annotations file for the book file at path."""
    return os.path.join(config_dir, 'viewer', 'annots', sha256(path.encode('utf-8')).hexdigest() + '.json')


def saved_position(path: str, book: 'Book') -> float | None:
    """The reader's last-read position in the book file at path, as a fraction of book (the
    extract.Book read from it), or None when the viewer has none for it."""
    offset = offset_of_place(book, last_read_places(path) or [])
    return None if offset is None else book.fraction(offset)


def last_read_places(path: str) -> list[tuple[float, str]] | None:
    """(when, CFI) of each last-read place the viewer keeps for the book file at path: [] when it
    keeps none (the book was never opened in the viewer); None when it keeps a file of them that
    cannot be read (not a file, too large, damaged): the book may have been begun, where is unknown."""
    try:  # calibre's file: a regular file only, opened without blocking, bounded in size and structure
        annotations = load_json(read_regular(viewer_annotations_file(path), MAX_ANNOTATIONS_BYTES))
    except FileNotFoundError:  # never opened in the viewer
        return []
    except (OSError, ValueError, RecursionError):  # not a file, too large, damaged
        return None
    return [(epoch(a.get('timestamp')), str(a.get('pos', '')))
            for a in (annotations if isinstance(annotations, list) else ())
            if isinstance(a, dict) and a.get('type') == 'last-read' and a.get('pos_type') == 'epubcfi']


def offset_of_place(book: 'Book', places: list[tuple[float, str]]) -> int | None:
    """The character offset in book of the latest of places (last_read_places()) found in it; None
    when none is."""
    found = [(when, offset) for when, cfi in places if (offset := book.offset_of_cfi(cfi)) is not None]
    return max(found)[1] if found else None


def epoch(timestamp: object) -> float:
    """A saved ISO timestamp in seconds since the epoch; 0.0 when it is not one."""
    try:
        return datetime.fromisoformat(str(timestamp).replace('Z', '+00:00')).timestamp()
    except ValueError:
        return 0.0
