# License: GPLv3 Copyright: the Book AI developers
"""A book's extracted text and its index, kept per library, book and format, so that a
book is read (and, for most formats, converted by calibre) once.

One file per library, book and format: FOLDER/<library id>/<book id>.<FORMAT>.bookai,
a header line (the book file's size and modification time, and the cache's schema),
then the Book, pickled and compressed. The Index is not stored: it is rebuilt from the
Book when loaded, which takes a fraction of reading the book, and keeps the file at
about 0.4 of the book's text size where the pickled Index alone was 2.2 times it (see
bench/grounding.py).

A file whose book file changed (size or modification time) is read again, and so is
one written for other Book classes (CACHE_VERSION and the classes' fields); a damaged
one is set aside (renamed *.damaged, never over one set aside before) and the book read
again, never an error; nor is a cache that cannot be read or written (the book is read).
"""

import json
import os
import pickle
import re
import zlib
from collections.abc import Callable, Iterable
from os import PathLike

from calibre.constants import cache_dir

from calibre_plugins.bookai.core.files import set_aside, write_private
from calibre_plugins.bookai.grounding import extract
from calibre_plugins.bookai.grounding.formats import read_book
from calibre_plugins.bookai.grounding.index import Index, passages

CACHE_VERSION = 1  # raise when what a cache file holds changes meaning
MAGIC = b'BOOKAI-TEXT '
SUFFIX = '.bookai'
COMPRESSION = 6  # zlib level: 0.39 of the text against 0.46 at level 1, loading as fast


def default_folder() -> str:
    """Where the cache lives: in calibre's cache folder."""
    return os.path.join(cache_dir(), 'bookai', 'text')


def schema() -> str:
    """What the cache files are written for: CACHE_VERSION and the fields of the Book classes,
    so that a field added to Book, Chapter or Paragraph makes old files be read again."""
    fields = [f'{cls.__name__}({",".join(getattr(cls, "__dataclass_fields__", ()))})'
              for cls in (extract.Book, extract.Chapter, extract.Paragraph)]
    return f'{CACHE_VERSION}:' + ';'.join(fields)


def stamp(path: str | PathLike, st: os.stat_result | None = None) -> dict:
    """The header that ties a cache file to the state of the book file at path."""
    st = st or os.stat(path)
    return {'schema': schema(), 'size': st.st_size, 'mtime_ns': st.st_mtime_ns}


def safe(name: object) -> str:
    """name as a part of a file name."""
    return re.sub(r'[^A-Za-z0-9_-]', '_', str(name))[:80] or '_'


class TextCache:
    """The cache files under folder."""

    def __init__(self, folder: str | PathLike) -> None:
        self.folder = str(folder)

    def library_folder(self, library_id: str) -> str:
        return os.path.join(self.folder, safe(library_id))

    def file_of(self, library_id: str, book_id: int, fmt: str) -> str:
        """The cache file of a book's format."""
        return os.path.join(self.library_folder(library_id), f'{int(book_id)}.{safe(fmt.upper())}{SUFFIX}')

    def get(self, library_id: str, book_id: int, fmt: str, path: str | PathLike) -> tuple[extract.Book, Index] | None:
        """(Book, Index) of the book file at path, or None when the cache has no current copy."""
        entry = self.file_of(library_id, book_id, fmt)
        try:
            current = stamp(path)
            with open(entry, 'rb') as f:
                header = f.readline()
                if not header.startswith(MAGIC):
                    raise ValueError('not a Book AI text cache file')
                if json.loads(header[len(MAGIC):]) != current:
                    return None  # the book file changed, or the classes did: read it again
                book = pickle.loads(zlib.decompress(f.read()))
            if not isinstance(book, extract.Book):
                raise ValueError(f'a {type(book).__name__}, not a Book')
        except FileNotFoundError:
            return None
        except Exception:  # anything a damaged file can raise while unpickling
            self.set_aside(entry)
            return None
        return book, Index(passages(book))

    def put(self, library_id: str, book_id: int, fmt: str, path: str | PathLike, book: extract.Book,
            st: os.stat_result | None = None) -> tuple[extract.Book, Index]:
        """Keep book, read from the file at path, and return (Book, Index). st: os.stat(path)
        from before the reading began (default: now), so that a file changed while it was
        being read is read again next time. A cache that cannot be written is left as it is."""
        header = MAGIC + json.dumps(stamp(path, st)).encode('ascii') + b'\n'
        data = zlib.compress(pickle.dumps(book, protocol=pickle.HIGHEST_PROTOCOL), COMPRESSION)
        entry = self.file_of(library_id, book_id, fmt)
        try:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            write_private(entry, header + data)  # atomic: a reader sees the old file or the new one
        except OSError:
            pass
        return book, Index(passages(book))

    def text_of(self, library_id: str, book_id: int, fmt: str, path: str | PathLike,
                read: Callable[[str | PathLike], extract.Book] | None = None) -> tuple[extract.Book, Index]:
        """(Book, Index) of the book file at path: from the cache, else read with read(path)
        (default: formats.read_book, converting in this process) and kept."""
        found = self.get(library_id, book_id, fmt, path)
        if found is not None:
            return found
        if read is None:
            def read(p: str | PathLike) -> extract.Book:
                return read_book(p, fmt)
        st = os.stat(path)
        return self.put(library_id, book_id, fmt, path, read(path), st)

    def drop(self, library_id: str, book_id: int) -> int:
        """Forget every format of a book."""
        prefix = f'{int(book_id)}.'
        return self.remove_where(library_id, lambda name: name.startswith(prefix))

    def prune(self, library_id: str, existing_book_ids: Iterable[int]) -> int:
        """Forget the books of a library that are no longer in it; returns how many files went."""
        keep = {str(int(i)) for i in existing_book_ids}
        return self.remove_where(library_id, lambda name: name.partition('.')[0] not in keep)

    def remove_where(self, library_id: str, condition: Callable[[str], bool]) -> int:
        """Remove the cache files of a library whose names meet condition; how many went."""
        folder = self.library_folder(library_id)
        try:
            names = os.listdir(folder)
        except OSError:
            return 0
        removed = 0
        for name in names:
            if SUFFIX in name and condition(name):
                try:
                    os.remove(os.path.join(folder, name))
                    removed += 1
                except OSError:
                    pass
        return removed

    def set_aside(self, entry: str) -> None:
        """Keep a damaged file for a look, out of the way (where it can be renamed)."""
        try:
            set_aside(entry)
        except OSError:
            pass
