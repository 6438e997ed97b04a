# License: GPLv3 Copyright: the Book AI developers
"""Undo for covers Book AI replaced: the old covers, kept in Book AI's cache, not the library.

calibre has no undo for a cover. Before Book AI puts a new cover on a book, the cover it
replaces (or "none": the book had no cover) is kept here, for a time (the setting
cover_undo_days), at most MAX_PER_BOOK per book and MAX_TOTAL_BYTES in all:

    ROOT/<library>/<book id>/<time in ns>.cover

<library> is the library's id when it is a plain id (calibre's are UUIDs), else a hash of
it: whatever a settings value or a library says its id is, no path leaves ROOT. Each file
is one entry: a header line (magic, JSON: whether the book had a cover, the size and SHA-256
of the bytes, when it was kept), then the old cover's bytes. Written privately and in one
step (core.files.write_private); read back only from a regular file, opened without waiting
(core.files.read_regular: a FIFO put in an entry's place cannot hang Undo); an entry that cannot
be read back whole is set aside (core.files.set_aside) and skipped, never overwritten, never an
error.
"""

import hashlib
import json
import os
import re
import time
from typing import NamedTuple

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import read_regular, set_aside_if_can, write_private

load_translations()

MAGIC = b'BOOKAI-COVER-UNDO 1 '
SUFFIX = '.cover'
MAX_PER_BOOK = 5
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_ENTRY_BYTES = 64 * 1024 * 1024   # a cover larger than this is not kept (nor replaced: see library.py)
MAX_HEADER = 4096
PLAIN_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,79}')
ENTRY_NAME = re.compile(r'([0-9]{1,20})' + re.escape(SUFFIX))
BOOK_FOLDER = re.compile(r'[1-9][0-9]{0,17}')


class KeptCover(NamedTuple):
    data: bytes | None  # the old cover; None: the book had none
    when: float         # when it was kept (seconds since the epoch)
    entry: str = ''     # which entry holds it (for forget())


class UndoNotKept(Exception):
    """The old cover could not be kept for Undo (said in a sentence): it is not replaced."""


def default_root() -> str:
    from calibre.constants import cache_dir
    return os.path.join(cache_dir(), 'bookai', 'covers-undo')


def library_folder_name(library_id: object) -> str:
    """The folder name of a library: its id when plain, else a hash of it (never a path)."""
    text = str(library_id)
    if PLAIN_ID.fullmatch(text) and text not in ('.', '..'):
        return text
    return 'h-' + hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:40]


def checked_book_id(book_id: object) -> int:
    if isinstance(book_id, bool) or not isinstance(book_id, int) or not 0 < book_id < 2 ** 63:
        raise ValueError(f'not a book id: {book_id!r}')
    return book_id


