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

import os
import shutil
import tempfile
from dataclasses import dataclass

from qt.core import QObject

load_translations()

CONVERSION_SECONDS = 30 * 60  # a long PDF takes its time


@dataclass
class BookText:
    book: object            # grounding.extract.Book
    index: object           # grounding.index.Index over its passages
    fmt: str
    meaning: object = None  # grounding.embeddings.EmbeddingIndex of its passages, once made
    skipped_told: bool = False  # the reader was told which chapters could not be read


class BookSource(QObject):
    """Base: one book's text, from the cache or read now. A subclass says which file (start()
    calls read() with its cache key) and how calibre converts it (run_conversion())."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.loaded = None

    def load(self, done):
        if self.loaded is not None:
            return done(self.loaded, '')

        def finished(text, error):
            self.loaded = text
            done(text, error)
        self.start(finished)

    def start(self, finished):
        raise NotImplementedError

    def read(self, key, finished):
        """The text of key's file (library id, book id, format, file): from the cache, else read,
        else converted first."""
        def found(text, error):
            if text is None and not error:  # not in the cache, and to be converted first
                return self.convert(key, finished)
            finished(text, error)
        read_in_thread(self, key, found)

    def convert(self, key, finished):
        """Convert key's file to an EPUB in a work folder with calibre, then read it; the folder goes after."""
        from calibre_plugins.bookai.grounding.formats import conversion_job, converted_path, job_error
        path = key[3]
        folder = tempfile.mkdtemp(prefix='bookai-convert-')
        dest = converted_path(folder, path)
        st = os.stat(path)  # a file changed while it is converted is read again next time

        def cleanup():
            shutil.rmtree(folder, ignore_errors=True)

        def converted(stopped, failed, details):
            if stopped or failed or not os.path.exists(dest):
                cleanup()
                if stopped:
                    return finished(None, _('Reading the text of {title} was stopped.').format(title=self.title))
                return finished(None, str(job_error(path, details)))
            read_in_thread(self, key, finished, dest, st, cleanup)
        self.run_conversion(*conversion_job(path, dest), converted)

    def run_conversion(self, name, args, done):
        """Run calibre's conversion function name(*args); then done(stopped, failed, calibre's log)."""
        raise NotImplementedError

    def cancel(self):
        pass

    @property
    def title(self):
        return ''

    @property
    def key(self):
        """Which book: "library id:book id", or the file of a book outside the library."""
        raise NotImplementedError


def read_in_thread(parent, key, finished, converted=None, st=None, cleanup=None):
    """In a thread: the book's text from the cache, else read from its EPUB (the book's own, or
    converted, the EPUB at converted) and kept. key: (library id, book id, format, the book's
    file). finished(BookText, '') or, with nothing cached and the book needing conversion
    first (converted is None and the format is not read directly), finished(None, '')."""
    from calibre_plugins.bookai.gui.worker import run_in_thread
    library_id, book_id, fmt, path = key

    def work():
        from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
        from calibre_plugins.bookai.grounding.extract import read_epub
        from calibre_plugins.bookai.grounding.formats import READ_DIRECTLY
        try:
            cache = TextCache(default_folder())
            found = cache.get(*key)
            if found is None:
                epub = converted or (path if fmt in READ_DIRECTLY else None)
                if epub is None:
                    return None
                found = cache.put(library_id, book_id, fmt, path, read_epub(epub), st)
            return BookText(found[0], found[1], fmt)
        finally:
            if cleanup:
                cleanup()

    def done(result, exc):
        finished(result, '' if exc is None else str(exc))
    return run_in_thread(work, done, parent)


