# License: GPLv3 Copyright: the Book AI developers
"""A book's own text for grounded answers, fetched without blocking the window.

Read once, then kept in the text cache (grounding.cache) per book and format.
EPUB and KEPUB are read in a thread. Other formats go through calibre's
conversion first: in the library as a calibre job (its progress is in the Jobs
panel, and it can be stopped there or with Stop), in the E-book viewer, which
has no Jobs panel, in a calibre worker process of its own that Stop ends.

load(done) calls done(text, error) on the GUI thread: text is a BookText, or
None with error a sentence saying why.
"""

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qt.core import QObject

from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex
from calibre_plugins.bookai.grounding.extract import Book, read_epub
from calibre_plugins.bookai.grounding.formats import (
    READ_DIRECTLY, choose_format, conversion_job, converted_path, job_error,
)
from calibre_plugins.bookai.grounding.index import Index
from calibre_plugins.bookai.grounding.reading_position import saved_position
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.gui.worker import run_in_thread

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.gui2.ui import Main
    from calibre.gui2.viewer.ui import EbookViewer
    from calibre.utils.ipc.job import ParallelJob

load_translations()

CONVERSION_SECONDS = 30 * 60  # a long PDF takes its time


@dataclass
class BookText:
    """A book's text, read for the questions of a window."""
    book: Book
    index: Index                          # over its passages
    fmt: str                              # the format it was read from
    meaning: EmbeddingIndex | None = None  # of its passages, once made
    skipped_told: bool = False            # the reader was told which chapters could not be read
    library_id: str = ''                  # which book: its library ('e-book-viewer' for a book outside one)
    book_id: int = 0                      # and its id there (for a book outside a library, from its file's name)

Loaded = Callable[[BookText | None, str], None]  # done(text, error) of load()
Key = tuple[str, int, str, str]  # which file: (library id, book id, format, the book's file)


class BookSource(QObject):
    """Base: one book's text, from the cache or read now. A subclass says which file (start()
    calls read() with its cache key) and how calibre converts it (run_conversion())."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.loaded: BookText | None = None

    def load(self, done: Loaded) -> None:
        """done(text, error) on the GUI thread, with the book's text read once."""
        if self.loaded is not None:
            return done(self.loaded, '')

        def finished(text: BookText | None, error: str) -> None:
            self.loaded = text
            done(text, error)
        self.start(finished)

    def start(self, finished: Loaded) -> None:
        raise NotImplementedError

    def read(self, key: Key, finished: Loaded) -> None:
        """The text of key's file (library id, book id, format, file): from the cache, else read,
        else converted first."""
        def found(text: BookText | None, error: str) -> None:
            if text is None and not error:  # not in the cache, and to be converted first
                return self.convert(key, finished)
            finished(text, error)
        read_in_thread(self, key, found)

    def convert(self, key: Key, finished: Loaded) -> None:
        """Convert key's file to an EPUB in a work folder with calibre, then read it; the folder goes after."""
        path = key[3]
        folder = tempfile.mkdtemp(prefix='bookai-convert-')
        dest = converted_path(folder, path)
        st = os.stat(path)  # a file changed while it is converted is read again next time

        def cleanup() -> None:
            shutil.rmtree(folder, ignore_errors=True)

        def converted(stopped: bool, failed: bool, details: str) -> None:
            if stopped or failed or not os.path.exists(dest):
                cleanup()
                if stopped:
                    return finished(None, _('Reading the text of {title} was stopped.').format(title=self.title))
                return finished(None, str(job_error(path, details)))
            read_in_thread(self, key, finished, dest, st, cleanup)
        self.run_conversion(*conversion_job(path, dest), converted)

    def run_conversion(self, name: str, args: list, done: Callable[[bool, bool, str], None]) -> None:
        """Run calibre's conversion function name(*args); then done(stopped, failed, calibre's log)."""
        raise NotImplementedError

    def cancel(self) -> None:
        pass

    @property
    def title(self) -> str:
        return ''

    @property
    def key(self) -> str:
        """Which book: "library id:book id", or the file of a book outside the library."""
        raise NotImplementedError


def read_in_thread(parent: QObject, key: Key, finished: Loaded, converted: str | None = None,
                   st: os.stat_result | None = None, cleanup: Callable[[], None] | None = None) -> None:
    """In a thread: the book's text from the cache, else read from its EPUB (the book's own, or
    converted, the EPUB at converted) and kept. key: (library id, book id, format, the book's
    file). finished(BookText, '') or, with nothing cached and the book needing conversion
    first (converted is None and the format is not read directly), finished(None, '')."""
    library_id, book_id, fmt, path = key

    def work() -> BookText | None:
        try:
            cache = TextCache(default_folder())
            found = cache.get(*key)
            if found is None:
                epub = converted or (path if fmt in READ_DIRECTLY else None)
                if epub is None:
                    return None
                found = cache.put(library_id, book_id, fmt, path, read_epub(epub), st)
            return BookText(found[0], found[1], fmt, library_id=library_id, book_id=book_id)
        finally:
            if cleanup:
                cleanup()

    def done(result: BookText | None, exc: BaseException | None) -> None:
        finished(result, '' if exc is None else str(exc))
    run_in_thread(work, done, parent)