class CoverUndo:
    """The covers kept for Undo under root (default: calibre's cache/bookai/covers-undo)."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root or default_root()

    # where {{{

    def library_folder(self, library_id: str) -> str:
        return os.path.join(self.root, library_folder_name(library_id))

    def book_folder(self, library_id: str, book_id: int) -> str:
        return os.path.join(self.library_folder(library_id), str(checked_book_id(book_id)))

    def entries(self, library_id: str, book_id: int) -> list[str]:
        """The entries' file names of a book, oldest first."""
        try:
            names = os.listdir(self.book_folder(library_id, book_id))
        except OSError:
            return []
        return sorted((n for n in names if ENTRY_NAME.fullmatch(n)), key=lambda n: int(n[:-len(SUFFIX)]))

    # }}}

    def keep(self, library_id: str, book_id: int, old: bytes | None) -> str:
        """Keep the cover a book had (None: it had none) as its newest entry; the oldest beyond
        MAX_PER_BOOK are forgotten. Returns the entry's name. Raises UndoNotKept, in words."""
        if old is not None and len(old) > MAX_ENTRY_BYTES:
            raise UndoNotKept(_('The current cover is larger than {megabytes} MB, too large to keep for Undo, so it '
                            'was not replaced.').format(megabytes=MAX_ENTRY_BYTES // 2 ** 20))
        folder = self.book_folder(library_id, book_id)
        when = time.time()
        data = bytes(old) if old is not None else b''
        header = {'had_cover': old is not None, 'size': len(data), 'sha256': hashlib.sha256(data).hexdigest(),
                  'when': when}
        blob = MAGIC + json.dumps(header).encode('ascii') + b'\n' + data
        existing = self.entries(library_id, book_id)
        stamp = time.time_ns()
        if existing:  # strictly after the newest, whatever the clock did
            stamp = max(stamp, int(existing[-1][:-len(SUFFIX)]) + 1)
        name = f'{stamp}{SUFFIX}'
        try:
            write_private(os.path.join(folder, name), blob)
        except OSError as e:
            raise UndoNotKept(_('The current cover could not be kept for Undo in {folder}, so it was not replaced: '
                            '{reason}').format(folder=folder, reason=e.strerror or e)) from None
        for old_name in self.entries(library_id, book_id)[:-MAX_PER_BOOK]:
            self._remove(os.path.join(folder, old_name))
        return name

    def read(self, path: str) -> KeptCover | None:
        """The entry at path, or None when it cannot be read back whole (then it is set aside): a
        regular file only (a FIFO, a device or a socket in its place is never opened to wait on,
        whatever a link says: core.files.read_regular), at most an entry's largest size."""
        try:
            blob = read_regular(path, len(MAGIC) + MAX_HEADER + MAX_ENTRY_BYTES)
            head = blob[:len(MAGIC) + MAX_HEADER]
            if not head.startswith(MAGIC) or b'\n' not in head:
                raise ValueError('not an entry')
            line, _sep, _rest = head[len(MAGIC):].partition(b'\n')
            header = limits.load_json(line, max_depth=2)
            if not isinstance(header, dict):
                raise ValueError('not an entry')
            size, digest, had, when = (header.get('size'), header.get('sha256'), header.get('had_cover'),
                                       header.get('when'))
            if not (isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_ENTRY_BYTES
                    and isinstance(digest, str) and isinstance(had, bool)
                    and isinstance(when, (int, float)) and not isinstance(when, bool)):
                raise ValueError('not an entry')
            data = blob[len(MAGIC) + len(line) + 1:]  # a longer or shorter file shows in its size
        except FileNotFoundError:
            return None
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            set_aside_if_can(path)
            return None
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest or (not had and size):
            set_aside_if_can(path)
            return None
        return KeptCover(data if had else None, float(when), os.path.basename(path))

    def newest(self, library_id: str, book_id: int) -> KeptCover | None:
        """The newest entry that can be read; the damaged ones met on the way are set aside."""
        folder = self.book_folder(library_id, book_id)
        for name in reversed(self.entries(library_id, book_id)):
            kept = self.read(os.path.join(folder, name))
            if kept is not None:
                return kept
        return None

    def last(self, library_id: str, book_id: int) -> KeptCover | None:
        """What Undo would put back on the book: its newest entry; None when there is none."""
        return self.newest(library_id, book_id)

    def pop(self, library_id: str, book_id: int) -> None:
        """Forget the newest entry (the one last() gives)."""
        kept = self.newest(library_id, book_id)
        if kept is not None:
            self.forget(library_id, book_id, kept.entry)

    def forget(self, library_id: str, book_id: int, entry: str) -> None:
        """Forget one entry, by the name keep() gave."""
        if ENTRY_NAME.fullmatch(entry):
            self._remove(os.path.join(self.book_folder(library_id, book_id), entry))

    def books(self, library_id: str) -> list[int]:
        """The books of a library that have something to undo."""
        try:
            names = os.listdir(self.library_folder(library_id))
        except OSError:
            return []
        out = []
        for n in names:
            if BOOK_FOLDER.fullmatch(n) and self.entries(library_id, int(n)):
                out.append(int(n))
        return sorted(out)

    def prune(self, days: int) -> int:
        """Forget the entries older than days (and the damaged ones set aside as long ago), then
        the oldest until all fit in MAX_TOTAL_BYTES. Returns how many files were removed."""
        limit = time.time() - max(0, days) * 86400
        found = []  # (time in ns, size, path) of every entry
        removed = 0
        for lib in self._listdir(self.root):
            lib_path = os.path.join(self.root, lib)
            for book in self._listdir(lib_path):
                book_path = os.path.join(lib_path, book)
                for n in self._listdir(book_path):
                    path = os.path.join(book_path, n)
                    if ENTRY_NAME.fullmatch(n):
                        try:
                            size = os.lstat(path).st_size
                        except OSError:
                            continue
                        found.append((int(n[:-len(SUFFIX)]), size, path))
                    elif n.endswith('.damaged'):
                        try:
                            old = os.lstat(path).st_mtime < limit
                        except OSError:
                            continue
                        if old:
                            removed += self._remove(path)
        found.sort()
        total = sum(size for _t, size, _p in found)
        for stamp, size, path in found:
            if stamp / 1e9 < limit or total > MAX_TOTAL_BYTES:
                removed += self._remove(path)
                total -= size
        for lib in self._listdir(self.root):  # the folders left empty
            lib_path = os.path.join(self.root, lib)
            for book in self._listdir(lib_path):
                self._rmdir(os.path.join(lib_path, book))
            self._rmdir(lib_path)
        return removed

    # files {{{

    @staticmethod
    def _listdir(path: str) -> list[str]:
        try:
            if os.path.islink(path) or not os.path.isdir(path):
                return []
            return os.listdir(path)
        except OSError:
            return []

    @staticmethod
    def _remove(path: str) -> int:
        try:
            os.remove(path)
            return 1
        except OSError:
            return 0

    @staticmethod
    def _rmdir(path: str) -> None:
        try:
            os.rmdir(path)  # only when empty
        except OSError:
            pass

    # }}}
