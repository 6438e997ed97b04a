# License: GPLv3 Copyright: the Book AI developers
"""AI metadata in calibre's main window: the Book AI menu's Fill in metadata with AI…, Review
metadata kept for later… and Undo metadata change.

Imported only when one of them is chosen (action.py).

- Fill in metadata with AI…: gui.metadata_review.MetadataChoicesDialog for the fields (each with
  the reader's instruction) and the requests at once; then ONE calibre job
  (calibre.gui2.threaded_jobs.ThreadedJob, as the covers' and the summaries' jobs) that reads the
  books as they are (metadata.reading, in the job's thread: calibre's library is read from
  threads safely), asks the model (metadata.asking.ask_books, that many requests at once, the
  job's Stop its CancelToken), its progress a book at a time in calibre's Jobs, and keeps the
  proposals (metadata.kept) before it ends. Nothing is written by the job.
- When it ends, the review (gui.metadata_review.MetadataReview) shows them, if their library is
  open; else they wait, said in the status bar, for Review metadata kept for later….
- Undo metadata change: metadata.changes.undo_last, in a thread, and what was put back said.

Nothing here talks to a service: the job calls the Qt-free core only.
"""

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qt.core import QDialog, QWidget

from calibre_plugins.bookai.conversation.books import answer_language
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.gui.metadata_review import MetadataChoicesDialog, MetadataReview
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.main_window.calibre_window import current_db, current_library_id, say
from calibre_plugins.bookai.main_window.threaded_job import (
    job_cancel, job_progress, job_result, requests_at_once, start_job,
)
from calibre_plugins.bookai.metadata.asking import Asking, BookAnswer, ask_books
from calibre_plugins.bookai.metadata.changes import MetadataUndo, Undone, undo_last
from calibre_plugins.bookai.metadata.fields import Field, NotFillable
from calibre_plugins.bookai.metadata.kept import KeptProposals, KeptReview
from calibre_plugins.bookai.metadata.reading import books_read, fields_of, fillable_columns, known_tags
from calibre_plugins.bookai.providers.registry import chosen_provider
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.gui2.threaded_jobs import ThreadedJob
    from calibre.gui2.ui import Main

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

JOB_TYPE = 'bookai-metadata'
TITLE = _('Fill in metadata with AI')

jobs: set['ThreadedJob'] = set()
reviews: list[MetadataReview] = []


# the library {{{

def library_name(gui: 'Main', path: str = '') -> str:
    import os
    path = path or str(getattr(gui.current_db, 'library_path', '') or '')
    return os.path.basename(os.path.normpath(path)) if path else _('another library')


def error(gui: QWidget, text: str, title: str = '') -> None:
    from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
    error_dialog(gui, title or TITLE, text, show=True)


def info(gui: QWidget, title: str, text: str, details: str = '') -> None:
    from calibre.gui2 import info_dialog  # looked up when called, so that a test can stand in for it
    info_dialog(gui, title, text, det_msg=details, show=True)


def refresh_books(gui: 'Main', ids: Sequence[int]) -> None:
    """The books' new values shown in the book list and the book details."""
    view = getattr(gui, 'library_view', None)
    if view is not None and ids:
        view.model().refresh_ids(list(ids), current_row=view.currentIndex().row())

# }}}


# the job {{{

@dataclass
class JobResult:
    library_id: str
    library_path: str
    answers: list[BookAnswer] = field(default_factory=list)
    stopped: bool = False
    kept: KeptReview | None = None
    not_kept: str = ''  # why the proposals could not be kept for later, in words

    @property
    def proposals(self) -> list:
        return [p for a in self.answers for p in a.proposals]

    def problems(self) -> list[str]:
        """Each book's problem, in words, for the review's foot."""
        lines = [f'{one_line(a.book.title)}: {one_line(a.error)}' for a in self.answers if a.error]
        if self.stopped:
            lines.append(_('Stopped: the books answered by then are shown.'))
        if self.not_kept:
            lines.append(self.not_kept)
        return lines