class LibraryBook(BookSource):
    """A book of the library open in calibre (gui: calibre's main window)."""

    def __init__(self, gui, db, book_id, parent=None):
        super().__init__(parent)
        self.gui, self.db, self.book_id = gui, db, book_id
        self.job = None

    @property
    def title(self):
        return self.db.field_for('title', self.book_id)

    @property
    def key(self):
        return f'{self.db.library_id}:{self.book_id}'

    def start(self, finished):
        from calibre_plugins.bookai.grounding.formats import choose_format
        fmt = choose_format(self.db.formats(self.book_id) or ())
        if fmt is None:
            return finished(None, _('{title} has no file Book AI can read the text of.').format(title=self.title))
        path = self.db.format_abspath(self.book_id, fmt)
        if not path or not os.path.exists(path):
            return finished(None, _('The {fmt} file of {title} is missing from the library folder.').format(
                fmt=fmt, title=self.title))
        self.forget_removed_books()
        self.read((self.db.library_id, self.book_id, fmt, path), finished)

    def forget_removed_books(self):
        from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
        TextCache(default_folder()).prune(self.db.library_id, self.db.all_book_ids())

    def run_conversion(self, name, args, done):
        """As a calibre job: in the Jobs panel, where it can be stopped too."""
        from calibre.gui2 import Dispatcher

        def converted(job):
            self.job = None
            done(job.killed, job.failed, job.details)
        self.job = self.gui.job_manager.run_job(
            Dispatcher(converted), name, args=args,
            description=_('Book AI: reading the text of {title}').format(title=self.title))

    def cancel(self):
        if self.job is not None:
            self.gui.job_manager._kill_job(self.job)  # its done callback reports it as stopped

    def position(self, text):
        """The reader's saved last-read position in this book, a fraction, or None."""
        from calibre_plugins.bookai.grounding.reading_position import saved_position
        return saved_position(self.db.format_abspath(self.book_id, text.fmt) or '', text.book)


class ViewerBook(BookSource):
    """The book open in the E-book viewer (it follows the viewer to another book)."""

    def __init__(self, viewer, parent=None):
        super().__init__(parent)
        self.viewer = viewer
        self.abort = None
        self.path = ''

    @property
    def data(self):
        return getattr(self.viewer, 'current_book_data', None) or {}

    @property
    def library_key(self):
        details = self.data.get('book_library_details') or {}
        return (details.get('library_id') or '', int(details.get('book_id') or 0))

    @property
    def title(self):
        return os.path.basename(self.path)

    @property
    def key(self):
        library_id, book_id = self.library_key
        return f'{library_id}:{book_id}' if library_id else self.data.get('pathtoebook', '')

    def load(self, done):
        path = self.data.get('pathtoebook', '')
        if path != self.path:  # another book is open now
            self.path, self.loaded = path, None
        if not path:
            return done(None, _('No book is open.'))
        super().load(done)

    def position(self, text):
        """Where the viewer is now, as a fraction of the book."""
        offset = text.book.offset_of_cfi(getattr(self.viewer.web_view, 'current_cfi', '') or '')
        return None if offset is None else text.book.fraction(offset)

    def go_to(self, place):
        """Show a passage cited: at its CFI in an EPUB, else at its fraction of the book."""
        from calibre_plugins.bookai.grounding.formats import READ_DIRECTLY
        if place.cfi and self.loaded is not None and self.loaded.fmt in READ_DIRECTLY:
            self.viewer.web_view.goto_cfi(place.cfi, True)
        else:
            self.viewer.web_view.goto_frac(place.position)

    def start(self, finished):
        fmt = os.path.splitext(self.path)[1][1:].upper()
        library_id, book_id = self.library_key
        if not library_id:  # a book outside the library: kept by its file's name
            import hashlib
            library_id, book_id = 'e-book-viewer', int(hashlib.sha1(self.path.encode('utf-8')).hexdigest()[:12], 16)
        self.read((library_id, book_id, fmt, self.path), finished)

    def run_conversion(self, name, args, done):
        """In a calibre worker process of its own (the viewer has no Jobs panel); Stop aborts it."""
        import threading
        from calibre_plugins.bookai.gui.worker import run_in_thread
        self.abort = abort = threading.Event()

        def work():
            from calibre.utils.ipc.simple_worker import fork_job
            fork_job('calibre.gui2.convert.gui_conversion', name, args=args, timeout=CONVERSION_SECONDS,
                     no_output=True, abort=abort)

        def converted(result, exc):
            self.abort = None
            done(abort.is_set(), exc is not None, getattr(exc, 'orig_tb', '') or str(exc or ''))
        run_in_thread(work, converted, self)

    def cancel(self):
        if self.abort is not None:
            self.abort.set()