class LibraryBook(BookSource):
    """A book of the library open in calibre (gui: calibre's main window)."""

    def __init__(self, gui: 'Main', db: 'Cache', book_id: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.gui, self.db, self.book_id = gui, db, book_id
        self.job = None

    @property
    def title(self) -> str:
        return self.db.field_for('title', self.book_id)

    @property
    def key(self) -> str:
        return f'{self.db.library_id}:{self.book_id}'

    def start(self, finished: Loaded) -> None:
        fmt = choose_format(self.db.formats(self.book_id) or ())
        if fmt is None:
            return finished(None, _('{title} has no file Book AI can read the text of.').format(title=self.title))
        path = self.db.format_abspath(self.book_id, fmt)
        if not path or not os.path.exists(path):
            return finished(None, _('The {fmt} file of {title} is missing from the library folder.').format(
                fmt=fmt, title=self.title))
        self.forget_removed_books()
        self.read((self.db.library_id, self.book_id, fmt, path), finished)

    def forget_removed_books(self) -> None:
        TextCache(default_folder()).prune(self.db.library_id, self.db.all_book_ids())

    def run_conversion(self, name: str, args: list, done: Callable[[bool, bool, str], None]) -> None:
        """As a calibre job: in the Jobs panel, where it can be stopped too."""
        from calibre.gui2 import Dispatcher  # late: the library's GUI only; the viewer never runs this

        def converted(job: 'ParallelJob') -> None:
            self.job = None
            done(job.killed, job.failed, job.details)
        self.job = self.gui.job_manager.run_job(
            Dispatcher(converted), name, args=args,
            description=_('Book AI: reading the text of {title}').format(title=self.title))

    def cancel(self) -> None:
        if self.job is not None:
            self.gui.job_manager._kill_job(self.job)  # its done callback reports it as stopped

    def position(self, text: BookText) -> float | None:
        """The reader's saved last-read position in this book, a fraction, or None."""
        return saved_position(self.db.format_abspath(self.book_id, text.fmt) or '', text.book)


class ViewerBook(BookSource):
    """The book open in the E-book viewer (it follows the viewer to another book)."""

    def __init__(self, viewer: 'EbookViewer', parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.viewer = viewer
        self.abort: threading.Event | None = None
        self.path = ''

    @property
    def data(self) -> dict:
        return getattr(self.viewer, 'current_book_data', None) or {}

    @property
    def library_key(self) -> tuple[str, int]:
        details = self.data.get('book_library_details') or {}
        return (details.get('library_id') or '', int(details.get('book_id') or 0))

    @property
    def title(self) -> str:
        return os.path.basename(self.path)

    @property
    def key(self) -> str:
        library_id, book_id = self.library_key
        return f'{library_id}:{book_id}' if library_id else self.data.get('pathtoebook', '')

    def load(self, done: Loaded) -> None:
        path = self.data.get('pathtoebook', '')
        if path != self.path:  # another book is open now
            self.path, self.loaded = path, None
        if not path:
            return done(None, _('No book is open.'))
        super().load(done)

    def position(self, text: BookText) -> float | None:
        """Where the viewer is now, as a fraction of the book."""
        offset = text.book.offset_of_cfi(getattr(self.viewer.web_view, 'current_cfi', '') or '')
        return None if offset is None else text.book.fraction(offset)

    def go_to(self, place: Place) -> None:
        """Show a passage cited: at its CFI in an EPUB, else at its fraction of the book."""
        if place.cfi and self.loaded is not None and self.loaded.fmt in READ_DIRECTLY:
            self.viewer.web_view.goto_cfi(place.cfi, True)
        else:
            self.viewer.web_view.goto_frac(place.position)

    def start(self, finished: Loaded) -> None:
        fmt = os.path.splitext(self.path)[1][1:].upper()
        library_id, book_id = self.library_key
        if not library_id:  # a book outside the library: kept by its file's name
            library_id, book_id = 'e-book-viewer', int(hashlib.sha1(self.path.encode('utf-8')).hexdigest()[:12], 16)
        self.read((library_id, book_id, fmt, self.path), finished)

    def run_conversion(self, name: str, args: list, done: Callable[[bool, bool, str], None]) -> None:
        """In a calibre worker process of its own (the viewer has no Jobs panel); Stop aborts it."""
        self.abort = abort = threading.Event()

        def work() -> None:
            from calibre.utils.ipc.simple_worker import fork_job  # late: only when a book is converted
            fork_job('calibre.gui2.convert.gui_conversion', name, args=args, timeout=CONVERSION_SECONDS,
                     no_output=True, abort=abort)

        def converted(result: None, exc: BaseException | None) -> None:
            self.abort = None
            done(abort.is_set(), exc is not None, getattr(exc, 'orig_tb', '') or str(exc or ''))
        run_in_thread(work, converted, self)

    def cancel(self) -> None:
        if self.abort is not None:
            self.abort.set()
