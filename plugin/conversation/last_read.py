# License: GPLv3 Copyright: the Book AI developers
"""When and where a book was last read in the E-book viewer, as Book AI saw it, and whether the
viewer's panel offers "Recap since you last read" (a break of at least the reader's days).

calibre's desktop viewer keeps only the latest place of a book (its "last-read" annotation,
replaced as soon as the book is shown again; the library's last_read_positions are the content
server's), so Book AI keeps its own record: for each book seen in the viewer (a library's, or a
file from outside it), when it was last seen, the place then and the place that reading began at
(where the viewer opened it), as the viewer's CFIs. After a break, the recap offered is of what was
read that last time: since the place it began at, the story before it as summaries. The record
is one small private file in calibre's cache folder, at most MAX_BOOKS books (the longest unseen
dropped first), read bounded; a damaged one is set aside and a new one begun. No record is kept
while the setting is 0 (never offer).

recap_offer() is the decision (a break or not), since_place() the place to recap since: both
without Qt, as the panel only shows them.
"""

import os
import time
from dataclasses import dataclass
from hashlib import sha256
from typing import TypeGuard

from calibre_plugins.bookai.core.files import read_kept, set_aside_if_can, write_private

MAX_FILE_BYTES = 256 * 1024  # the record file read at most: a larger one is set aside
MAX_BOOKS = 500              # books kept in it, at most
MAX_CFI_CHARS = 2000         # a place longer than this is not kept (a CFI is a few dozen characters)
KIND, VERSION = 'bookai-last-read', 1
DAY = 86400.0
SAME_PLACE = 0.001           # places closer than this (a fraction of the book) are the same place


@dataclass(frozen=True)
class LastRead:
    """A book as last seen in the viewer: when (seconds since the epoch) and where (a CFI), and where
    that reading began (a CFI; '' when not known)."""
    seen: float
    cfi: str
    began: str = ''


@dataclass(frozen=True)
class Offer:
    """A recap offered after a break: the days since the book was last read, and the place its
    recap starts from: where that last reading began."""
    days: int
    cfi: str


def default_file() -> str:
    from calibre.constants import cache_dir  # late: only when the record is read or kept
    return os.path.join(cache_dir(), 'bookai', 'last-read.json')


def book_key(library_id: str, book_id: int, fmt: str, path: str) -> str:
    """The record's key of a book: a library's book by its library, id and format; else its file's
    path. Hashed: the record names no book and no folder."""
    name = f'library:{library_id}:{int(book_id)}:{fmt.upper()}' if library_id and book_id else f'file:{path}'
    return sha256(name.encode('utf-8')).hexdigest()[:32]


class LastReadRecord:
    """The record file (default_file()): get() a book's, put() one."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_file()
        self.set_aside_as: list[str] = []  # damaged files set aside, as they were renamed

    def read(self) -> dict[str, LastRead]:
        """Every book's, by key; {} when there is no record, or it cannot be read (a damaged one is
        set aside first)."""
        try:
            data = read_kept(self.path, MAX_FILE_BYTES, KIND, VERSION)
            books = data.get('books')
            if type(books) is not dict or len(books) > MAX_BOOKS:
                raise ValueError('no books, or too many')
            return {k: entry for k, v in books.items() if (entry := last_read_of(k, v)) is not None}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError, UnicodeError):  # damaged, too large, not a file
            if (kept := set_aside_if_can(self.path)) is not None:
                self.set_aside_as.append(kept)
            return {}

    def get(self, key: str) -> LastRead | None:
        return self.read().get(key)

    def put(self, key: str, cfi: str, seen: float | None = None, began: str = '') -> None:
        """Keep that the book key was seen at cfi (now, or at seen), in a reading that began at
        began. Raises OSError when it cannot be written."""
        import json  # writing only
        if not cfi or len(cfi) > MAX_CFI_CHARS:
            return
        books = self.read()
        books.pop(key, None)
        books[key] = LastRead(time.time() if seen is None else seen, cfi, began if is_cfi(began) else '')
        kept = sorted(books.items(), key=lambda kv: kv[1].seen)[-MAX_BOOKS:]
        write_private(self.path, json.dumps({'kind': KIND, 'version': VERSION, 'books': {
            k: {'seen': v.seen, 'cfi': v.cfi, 'began': v.began} for k, v in kept}}))


def last_read_of(key: object, value: object) -> LastRead | None:
    """An entry of the file, checked: None for one that is not as Book AI writes it."""
    if type(key) is not str or len(key) > 64 or type(value) is not dict:
        return None
    seen, cfi, began = value.get('seen'), value.get('cfi'), value.get('began', '')
    if not isinstance(seen, (int, float)) or isinstance(seen, bool) or not 0 <= seen < 1e11:  # not NaN, nor
        return None                                                                             # past year 5000
    if not is_cfi(cfi):
        return None
    return LastRead(float(seen), cfi, began if is_cfi(began) else '')


def is_cfi(value: object) -> TypeGuard[str]:
    """A place as the viewer gives it, of a length a place has."""
    return type(value) is str and value.startswith('epubcfi(') and len(value) <= MAX_CFI_CHARS


def recap_offer(earlier: LastRead | None, now: float, days: int) -> Offer | None:
    """The offer of a recap for a book opened now, last read earlier (None: never seen): when days
    (the reader's setting; 0: never) or more have passed. A clock set back (earlier in the future)
    is no break."""
    if days <= 0 or earlier is None:
        return None
    gone = now - earlier.seen
    if gone < days * DAY:
        return None
    return Offer(int(gone // DAY), earlier.began or earlier.cfi)


def since_place(earlier: float | None, current: float) -> float | None:
    """The earlier place (a fraction of the book) a recap "since you last read" starts from; None
    for the story so far: no earlier place known, or none before the current one."""
    if earlier is None or not 0 <= earlier < current - SAME_PLACE:
        return None
    return earlier