def metadata_job(db: Any, library_id: str, library_path: str, ids: Sequence[int], fields: Sequence[Field],
                 provider: 'AIProviderPlugin', model: str, language: str, at_once: int, with_text: bool = False,
                 abort: threading.Event | None = None, log: Any = None, notifications: Any = None) -> JobResult:
    """The job's work, in calibre's job thread: the books read, asked, and the proposals kept for
    review (see the module's doc). calibre's Stop (abort) stops the requests under way."""
    tell = job_progress(notifications)
    result = JobResult(library_id, library_path)
    with job_cancel(abort, 'BookAI-metadata-stop') as cancel:
        books = books_read(db, library_id, ids, fields, with_text)
        run = Asking(provider, model, fields, {'tags': known_tags(db)}, language)
        tell(0.0, ngettext('Asking for the metadata of {count} book', 'Asking for the metadata of {count} books',
                           len(books)).format(count=len(books)))
        for answer in ask_books(run, books, at_once, cancel):
            result.answers.append(answer)
            done = len(result.answers)
            tell(done / max(1, len(books)), _('{done} of {total}: {title}').format(
                done=done, total=len(books), title=one_line(answer.book.title)))
            if callable(log):
                if answer.error:
                    log(f'{answer.book.title}: {answer.error}')
                else:
                    log(f'{answer.book.title}: {len(answer.proposals)} values proposed')
        result.stopped = cancel.cancelled
    proposals = result.proposals
    if proposals:
        titles = {a.book.book_id: a.book.title for a in result.answers if a.proposals}
        try:
            result.kept = KeptProposals().add(library_id, proposals, titles)
        except OSError as e:
            result.not_kept = _('The proposals could not be kept for later: {reason}').format(
                reason=e.strerror or e)
            result.kept = KeptReview(list(proposals), titles)
    return result


def fill_metadata(gui: 'Main', ids: Sequence[int]) -> 'ThreadedJob | None':
    """The fields chosen (MetadataChoicesDialog), then the job for the books ids. None when nothing
    starts (said why, in words)."""
    ids = list(ids)
    if not ids:
        error(gui, _('No books selected'))
        return None
    provider = chosen_provider()  # first: a reader with no provider is told before choosing fields
    problem = provider.config.missing_setup() if provider is not None else _('No AI provider is chosen yet.')
    if provider is None or problem:
        error(gui, problem + ' ' + _('Nothing was sent. Set up a provider in the settings.'))
        return None
    db = current_db(gui)
    d = MetadataChoicesDialog(len(ids), fillable_columns(db), gui)
    try:
        if d.exec() != QDialog.DialogCode.Accepted:
            return None
        keys, instructions = d.chosen()
    finally:
        d.deleteLater()
    return start_fill_job(gui, ids, keys, instructions, provider)


def start_fill_job(gui: 'Main', ids: Sequence[int], keys: Sequence[str], instructions: dict[str, str],
              provider: 'AIProviderPlugin') -> 'ThreadedJob | None':
    """The one job that asks provider for the fields keys of the books ids, in calibre's Jobs panel."""
    db = current_db(gui)
    try:
        fields = fields_of(db, keys, instructions)
    except NotFillable as e:
        error(gui, str(e))
        return None
    if not fields:
        error(gui, _('Choose at least one field to fill.'))
        return None
    at_once = requests_at_once('metadata_requests_at_once')
    library_id = str(db.library_id)
    library_path = str(getattr(gui.current_db, 'library_path', '') or '')
    model = provider.config.option('model') or ''
    description = ngettext('Book AI: metadata of {count} book', 'Book AI: metadata of {count} books',
                           len(ids)).format(count=len(ids))
    job = start_job(gui, JOB_TYPE, description, metadata_job,
                    (db, library_id, library_path, list(ids), fields, provider, model, answer_language(), at_once,
                     bool(plugin_prefs()['metadata_book_text'])), lambda job: job_done(gui, job), jobs)
    say(gui, ngettext('Book AI: asking for the metadata of the selected book; it is shown for review when done.',
                      'Book AI: asking for the metadata of {count} books; they are shown for review when done.',
                      len(ids)).format(count=len(ids)), 3000)
    return job


