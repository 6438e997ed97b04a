# License: GPLv3 Copyright: the Book AI developers
"""Where the reader is in a book: the E-book viewer's saved last-read place.

calibre's E-book viewer keeps it with the book's annotations in its own folder,
<calibre config>/viewer/annots/<sha256 of the book file's path>.json, as a
"last-read" annotation holding a CFI, saved as the reader turns pages. (The
library's database keeps highlights and bookmarks, not this.) The CFI is turned
into a place in the Book.
"""

import json
import os
from datetime import datetime
from hashlib import sha256
from typing import TYPE_CHECKING

from calibre.constants import config_dir

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book


def viewer_annotations_file(path: str) -> str:
    """The E-book viewer's annotations file for the book file at path."""
    return os.path.join(config_dir, 'viewer', 'annots', sha256(path.encode('utf-8')).hexdigest() + '.json')


def saved_position(path: str, book: 'Book') -> float | None:
    """The reader's last-read position in the book file at path, as a fraction of book (the
    extract.Book read from it), or None when the viewer has none for it."""
    try:
        with open(viewer_annotations_file(path), 'rb') as f:
            annotations = json.loads(f.read())
    except (OSError, ValueError):  # never opened in the viewer, or a damaged file: no position
        return None
    places = []  # (when, fraction)
    for a in annotations if isinstance(annotations, list) else ():
        if isinstance(a, dict) and a.get('type') == 'last-read' and a.get('pos_type') == 'epubcfi':
            offset = book.offset_of_cfi(str(a.get('pos', '')))
            if offset is not None:
                places.append((epoch(a.get('timestamp')), book.fraction(offset)))
    return max(places)[1] if places else None


def epoch(timestamp: object) -> float:
    """A saved ISO timestamp in seconds since the epoch; 0.0 when it is not one."""
    try:
        return datetime.fromisoformat(str(timestamp).replace('Z', '+00:00')).timestamp()
    except ValueError:
        return 0.0
