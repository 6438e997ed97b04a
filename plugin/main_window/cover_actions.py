# License: GPLv3 Copyright: the Book AI developers
"""AI covers in calibre's main window: the Book AI menu's Generate cover…, Generate covers for the
selected books…, Review generated covers… and Undo cover change.

Imported only when one of them is chosen (action.py): a reader who never makes a cover never
loads any of this.

- One book: gui.cover_dialog.CoverDialog, then the cover chosen put on the book
  (covers.library.replace_cover, the old one kept for Undo first, the new one read back).
- Many books: gui.cover_dialog.BulkCoverDialog for the choices, then ONE calibre job
  (calibre.gui2.threaded_jobs.ThreadedJob, the same on calibre 6.13, 8.5 and 9.17) that builds
  the prompts and runs covers.bulk.run_covers: its progress in the Jobs panel, Stop from there
  (the job's abort Event stops the run's CancelToken). The covers are staged in Book AI's cache,
  never written to the library by the job. When it ends, CoverReview shows each book's old cover
  beside the new one; the reader keeps the ones they want, or applies all knowingly.
- A run made for a library that is no longer open when it ends (or when its review is closed)
  stays staged: the review says which library it is for, and Review generated covers… reopens it
  once that library is open again. Nothing is ever applied to another library.
- Undo cover change puts back what Book AI replaced (covers.library.undo_cover).

The main window never waits long, and never decodes an image from outside: prompts are built,
images fetched and staged, old covers forgotten, covers read, in threads that never call Qt;
every image is decoded by Book AI itself in calibre's worker process, bounded in time and memory
(core.images.decode_images, from those threads), and comes back as Book AI's own: a small
baseline JPEG for the library, RGB rows for a thumbnail. What calls Qt runs on the GUI thread:
a thumbnail made from those rows (no decoder), and calibre storing Book AI's JPEG, one cover a
step (gui.worker's note says why).
"""

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from qt.core import (
    QApplication, QCheckBox, QDialog, QFrame, QGridLayout, QLabel, QObject, QPixmap, QScrollArea, QSize, Qt,
    QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.images import Decoded, Source, decode_images, structure
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.covers.bulk import (
    CoverOutcome, StagedRun, discard_run, new_staging_dir, run_covers, staged_runs,
)
from calibre_plugins.bookai.covers.library import BookGone, NotReplaced, library_id_of, replace_cover, undo_cover
from calibre_plugins.bookai.covers.making import book_requests, chosen_image_provider, provider_problem
from calibre_plugins.bookai.covers.prompt import CoverChoices
from calibre_plugins.bookai.covers.undo import CoverUndo, KeptCover, UndoNotKept
from calibre_plugins.bookai.gui.cover_dialog import BulkCoverDialog, CoverDialog
from calibre_plugins.bookai.gui.image_decoding import qimage
from calibre_plugins.bookai.gui.review import add_review_buttons
from calibre_plugins.bookai.gui.worker import run_in_steps, run_in_thread
from calibre_plugins.bookai.main_window.calibre_window import current_db, current_library_id, say
from calibre_plugins.bookai.main_window.threaded_job import (
    job_cancel, job_progress, job_result, requests_at_once, start_job,
)
from calibre_plugins.bookai.providers.pricing import cost_text, total_cost
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.gui2.threaded_jobs import ThreadedJob
    from calibre.gui2.ui import Main

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

JOB_TYPE = 'bookai-covers'
THUMB_SIDE = 180          # pixels a side of a cover as the review shows it (decoded so, in calibre's worker)
THUMBS_AT_ONCE = 12       # covers decoded by one worker for the review, then shown, before the next

# what this session keeps alive: the jobs under way (and the staging folders they are filling), and
# the review windows open
jobs: set['ThreadedJob'] = set()
filling: set[str] = set()
reviews: list['CoverReview'] = []


def reviewable(run: StagedRun) -> bool:
    """Whether run's covers can be reviewed: it finished, or no job of this calibre is making it any
    more (calibre was closed, or stopped, while it ran: what it made is kept for review, not lost in
    the cache)."""
    return run.finished or run.staging_dir not in filling


# the library {{{

def library_name(path: str) -> str:
    """A library as the reader knows it: its folder's name."""
    return os.path.basename(os.path.normpath(path)) if path else _('another library')


def refresh_books(gui: 'Main', ids: Sequence[int]) -> None:
    """Show the books' new covers in the book list, the cover grid, the cover browser and the book
    details, as calibre does after it sets a cover."""
    if not ids:
        return
    refresh_browser = getattr(gui, 'refresh_cover_browser', None)
    if refresh_browser is not None:
        refresh_browser()
    view = getattr(gui, 'library_view', None)
    current = getattr(gui, 'current_view', None)
    if view is not None and (current is None or current() is view):
        view.model().refresh_ids(list(ids), current_row=view.currentIndex().row())


def settings_opener(gui: 'Main') -> Callable[[], None]:
    def open_settings() -> None:
        from calibre_plugins.bookai.gui.settings_dialog import show_settings  # on use: the settings only when asked for
        show_settings(gui, current_db(gui), tab='covers')
    return open_settings


def error(gui: QWidget, title: str, text: str, det_msg: str = '') -> None:
    from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
    error_dialog(gui, title, text, det_msg=det_msg, show=True)

# }}}


# putting covers on books {{{

@dataclass
class Applied:
    done: list[int]
    failed: list[tuple[int, str]]  # book id, why (in words)


def put_cover(db: Any, library_id: str, book_id: int, cover: Decoded | str, undo: CoverUndo) -> str | None:
    """Put one cover, as Book AI decoded it (or why it could not, in words), on its book, the old one
    kept for Undo first: None when done, else why not, in words. On the GUI thread (calibre decodes
    and stores the cover with Qt: gui.worker's note), one book a step."""
    if isinstance(cover, str):
        return cover
    try:
        replace_cover(db, library_id, book_id, cover, undo)
        return None
    except (BookGone, UndoNotKept, NotReplaced) as e:
        return str(e)
    except Exception as e:  # anything else: this book's failure, in words, the others go on (the old cover is back)
        return _('The cover could not be written: {reason}').format(reason=f'{type(e).__name__}: {e}')


def forget_old_covers(undo: CoverUndo) -> None:
    """What Undo keeps for longer than the settings say is forgotten (in a thread: files only)."""
    try:
        undo.prune(int(plugin_prefs()['cover_undo_days']))
    except Exception:  # forgetting old covers is housekeeping: it never stops a cover being applied
        pass


def covers_to_apply(items: Sequence[tuple[int, 'bytes | str | Decoded']]) -> list[Decoded | str]:
    """Each item's cover as Book AI decoded it, bounded, in calibre's worker (core.images.decode_images),
    or why it cannot be used, in words: in a thread, never the GUI thread. A staged cover (a path) is
    read as a regular file only, bounded; one decoded already (the one-book window's) is used as it is."""
    out: list[Decoded | str | None] = [None] * len(items)
    sources: list[Source] = []
    where: list[int] = []
    for i, (_book_id, source) in enumerate(items):
        if isinstance(source, Decoded):
            out[i] = source if source.ok else source.problem
        else:
            sources.append(source)
            where.append(i)
    name = _('The new cover')
    for i, d in zip(where, decode_images(sources, [name] * len(sources), cover=True)):
        out[i] = d if d is not None and d.ok else (d.problem if d is not None else _('There is no new cover.'))
    return out  # type: ignore[return-value]  # every slot is filled: above, or one answer a source


def apply_covers(gui: 'Main', library_id: str, items: Sequence[tuple[int, 'bytes | str | Decoded']],
                 then: Callable[[Applied], None] | None = None, titles: dict[int, str] | None = None,
                 parent: QObject | None = None) -> bool:
    """Put the covers on their books: in a thread, old covers forgotten and each cover decoded by Book AI
    itself (covers_to_apply); then, one a step on the GUI thread, each put on its book and read back;
    then refresh calibre's views and say what failed. False (and nothing done) when the library open
    is not library_id."""
    db = current_db(gui)
    if library_id_of(db) != library_id:
        error(gui, _('Another library is open'), _(
            'These covers are for another library: nothing was changed in this one.'))
        return False
    undo = CoverUndo()
    items = list(items)

    def done(reasons: list[str | None], exc: Exception | None) -> None:
        if exc is not None:
            error(gui, _('Covers not applied'), _('The covers could not be applied: {error}').format(error=exc))
            return
        applied = Applied([b for (b, _s), why in zip(items, reasons) if why is None],
                          [(b, why) for (b, _s), why in zip(items, reasons) if why is not None])
        refresh_books(gui, applied.done)
        if applied.done:
            say(gui, ngettext('Book AI: the new cover was applied. Undo cover change puts the old one back.',
                              'Book AI: {count} new covers were applied. Undo cover change puts the old ones back.',
                              len(applied.done)).format(count=len(applied.done)))
        if applied.failed:
            names = titles or {}
            error(gui, _('Some covers were not applied'), '<br>'.join(
                escape(f'{one_line(names.get(b, str(b)))}: {one_line(why)}') for b, why in applied.failed))
        if then is not None:
            then(applied)

    def prepare() -> list[Decoded | str]:  # in a thread: files and calibre's worker, no Qt
        forget_old_covers(undo)
        return covers_to_apply(items)

    def prepared(covers: list[Decoded | str] | None, exc: Exception | None) -> None:
        if exc is not None or covers is None or len(covers) != len(items):
            why = _('The covers could not be decoded: {error}').format(error=f'{type(exc).__name__}: {exc}')
            covers = [why] * len(items)
        run_in_steps(list(zip(items, covers)), lambda pair: put_cover(db, library_id, pair[0][0], pair[1], undo),
                     done, owner)

    owner = parent or gui
    run_in_thread(prepare, prepared, owner)
    return True


def current_book_id(gui: 'Main') -> int | None:
    """The current book of the book list, else the first selected; None when there is none."""
    view = gui.library_view
    index = view.currentIndex()
    if index.isValid():
        try:
            return int(view.model().id(index))
        except Exception:
            pass
    ids = list(view.get_selected_ids())
    return ids[0] if ids else None


def generate_cover(gui: 'Main') -> None:
    """A cover for the current book (CoverDialog); the cover chosen is put on the book."""
    book_id = current_book_id(gui)
    if book_id is None:
        error(gui, _('Cannot generate covers'), _('No books selected'))
        return
    db = current_db(gui)
    library_id = library_id_of(db)
    mi = db.get_metadata(book_id)
    d = CoverDialog(mi, book_id, library_id, gui, open_settings=settings_opener(gui))
    try:
        if d.exec() == QDialog.DialogCode.Accepted and d.cover is not None:
            apply_covers(gui, library_id, [(book_id, d.cover)], titles={book_id: mi.title or ''})
    finally:
        d.deleteLater()

# }}}


# many books: the job {{{

@dataclass
class JobResult:
    staging_dir: str
    library_id: str
    library_path: str
    outcomes: list[CoverOutcome]
    local: bool = False  # made on this computer: no cost
    notes: list[str] = field(default_factory=list)  # what became of the templates (one failed, took too long...)


def make_covers(db: Any, ids: Sequence[int], choices: CoverChoices, provider: 'AIProviderPlugin', at_once: int,
                library_id: str, library_path: str, abort: threading.Event | None = None, log: Any = None,
                notifications: Any = None) -> JobResult:
    """The job's work, in calibre's job thread: the requests (covers.making.book_requests, from the
    library, read now), then covers.bulk.run_covers. calibre's Stop (abort) stops the run's CancelToken."""
    tell = job_progress(notifications)
    staging = ''
    with job_cancel(abort, 'BookAI-covers-stop') as cancel:
        try:
            requests, notes = book_requests(db, ids, choices, abort=cancel)
            if log is not None:
                for note in notes:
                    log(note)
            staging = new_staging_dir()
            filling.add(staging)
            tell(0.0, ngettext('Making a cover', 'Making {count} covers', len(requests)).format(count=len(requests)))

            def progress(done: int, total: int, outcome: CoverOutcome) -> None:
                tell(done / max(1, total), _('{done} of {total}: {title}').format(done=done, total=total,
                                                                                  title=one_line(outcome.title)))
                if log is not None:
                    if outcome.status == 'made':
                        cost = cost_text(outcome.cost, provider.connection.is_local)
                        log(f'Made: {outcome.title} ({outcome.model}; {cost})')
                    elif outcome.status == 'failed':
                        log(f'Failed: {outcome.title}: {outcome.error}')

            outcomes = run_covers(requests, provider, choices.aspect, at_once, staging, cancel, progress,
                                  library_id=library_id, library_path=library_path)
            return JobResult(staging, library_id, library_path, outcomes, provider.connection.is_local, notes)
        finally:
            filling.discard(staging)


def generate_covers(gui: 'Main', ids: Sequence[int]) -> 'ThreadedJob | None':
    """Covers for the books ids: the choices once (BulkCoverDialog), then one calibre job."""
    ids = list(ids)
    if not ids:
        error(gui, _('Cannot generate covers'), _('No books selected'))
        return None
    db = current_db(gui)
    sample = db.get_metadata(ids[0])
    d = BulkCoverDialog(len(ids), gui, sample=sample, open_settings=settings_opener(gui))
    try:
        if d.exec() != QDialog.DialogCode.Accepted or d.result_choices is None:
            return None
        choices = d.result_choices
    finally:
        d.deleteLater()
    provider = chosen_image_provider()
    problem = provider_problem(provider)
    if provider is None or problem:  # no provider has a problem too: problem says so
        error(gui, _('No AI provider'), problem)
        return None
    return start_covers_job(gui, ids, choices, provider)


def start_covers_job(gui: 'Main', ids: Sequence[int], choices: CoverChoices, provider: 'AIProviderPlugin') -> 'ThreadedJob':
    """The one job that makes the covers of ids, in calibre's Jobs panel."""
    db = current_db(gui)
    library_id = library_id_of(db)
    library_path = str(getattr(gui.current_db, 'library_path', '') or '')
    at_once = requests_at_once('cover_requests_at_once')
    description = ngettext('Book AI: a cover for {count} book', 'Book AI: covers for {count} books',
                           len(ids)).format(count=len(ids))
    job = start_job(gui, JOB_TYPE, description, make_covers,
                    (db, list(ids), choices, provider, at_once, library_id, library_path),
                    lambda job: job_done(gui, job), jobs)
    say(gui, ngettext('Book AI: making a cover for the selected book; it is shown for review when done.',
                      'Book AI: making covers for {count} books; they are shown for review when done.',
                      len(ids)).format(count=len(ids)), 3000)
    return job


def job_done(gui: 'Main', job: 'ThreadedJob') -> None:
    """The job ended (finished, stopped or failed): review its covers, here or once their library is open."""
    result = job_result(gui, job, JobResult, jobs, _('Covers could not be made'))
    if result is None:
        return
    if not any(o.status in ('made', 'failed') for o in result.outcomes):
        staging_dir = result.staging_dir  # the closure's own: the check above does not reach into it
        run_in_thread(lambda: discard_run(staging_dir), lambda r, e: None, gui)
        say(gui, _('Book AI: stopped before any cover was made.'))
        return
    run = StagedRun(result.staging_dir, result.library_id, result.library_path, 0.0, True, result.outcomes)
    if result.notes:
        say(gui, _('Book AI: {notes}').format(notes=' '.join(result.notes)), 0)
    if current_library_id(gui) == result.library_id:
        open_review(gui, run, local=result.local)
    else:
        say(gui, ngettext(
            'Book AI: the new cover is for the library {library}. It is kept: open that library, then choose '
            'Book AI → Review generated covers….',
            'Book AI: the {count} new covers are for the library {library}. They are kept: open that library, '
            'then choose Book AI → Review generated covers….', len(run.made)).format(
                count=len(run.made), library=library_name(result.library_path)), 0)

# }}}


# reviewing {{{

def open_review(gui: 'Main', run: StagedRun, local: bool = False) -> 'CoverReview':
    for w in reviews:  # a run has one review window
        if w.run.staging_dir == run.staging_dir:
            w.raise_()
            return w
    w = CoverReview(gui, run, local)
    reviews.append(w)
    w.destroyed.connect(lambda obj=None, w=w: reviews.remove(w) if w in reviews else None)
    w.show()
    w.raise_()
    return w


def review_covers(gui: 'Main') -> None:
    """Review generated covers…: the runs staged for the library open (read in a thread), each in
    its window; those of other libraries named."""
    library_id = current_library_id(gui)

    def found(runs: list[StagedRun] | None, exc: Exception | None) -> None:
        runs = runs or []
        here = [r for r in runs if r.library_id == library_id and reviewable(r)]
        elsewhere = [r for r in runs if r.library_id != library_id]
        for r in here:
            open_review(gui, r)
        if here:
            return
        from calibre.gui2 import info_dialog
        if elsewhere:
            names = sorted({library_name(r.library_path) for r in elsewhere})
            info_dialog(gui, _('Review generated covers'), _(
                'No new covers are waiting for this library. Some are waiting for: {libraries}. Open that library, '
                'then choose Review generated covers… again.').format(libraries=', '.join(names)), show=True)
        else:
            info_dialog(gui, _('Review generated covers'), _('No new covers are waiting for review.'), show=True)

    run_in_thread(staged_runs, found, gui)


class CoverReview(QDialog):
    """The covers of a run beside the books' covers: keep some, or all, or none. local: the covers
    were made on this computer (their cost is none, not unknown)."""

    def __init__(self, gui: 'Main', run: StagedRun, local: bool = False) -> None:
        super().__init__(gui)
        self.gui, self.run, self.local = gui, run, local
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(_('Review generated covers'))
        self.boxes: dict[int, QCheckBox] = {}
        self.thumbs: dict[tuple[int, str], QLabel] = {}
        self.busy = False
        self.setup_ui()
        self.load_thumbnails()
        self.resize(self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(760, 640)

    def setup_ui(self) -> None:
        run = self.run
        made = run.made
        failed = [o for o in run.outcomes if o.status == 'failed']
        stopped = [o for o in run.outcomes if o.status == 'stopped']
        layout = QVBoxLayout(self)
        head = ngettext('A new cover was made for the library {library}.',
                        '{count} new covers were made for the library {library}.', len(made)).format(
            count=len(made), library=library_name(run.library_path) if run.library_path else run.library_id)
        head += ' ' + _('Tick the ones to keep: no cover of a book is replaced until you apply it, and Undo cover '
                        'change puts the old one back.')
        self.header = QLabel(head, self)
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.header)

        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        inner = QWidget(scroll)
        grid = QGridLayout(inner)
        for col, text in enumerate((_('Book'), _('Current cover'), _('New cover'))):
            label = QLabel(f'<b>{escape(text)}</b>', inner)
            grid.addWidget(label, 0, col)
        for row, o in enumerate(made, start=1):
            box = QCheckBox(one_line(o.title) or str(o.book_id), inner)
            box.setChecked(True)
            box.setToolTip(_('Model: {model}').format(model=one_line(o.model)) if o.model else '')
            box.toggled.connect(self.update_state)
            self.boxes[o.book_id] = box
            grid.addWidget(box, row, 0, Qt.AlignmentFlag.AlignTop)
            for col, which in ((1, 'old'), (2, 'new')):
                t = QLabel(_('Loading…'), inner)
                t.setFixedSize(THUMB_SIDE, THUMB_SIDE)
                t.setAlignment(Qt.AlignmentFlag.AlignCenter)
                t.setFrameShape(QFrame.Shape.StyledPanel)
                self.thumbs[(o.book_id, which)] = t
                grid.addWidget(t, row, col)
        grid.setColumnStretch(0, 1)
        grid.setRowStretch(len(made) + 1, 1)
        scroll.setWidget(inner)
        layout.addWidget(scroll, 1)

        lines = []
        if failed:
            lines.append('<b>' + escape(ngettext('Not made for {count} book:', 'Not made for {count} books:',
                                                 len(failed)).format(count=len(failed))) + '</b>')
            lines += [escape(f'{one_line(o.title) or o.book_id}: {one_line(o.error)}') for o in failed]
        if stopped:
            lines.append(escape(ngettext('Stopped before it was made: {count} book.',
                                         'Stopped before they were made: {count} books.',
                                         len(stopped)).format(count=len(stopped))))
        costs = [o.cost for o in run.outcomes if o.status == 'made' or o.model]  # every image made, used or not
        if costs:
            lines.append(escape(_('Cost of the covers made: {cost}').format(
                cost=cost_text(total_cost(costs), self.local))))
        self.failures = QLabel('<br>'.join(lines), self)
        self.failures.setWordWrap(True)
        self.failures.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.failures.setVisible(bool(lines))
        layout.addWidget(self.failures)

        add_review_buttons(self, self, layout, _('Keep the new covers for later: Book AI → Review generated '
                                                 'covers… shows them again'))
        self.update_state()

    def check_all(self, on: bool) -> None:
        for box in self.boxes.values():
            box.setChecked(on)

    def selected(self) -> list[int]:
        return [book_id for book_id, box in self.boxes.items() if box.isChecked()]

    def update_state(self) -> None:
        has = bool(self.boxes)
        self.apply_selected_button.setEnabled(not self.busy and bool(self.selected()))
        self.apply_all_button.setEnabled(not self.busy and has)
        self.discard_button.setEnabled(not self.busy)
        self.all_button.setEnabled(not self.busy and has)
        self.none_button.setEnabled(not self.busy and has)

    # thumbnails, a few at a time {{{

    def load_thumbnails(self) -> None:
        """Each book's cover and the new one, read and decoded small by Book AI in calibre's worker,
        THUMBS_AT_ONCE at a time, in a thread (core.images.decode_images); each few shown as they
        come (a QImage made from Book AI's own rows, no decoder on the GUI thread), so the review
        is shown at once and fills in."""
        db = current_db(self.gui)
        items = [(o.book_id, which, o.path) for o in self.run.made for which in ('old', 'new')]
        batches = [items[i:i + THUMBS_AT_ONCE] for i in range(0, len(items), THUMBS_AT_ONCE)]
        self.loading_stopped = threading.Event()
        stopped = self.loading_stopped

        def old_cover(book_id: int) -> Callable[[], bytes | None]:
            return lambda: db.cover(book_id) if db.has_id(book_id) else None

        def decode(batch: list[tuple[int, str, str]]) -> list[Decoded | None]:  # in a thread
            sources: list[Source] = [old_cover(book_id) if which == 'old' else path for book_id, which, path in batch]
            names = [_("The book's cover") if which == 'old' else _('The new cover') for _b, which, _p in batch]
            return decode_images(sources, names, cover=False, side=THUMB_SIDE, abort=stopped)

        def next_batch(k: int) -> None:
            if k >= len(batches) or stopped.is_set():
                return
            batch = batches[k]

            def show(results: list[Decoded | None] | None, exc: Exception | None) -> None:
                if stopped.is_set():  # the window was closed meanwhile (set before it goes)
                    return
                results = results if results is not None and len(results) == len(batch) else [
                    Decoded(_('It could not be decoded.'))] * len(batch)
                try:
                    for (book_id, which, _path), d in zip(batch, results):
                        self.show_thumbnail(book_id, which, d)
                except RuntimeError:  # the window was destroyed without being closed (calibre quit)
                    stopped.set()
                    return
                next_batch(k + 1)
            # the relay belongs to the application: a worker that ends as the window goes never meets a
            # relay being destroyed; what it brings is dropped (stopped) once the window is closed
            run_in_thread(lambda: decode(batch), show, QApplication.instance())

        next_batch(0)

    def show_thumbnail(self, book_id: int, which: str, decoded: Decoded | None) -> None:
        label = self.thumbs.get((book_id, which))
        if label is None:
            return
        if decoded is None:
            label.setText(_('No cover'))
            return
        image = qimage(decoded.pixels)
        if image.isNull():
            label.setText(_('Cannot be shown'))
            label.setToolTip(one_line(decoded.problem))
        else:
            label.setPixmap(QPixmap.fromImage(image))

    # }}}

    # the choices {{{

    def titles(self) -> dict[int, str]:
        return {o.book_id: o.title for o in self.run.outcomes}

    def apply_selected(self) -> None:
        self.apply(self.selected())

    def apply_all(self) -> None:
        ids = list(self.boxes)
        from calibre.gui2 import question_dialog
        if not question_dialog(self, _('Apply all'), ngettext(
                'Replace the cover of {count} book with the new one?',
                'Replace the covers of {count} books with the new ones?', len(ids)).format(count=len(ids))
                + ' ' + _('Undo cover change can put the old ones back.')):
            return
        self.apply(ids)

    def apply(self, ids: list[int]) -> None:
        if self.busy or not ids:
            return
        paths = {o.book_id: o.path for o in self.run.made}
        items = [(book_id, paths[book_id]) for book_id in ids if book_id in paths]
        self.busy = True
        self.update_state()
        gui, staging = self.gui, self.run.staging_dir

        def applied(result: Applied) -> None:  # the window may be gone by now: the run is done with anyway
            run_in_thread(lambda: discard_run(staging), lambda r, e: None, gui)
            if self in reviews:
                self.busy = False
                self.close()

        if not apply_covers(gui, self.run.library_id, items, then=applied, titles=self.titles()):
            self.busy = False
            self.update_state()

    def discard(self) -> None:
        if self.busy:
            return
        from calibre.gui2 import question_dialog
        count = len(self.boxes)
        if count and not question_dialog(self, _('Discard'), ngettext(
                'Discard the new cover? The book keeps its cover.',
                'Discard the {count} new covers? The books keep their covers.', count).format(count=count)):
            return
        self.finished_with_run()

    def finished_with_run(self) -> None:
        """The run is done with: its staged files go (in a thread) and the window closes."""
        staging = self.run.staging_dir
        run_in_thread(lambda: discard_run(staging), lambda r, e: None, self.gui)
        self.run.outcomes = []
        self.close()

    # }}}

    def done(self, r: int) -> None:
        """Closed, however (Close, Esc, the window's close button, a library switch): what was not
        applied or discarded stays staged, for Review generated covers…."""
        self.loading_stopped.set()
        if self in reviews:
            reviews.remove(self)
        if not self.boxes and self.run.outcomes:  # only failures: nothing to keep for later
            staging = self.run.staging_dir
            run_in_thread(lambda: discard_run(staging), lambda r, e: None, self.gui)
            self.run.outcomes = []
        super().done(r)
        self.deleteLater()

# }}}


# undo {{{

def undoable(gui: 'Main', ids: Sequence[int]) -> bool:
    """Whether any of the books ids has a cover Book AI replaced, to put back."""
    if not ids:
        return False
    return bool(set(CoverUndo().books(current_library_id(gui))) & set(ids))


def kept_for_undo(library_id: str, book_id: int, undo: CoverUndo) -> KeptCover | str | None:
    """What Undo would put back on the book (read from Book AI's cache, regular files only), its
    structure checked; why it cannot be used, in words; None when there is nothing. In a thread."""
    kept = undo.last(library_id, book_id)
    if kept is not None and kept.data is not None:
        try:
            structure(kept.data, _('The cover kept for Undo'))
        except ProviderError as e:
            return str(e)
    return kept


def undo_covers(gui: 'Main', ids: Sequence[int]) -> None:
    """Put back the covers Book AI last replaced on the books ids: what is kept for them read in a
    thread, then a book a step on the GUI thread (calibre stores a cover with Qt), then refresh."""
    ids = list(ids)
    if not ids:
        error(gui, _('Cannot undo'), _('No books selected'))
        return
    db = current_db(gui)
    library_id = library_id_of(db)
    undo = CoverUndo()

    def step(pair: tuple[int, KeptCover | str | None]) -> bool | str:
        """True: put back; False: nothing to undo; else why not, in words."""
        book_id, kept = pair
        if kept is None:
            return False
        if isinstance(kept, str):
            return kept
        try:
            return undo_cover(db, library_id, book_id, undo, kept)
        except (BookGone, NotReplaced) as e:
            return str(e)
        except Exception as e:  # calibre could not write it: said, the others go on
            return f'{type(e).__name__}: {e}'

    def done(outcomes: list[bool | str], exc: Exception | None) -> None:
        if exc is not None:
            error(gui, _('Cannot undo'), _('The covers could not be put back: {error}').format(error=exc))
            return
        restored = [b for b, o in zip(ids, outcomes) if o is True]
        failed = [o for o in outcomes if isinstance(o, str)]
        refresh_books(gui, restored)
        if restored:
            say(gui, ngettext('Book AI: the old cover was put back.', 'Book AI: {count} old covers were put back.',
                              len(restored)).format(count=len(restored)))
        elif not failed:
            say(gui, _('Book AI: there is no cover change to undo for the selected books.'))
        if failed:
            error(gui, _('Cannot undo'), '<br>'.join(escape(one_line(f)) for f in failed))

    def read() -> list[KeptCover | str | None]:  # in a thread: Book AI's cache, no Qt
        return [kept_for_undo(library_id, book_id, undo) for book_id in ids]

    def found(kept: list[KeptCover | str | None] | None, exc: Exception | None) -> None:
        if exc is not None or kept is None:
            error(gui, _('Cannot undo'), _('The covers could not be put back: {error}').format(error=exc))
            return
        run_in_steps(list(zip(ids, kept)), step, done, gui)  # on the GUI thread: calibre stores a cover with Qt

    run_in_thread(read, found, gui)

# }}}


# the library switches {{{

def library_about_to_change(gui: 'Main', library_id: str) -> int:
    """Close the review windows of other libraries (their covers stay staged for later).
    Returns how many were closed."""
    closed = 0
    for w in list(reviews):
        if w.run.library_id != library_id:
            w.close()
            closed += 1
    return closed


def library_changed(gui: 'Main') -> None:
    """Say, once the library is open, when new covers wait for its review (looked for in a thread)."""
    library_id = current_library_id(gui)

    def found(runs: list[StagedRun] | None, exc: Exception | None) -> None:
        waiting = [r for r in runs or () if r.library_id == library_id and reviewable(r) and r.made]
        if waiting:
            count = sum(len(r.made) for r in waiting)
            say(gui, ngettext('Book AI: a new cover waits for your review: Book AI → Review generated covers….',
                              'Book AI: {count} new covers wait for your review: Book AI → Review generated covers….',
                              count).format(count=count), 0)

    run_in_thread(staged_runs, found, gui)


# }}}
