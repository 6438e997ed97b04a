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

A cache file is read as any file from outside is: only a regular file (files.read_regular: a
FIFO in its place is not waited on), at most MAX_FILE_BYTES, unpacked to at most
MAX_UNPACKED_BYTES, and unpickled into nothing but the Book classes (BookUnpickler: a file that
names any other class or function is damaged, never run). Its folders are private (0700,
files.private_folder), narrowed when an older version made them wider.
"""

import io
import json
import os
import pickle
import re
import zlib
from collections.abc import Callable, Iterable
from os import PathLike

from calibre.constants import cache_dir

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import private_folder, read_regular, remove_where, set_aside_if_can, write_private
from calibre_plugins.bookai.grounding import extract
from calibre_plugins.bookai.grounding.formats import read_book
from calibre_plugins.bookai.grounding.index import Index, passages

CACHE_VERSION = 1  # raise when what a cache file holds changes meaning
MAGIC = b'BOOKAI-TEXT '
SUFFIX = '.bookai'
COMPRESSION = 6  # zlib level: 0.39 of the text against 0.46 at level 1, loading as fast
MAX_HEADER_BYTES = 4096
MAX_FILE_BYTES = extract.MAX_BOOK_BYTES                 # no book's text compresses to more
MAX_UNPACKED_BYTES = 2 * extract.MAX_BOOK_BYTES         # the pickled Book of the largest book read
BOOK_CLASSES = frozenset(('Book', 'Chapter', 'Paragraph'))


class BookUnpickler(pickle.Unpickler):
    """Unpickles a cached Book: the Book, Chapter and Paragraph classes of grounding.extract and
    the plain values pickle writes without naming them; any other class or function a file names
    raises UnpicklingError (the file is then damaged: set aside), so no code a file brings runs."""

    def find_class(self, module: str, name: str) -> type:
        if module == extract.__name__ and name in BOOK_CLASSES:
            return getattr(extract, name)
        raise pickle.UnpicklingError(f'a cached book names {module}.{name}')


def whole_book(book: object) -> bool:
    """Whether book is a Book as put() writes it: its chapters and paragraphs lists of Chapter
    and Paragraph whose fields have their types, its skipped a list of text and its reasons a
    dict of text."""
    if not (isinstance(book, extract.Book) and type(book.chapters) is list and type(book.paragraphs) is list
            and type(book.skipped) is list and all(type(n) is str for n in book.skipped)):
        return False
    reasons = getattr(book, 'reasons', None)
    if type(reasons) is not dict or not all(type(k) is str and type(v) is str for k, v in reasons.items()):
        return False
    if not all(type(c) is extract.Chapter and type(c.title) is str and type(c.start) is int for c in book.chapters):
        return False
    return all(type(p) is extract.Paragraph and type(p.text) is str and type(p.start) is int
               and type(p.chapter) is int and type(p.path) is tuple for p in book.paragraphs)


def unpacked(data: bytes, most: int | None = None) -> bytes:
    """data decompressed (zlib), ValueError when it unpacks to more than most bytes (default:
    MAX_UNPACKED_BYTES) or is not whole."""
    most = MAX_UNPACKED_BYTES if most is None else most
    d = zlib.decompressobj()
    out = d.decompress(data, most + 1)
    if len(out) > most or d.unconsumed_tail:
        raise ValueError(f'unpacks to more than {most} bytes')
    if not d.eof:
        raise ValueError('cut short')
    return out


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
            data = read_regular(entry, MAX_FILE_BYTES)
            end = data.find(b'\n', 0, MAX_HEADER_BYTES)
            if not data.startswith(MAGIC) or end < 0:
                raise ValueError('not a Book AI text cache file')
            if limits.load_json(data[len(MAGIC):end]) != current:
                return None  # the book file changed, or the classes did: read it again
            book = BookUnpickler(io.BytesIO(unpacked(data[end + 1:]))).load()
            if not whole_book(book):
                raise ValueError(f'a {type(book).__name__}, not a Book as this version writes it')
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
            private_folder(os.path.dirname(entry), self.folder)  # 0700, from the cache's own folder down
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
        return remove_where(self.library_folder(library_id), lambda name: SUFFIX in name and condition(name))

    def set_aside(self, entry: str) -> None:
        """Keep a damaged file for a look, out of the way (where it can be renamed)."""
        set_aside_if_can(entry)
