# License: GPLv3 Copyright: the Book AI developers
"""The library searched by meaning in calibre's main window: Search library by meaning… and More
like this (Book AI's menu, calibre's Similar books menu and so the book list's context menu).

library_search/'s one Qt-free path, as the command line's `search` and `similar` take it: the
embeddings provider chosen (library_search.building.embeddings_provider), the index's plan read in a
thread; for a provider on the internet, the reader's consent first, with what goes where, the books
and tokens it would send and their price; then, when the index is behind, ONE calibre job
(calibre.gui2.threaded_jobs.ThreadedJob, as the summaries' job) that brings it up to date: its
progress in calibre's Jobs, Stop from there (what was embedded is kept, and the next search goes on
from there). Then the words embedded and the books found, in a thread.

The books found show in calibre's own book list, best first: they are marked with calibre's marks
(labels MARK 01, MARK 02...: the reader's own marks are kept), calibre searches for them
(`marked:bookai`) and sorts its list on the marks. calibre's current search and virtual library
restrict what is found: the books its list shows when the search starts (while a search of ours is
shown, the books shown before it). The window lists them with why each was found and its score;
clicking one selects it in the list.

Imported only when one of the entries is chosen (action.py).
"""

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qt.core import (
    QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, Qt, QTreeWidget,
    QTreeWidgetItem, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.gui.icons import plugin_icon
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.library_search import building, finding
from calibre_plugins.bookai.library_search.vectors import VectorFiles
from calibre_plugins.bookai.main_window.threaded_job import job_cancel, job_progress, start_job
from calibre_plugins.bookai.providers.pricing import sending_estimate

if TYPE_CHECKING:
    from calibre.gui2.threaded_jobs import ThreadedJob
    from calibre.gui2.ui import Main

load_translations()

JOB_TYPE = 'bookai-library-index'
TITLE = _('Search library by meaning')
NEAR = 0.4                        # of the best book's score: the books shown score at least this share of it
MARK = 'bookai'                   # calibre's mark of a book found: MARK and its rank
SEARCH = f'marked:{MARK}'          # calibre's search for them
NO_PROVIDER = _('No provider that makes embeddings is chosen for the library. In Book AI\'s Settings, on the '
                'Provider tab, set up one on this computer (llama.cpp\'s server with an embedding model, Ollama '
                'or LM Studio) and choose it under "Search library by meaning with".')

# what this calibre keeps: the jobs under way (one per library), the windows open
jobs: set['ThreadedJob'] = set()
indexing: set[str] = set()
windows: list['SearchWindow'] = []
# the books calibre's list showed before a search of ours was shown, by library: what restricts the next
shown_before: dict[str, list[int]] = {}


def error(gui: Any, text: str) -> None:
    from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
    error_dialog(gui, TITLE, text, show=True)


# calibre's book list {{{

def book_list_data(gui: 'Main') -> Any:
    """calibre's view of the library its book list shows (db.data: the same on 6.13, 8.5 and 9.17)."""
    return gui.library_view.model().db.data


def shown_ids(gui: 'Main', library_id: str) -> list[int]:
    """The books calibre's list shows now (its search and virtual library), in its order; while a
    search of ours is shown, those it showed before."""
    search = getattr(gui, 'search', None)
    if search is not None and str(search.text()).strip() == SEARCH and library_id in shown_before:
        return list(shown_before[library_id])
    data = book_list_data(gui)
    return [data.index_to_id(i) for i in range(len(data))]


def relevant(found: Sequence[finding.Found]) -> list[finding.Found]:
    """The books worth showing of those found, best first: above nothing in common (a score over 0), and
    at least NEAR of the best one's score; in a small library every book is among the nearest 50."""
    if not found:
        return []
    least = max(0.0, found[0].score * NEAR)
    return [f for f in found if f.score > least or f is found[0]]


def show_in_book_list(gui: 'Main', library_id: str, found: Sequence[finding.Found], allowed: list[int]) -> None:
    """The books found marked, searched for and sorted best first in calibre's list; the reader's
    own marks kept, ours of before taken away."""
    data = book_list_data(gui)
    marks = {b: v for b, v in dict(data.marked_ids).items() if not str(v).startswith(MARK)}
    width = len(str(len(found)))
    marks.update({f.book_id: f'{MARK} {rank:0{max(2, width)}d}' for rank, f in enumerate(found, 1)})
    data.set_marked_ids(marks)
    shown_before[library_id] = list(allowed)
    search = getattr(gui, 'search', None)
    if search is not None:
        search.set_search_string(SEARCH)
    gui.library_view.sort_by_named_field('marked', True)
    if found:
        gui.library_view.select_rows([found[0].book_id])

# }}}


@dataclass
class Ready:
    """What the thread learned before anything is sent: the embedder, the plan, and for a provider
    online the books and tokens it would send."""
    e: building.Embedder
    plan: building.Plan
    files: VectorFiles
    consent: bool = False          # the reader must agree first
    books: int = 0
    tokens: int = 0


@dataclass
class Search:
    """One search: the words (or the books More like this starts from), what restricts it."""
    words: str = ''
    book_ids: list[int] = field(default_factory=list)
    allowed: list[int] = field(default_factory=list)


class Searcher:
    """One way in (the window's search, More like this): the provider checked, the index brought up to
    date (consent and job), the books found, then on_found(found) or on_problem(text)."""

    def __init__(self, gui: 'Main', parent: QWidget, on_found: Callable[[list[finding.Found]], None],
                 on_problem: Callable[[str], None], on_status: Callable[[str], None]) -> None:
        self.gui, self.parent = gui, parent
        self.on_found, self.on_problem, self.on_status = on_found, on_problem, on_status
        self.db = gui.current_db.new_api
        self.library_id = str(self.db.library_id)
        self.cancel = CancelToken()

    def start(self, search: Search) -> bool:
        """Start search; False (said why) when it cannot start."""
        return self.when_ready(lambda ready: self.find(search, ready))

    def when_ready(self, then: Callable[[Ready], None]) -> bool:
        """then(ready) once the library's index is up to date: the provider checked, the plan made in a
        thread, the reader's consent asked for a provider online, the index's job run when it is
        behind (what Search library by meaning, More like this and what to read next from this
        library share). False (said why) when it cannot start."""
        provider = building.embeddings_provider()
        if provider is None:
            self.on_problem(NO_PROVIDER)
            return False
        if problem := provider.config.missing_setup():
            self.on_problem(problem + ' ' + _('Nothing was sent.'))
            return False
        if self.library_id in indexing:
            self.on_problem(_("The library's index by meaning is being brought up to date: search again when that "
                              'job has ended.'))
            return False
        db, library_id, cancel, chosen = self.db, self.library_id, self.cancel, provider
        folder = str(self.gui.current_db.library_path)

        def prepare() -> Ready:  # in a thread: perhaps the service's model list, the library's times
            e = building.embedder(chosen, '', cancel)
            files = VectorFiles()
            try:  # this library's folder remembered; the indexes of libraries gone removed
                building.remember_place(library_id, folder)
                building.remove_gone(files)
            except OSError:  # the settings cannot be written: nothing else depends on it
                pass
            p = building.plan(db, library_id, e, files)
            ready = Ready(e, p, files)
            if p.todo and not building.agreed(library_id, e):
                ready.consent = True
                ready.books, ready.tokens = building.estimate(db, library_id, p)
            return ready
        self.on_status(_('Looking at the library…'))
        run_in_thread(prepare, lambda ready, exc: self.prepared(then, ready, exc), self.parent)
        return True

    def prepared(self, then: Callable[[Ready], None], ready: Ready | None, exc: BaseException | None) -> None:
        if exc is not None or ready is None:
            self.on_problem(one_line(str(exc))[:600])
            return
        if ready.plan.todo:
            if ready.consent and not self.agreed(ready):
                self.on_problem(_('Nothing was sent.'))
                return
            self.start_job(then, ready)
            return
        then(ready)

    def agreed(self, ready: Ready) -> bool:
        """The reader's yes to sending the library's metadata online, asked with the estimate."""
        from calibre.gui2 import question_dialog  # looked up when called, so that a test can stand in for it
        e = ready.e
        text = ngettext(
            'To search it by meaning, the title, authors, tags, series, publisher and description of {n} book '
            'go to {provider}, on the internet, to be embedded by {model}. Only this once: after that, only '
            'the books added or changed. {cost} Send them?',
            'To search it by meaning, the title, authors, tags, series, publisher and description of {n} books '
            'go to {provider}, on the internet, to be embedded by {model}. Only this once: after that, only '
            'the books added or changed. {cost} Send them?', ready.books).format(
            n=ready.books, provider=e.provider.display_name, model=one_line(e.model)[:100],
            cost=sending_estimate(e.provider.name, e.model, ready.tokens, False))
        if not question_dialog(self.parent, TITLE, text):
            return False
        building.agree(self.library_id, e)
        return True

    def start_job(self, then: Callable[[Ready], None], ready: Ready) -> None:
        library_id = self.library_id
        indexing.add(library_id)
        description = ngettext('Book AI: the library by meaning, {n} book', 'Book AI: the library by meaning, '
                               '{n} books', ready.plan.books).format(n=ready.plan.books)
        start_job(self.gui, JOB_TYPE, description, index_job, (self.db, library_id, ready),
                  lambda job: self.job_done(job, then, ready), jobs)
        self.on_status(ngettext('Embedding {n} book with {model}: see calibre\'s Jobs.',
                                'Embedding {n} books with {model}: see calibre\'s Jobs.', ready.plan.books).format(
            n=ready.plan.books, model=one_line(ready.e.model)[:100]))

    def job_done(self, job: 'ThreadedJob', then: Callable[[Ready], None], ready: Ready) -> None:
        indexing.discard(self.library_id)
        stopped = _('Stopped: what was embedded is kept, and the next search goes on from there.')
        jobs.discard(job)
        built = getattr(job, 'result', None)
        if isinstance(built, IndexFailed):
            self.on_problem(built.sentence)
            return
        if not isinstance(built, building.Built):  # its failure said in the window that asked, not calibre's
            if getattr(job, 'killed', False):
                self.on_problem(stopped)
            else:
                why = getattr(job, 'exception', None)
                self.on_problem(one_line(str(why))[:600] if why is not None else _(
                    "The library's index by meaning could not be brought up to date."))
            return
        if built.stopped:
            self.on_problem(stopped)
            return
        if self.gui.current_db.new_api.library_id != self.db.library_id:  # the reader switched library
            return
        then(ready)

    def find(self, search: Search, ready: Ready) -> None:
        db, library_id, cancel, e, files = self.db, self.library_id, self.cancel, ready.e, ready.files

        def work() -> list[finding.Found]:
            index = files.read(library_id, model=e.key)
            if index is None:
                raise finding.NoIndex(_("The library's index by meaning could not be read back."))
            allowed = search.allowed or None
            if search.book_ids:
                return finding.more_like(db, index, search.book_ids, finding.DEFAULT_K, allowed)
            return finding.search(db, library_id, index, e, search.words, finding.DEFAULT_K, allowed, cancel)

        def done(found: list[finding.Found] | None, exc: BaseException | None) -> None:
            if exc is not None or found is None:
                self.on_problem(one_line(str(exc))[:600])
            else:
                self.on_found(found)
        self.on_status(_('Searching…'))
        run_in_thread(work, done, self.parent)


@dataclass(frozen=True)
class IndexFailed:
    """The index could not be brought up to date: why, in one sentence (what was embedded is kept)."""
    sentence: str


def index_job(db: Any, library_id: str, ready: Ready, abort: threading.Event | None = None, log: Any = None,
              notifications: Any = None) -> 'building.Built | IndexFailed':
    """The job's work, in calibre's job thread: the index brought up to date, its progress as
    calibre's notifications; calibre's Stop (abort) stops it, what was embedded kept. A service that
    fails, or an index that cannot be kept, ends it as IndexFailed: said in the window that asked,
    not as a failed job's traceback."""
    tell = job_progress(notifications)
    with job_cancel(abort, 'BookAI-library-index-stop') as cancel:
        def progress(done: int, total: int) -> None:
            tell(done / max(1, total), _('{done} of {total} books').format(done=done, total=total))
        try:
            built = building.update_index(db, library_id, ready.e, ready.files, cancel, progress,
                                          the_plan=ready.plan)
        except ProviderError as e:
            return IndexFailed(str(e))
        except building.IndexNotKept as e:
            return IndexFailed(str(e))
    if callable(log):
        log(_('{embedded} books embedded, {kept} kept, {removed} taken out; {books} in the index.').format(
            embedded=built.embedded, kept=built.kept, removed=built.removed, books=built.books))
    return built


class SearchWindow(QDialog):
    """The search box, and the books found: title, why, score; a click selects the book in calibre's list."""

    def __init__(self, gui: 'Main', more_like: Sequence[int] = ()) -> None:
        super().__init__(gui)
        self.gui = gui
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowIcon(plugin_icon('bookai'))
        self.searcher = Searcher(gui, self, self.show_found, self.show_problem, self.show_status)
        self.library_id = self.searcher.library_id
        self.titles: dict[int, str] = {}
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.words = QLineEdit(self)
        self.words.setPlaceholderText(_('Describe the book you are looking for, in your own words'))
        self.words.setClearButtonEnabled(True)
        self.words.returnPressed.connect(self.search)
        self.search_button = QPushButton(_('&Search'), self)
        self.search_button.clicked.connect(self.search)
        row.addWidget(self.words, 1)
        row.addWidget(self.search_button)
        layout.addLayout(row)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        self.results = QTreeWidget(self)
        self.results.setRootIsDecorated(False)
        self.results.setHeaderLabels([_('Title'), _('Why'), _('Score')])
        self.results.setWordWrap(True)
        header = self.results.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.results.setColumnWidth(0, 220)
        self.results.itemClicked.connect(self.select_in_list)
        self.results.itemActivated.connect(self.select_in_list)
        layout.addWidget(self.results, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.resize(720, 360)
        if more_like:
            self.setWindowTitle(_('More like this'))
            self.words.setVisible(False)
            self.search_button.setVisible(False)
            db = self.searcher.db
            titles = [one_line(str(db.field_for('title', b) or ''))[:80] for b in list(more_like)[:3]]
            self.nearest = QLabel(_('Nearest to: {titles}').format(titles='; '.join(titles) + (
                ' …' if len(more_like) > 3 else '')), self)
            self.nearest.setWordWrap(True)
            layout.insertWidget(0, self.nearest)
        else:
            self.setWindowTitle(TITLE)
        self.more_like = list(more_like)

    def search(self) -> bool:
        words = ' '.join(self.words.text().split())
        if not words and not self.more_like:
            return False
        self.results.clear()
        self.search_button.setEnabled(False)
        allowed = shown_ids(self.gui, self.library_id)
        started = self.searcher.start(Search(words, self.more_like, allowed))
        self.search_button.setEnabled(not started)
        return started

    def show_status(self, text: str) -> None:
        self.status.setText(text)

    def show_problem(self, text: str) -> None:
        self.search_button.setEnabled(True)
        self.status.setText(text)

    def show_found(self, found: list[finding.Found]) -> None:
        self.search_button.setEnabled(True)
        found = relevant(found)
        db = self.searcher.db
        if self.gui.current_db.new_api.library_id != db.library_id:
            return self.close()
        allowed = shown_ids(self.gui, self.library_id)
        titles = db.all_field_for('title', [f.book_id for f in found], default_value='')
        authors = db.all_field_for('authors', [f.book_id for f in found], default_value=())
        self.results.clear()
        for f in found:
            title = one_line(str(titles.get(f.book_id) or ''))[:200]
            by = one_line(' & '.join(map(str, authors.get(f.book_id) or ())))[:200]
            item = QTreeWidgetItem([title, one_line(f.why)[:finding.WHY_CHARS], f'{f.score:.2f}'])
            item.setData(0, Qt.ItemDataRole.UserRole, f.book_id)
            item.setToolTip(0, _('{title} by {authors}').format(title=title, authors=by) if by else title)
            item.setToolTip(1, one_line(f.why))
            item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.results.addTopLevelItem(item)
        if not found:
            self.status.setText(_('No book of the library was found.'))
            return
        show_in_book_list(self.gui, self.library_id, found, allowed)
        self.status.setText(ngettext('{n} book found, best first: shown in calibre\'s book list too.',
                                     '{n} books found, best first: shown in calibre\'s book list too.',
                                     len(found)).format(n=len(found)))

    def found_ids(self) -> list[int]:
        return [self.results.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.results.topLevelItemCount())]

    def select_in_list(self, item: QTreeWidgetItem, column: int = 0) -> None:
        book_id = item.data(0, Qt.ItemDataRole.UserRole)
        if book_id is not None:
            self.gui.library_view.select_rows([int(book_id)])

    def closeEvent(self, event: Any) -> None:
        self.searcher.cancel.cancel()
        if self in windows:
            windows.remove(self)
        super().closeEvent(event)


def open_search(gui: 'Main') -> SearchWindow:
    """Search library by meaning…: the window (the one open for this library, raised)."""
    library_id = str(gui.current_db.new_api.library_id)
    for w in windows:
        if w.library_id == library_id and not w.more_like:
            w.show()
            w.raise_()
            w.activateWindow()
            return w
    w = SearchWindow(gui)
    windows.append(w)
    w.show()
    w.raise_()
    w.words.setFocus(Qt.FocusReason.OtherFocusReason)
    return w


def more_like_this(gui: 'Main', ids: Sequence[int]) -> SearchWindow | None:
    """More like this: the books nearest the selected ones, in the window and calibre's list."""
    ids = list(ids)
    if not ids:
        error(gui, _('Select one or more books first.'))
        return None
    w = SearchWindow(gui, more_like=ids)
    windows.append(w)
    w.show()
    w.search()
    return w


def library_about_to_change(gui: 'Main', library_id: str) -> None:
    """The windows of the library being left close; what their jobs embed is kept."""
    for w in list(windows):
        if w.library_id != library_id:
            w.close()