def job_done(gui: 'Main', job: 'ThreadedJob') -> None:
    """The job ended (finished, stopped or failed): its proposals reviewed, here or once their library
    is open again."""
    result = job_result(gui, job, JobResult, jobs, _('Metadata could not be filled in'))
    if result is None:
        return
    proposals = result.proposals
    if not proposals:
        info(gui, TITLE, _('The model proposed nothing to change.') if result.answers else
             _('Stopped before any book was answered.'), '\n'.join(result.problems()))
        return
    if current_library_id(gui) != result.library_id:
        say(gui, ngettext(
            'Book AI: the metadata proposed is for the library {library}. It is kept: open that library, then '
            'choose Book AI → Review metadata kept for later.',
            'Book AI: the {count} values proposed are for the library {library}. They are kept: open that '
            'library, then choose Book AI → Review metadata kept for later.', len(proposals)).format(
                count=len(proposals), library=library_name(gui, result.library_path)), 0)
        return
    open_review(gui, result.kept or KeptReview(proposals), result.problems())

# }}}


# reviewing {{{

def open_review(gui: 'Main', review: KeptReview, problems: Sequence[str] = ()) -> MetadataReview:
    """The review of the library open (one window: a newer review replaces the one open)."""
    library_id = current_library_id(gui)
    for w in list(reviews):
        w.close()

    def open_library() -> tuple[Any, str]:
        return current_db(gui), current_library_id(gui)

    w = MetadataReview(gui, library_id, library_name(gui), review, open_library,
                       lambda ids: refresh_books(gui, ids), problems)
    reviews.append(w)
    w.finished.connect(lambda result=0, w=w: reviews.remove(w) if w in reviews else None)
    w.show()
    w.raise_()
    return w


def review_kept(gui: 'Main') -> None:
    """Review metadata kept for later: the proposals kept for the library open, read in a thread."""
    library_id = current_library_id(gui)

    def found(review: KeptReview | None, exc: Exception | None) -> None:
        if exc is not None or review is None:
            error(gui, _('The proposals kept could not be read: {error}').format(error=exc),
                  _('Review metadata kept for later'))
            return
        if not review.proposals:
            info(gui, _('Review metadata kept for later'), _('No metadata proposed by AI is waiting for review in '
                                                             'this library.'))
            return
        open_review(gui, review)

    run_in_thread(lambda: KeptProposals().review(library_id), found, gui)


def has_kept(gui: 'Main') -> bool:
    """Whether proposals are kept for the library open (a file is there; not read)."""
    return KeptProposals().has(current_library_id(gui))

# }}}


# undo {{{

def undo_metadata(gui: 'Main') -> None:
    """Put back the values the last Apply replaced in the library open (metadata.changes.undo_last,
    in a thread), and say what was put back, or that there is nothing to undo."""
    db, library_id = current_db(gui), current_library_id(gui)

    def done(undone: Undone | None, exc: Exception | None) -> None:
        title = _('Undo metadata change')
        if exc is not None:
            error(gui, _('The old values could not be put back: {error}').format(error=exc), title)
            return
        if undone is None:
            info(gui, title, _('Book AI has written no metadata in this library that it could put back.'))
            return
        refresh_books(gui, sorted({b for b, _k in undone.restored}))
        text = ngettext('{n} value put back.', '{n} values put back.', len(undone.restored)).format(
            n=len(undone.restored))
        details = [_('{title}: {field}').format(title=title_of(db, b), field=k) for b, k in undone.restored]
        if undone.conflicts:
            text += ' ' + ngettext('{n} field was changed since, and is left as it is.',
                                   '{n} fields were changed since, and are left as they are.',
                                   len(undone.conflicts)).format(n=len(undone.conflicts))
            details += [_('Left as it is: {title}: {field}').format(title=title_of(db, b), field=k)
                        for b, k in undone.conflicts]
        say(gui, _('Book AI: {what}').format(what=text))
        info(gui, title, text, '\n'.join(details))

    run_in_thread(lambda: undo_last(db, library_id, MetadataUndo()), done, gui)


def title_of(db: Any, book_id: int) -> str:
    try:
        return one_line(db.field_for('title', book_id) or str(book_id))
    except Exception:
        return str(book_id)

# }}}
