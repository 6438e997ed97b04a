# License: GPLv3 Copyright: the Book AI developers
"""What Book AI's windows need of calibre's main window, for windows tested in this process
(offscreen, with the qapp fixture), and a wait on Qt's events."""

import shutil
import time
from pathlib import Path
from typing import Any, Callable

from qt.core import QApplication, QEventLoop, QModelIndex, QObject, QTimer, QWidget

from helpers.project import PROJECT

SCREENSHOTS = PROJECT / 'docs' / 'screenshots'  # what the README shows


class ViewAction:
    """Stands for calibre's View action: records what would be opened in the E-book viewer."""

    def __init__(self):
        self.opened: list[tuple] = []

    def view_format_by_id(self, book_id: int, fmt: str, open_at: str | None = None) -> None:
        self.opened.append((book_id, fmt, open_at))


class ViewerWebView:
    current_cfi = ''  # the viewer's place: none that maps to the book's text


class StandInViewer:
    """What Book AI's Ask AI panel needs of calibre's E-book viewer: the book open (the path of its
    file, its title and authors) and the web view showing it, at no place that maps to its text."""

    def __init__(self, path, title: str = 'Quick Start Guide', authors: tuple[str, ...] = ('John Schember',)):
        self.current_book_data = {'pathtoebook': str(path), 'metadata': {'title': title, 'authors': list(authors)}}
        self.web_view = ViewerWebView()


class LibraryView(QObject):
    """What Book AI asks of calibre's book list: the selection, and refresh_ids() (recorded)."""

    def __init__(self):
        super().__init__()
        self.selected: list[int] = []
        self.refreshed: list[list[int]] = []
        self.shown: set[int] | None = None  # the books the list shows (a search): None for every one

    def get_selected_ids(self) -> list[int]:
        return list(self.selected)

    def select_rows(self, identifiers, using_ids=True, change_current=True, scroll=True) -> None:
        """As calibre's: the books of identifiers the list shows become the selection."""
        self.selected = [b for b in identifiers if self.shown is None or b in self.shown]

    def currentIndex(self) -> QModelIndex:
        return QModelIndex()

    def model(self):
        return self

    def refresh_ids(self, ids, current_row=-1) -> None:
        self.refreshed.append(sorted(ids))


class StatusBar:
    """calibre's status bar: the messages shown, recorded."""

    def __init__(self):
        self.messages: list[str] = []

    def show_message(self, text, timeout=0, show_notification=True) -> None:
        self.messages.append(text)


def stand_in_gui(job_manager: bool = False) -> QWidget:
    """What Book AI's windows need of calibre's main window: the View action and, with job_manager,
    calibre's real job manager (real conversion jobs in worker processes)."""
    gui = QWidget()
    gui.iactions = {'View': ViewAction()}
    if job_manager:
        # lazy: calibre's job machinery (most of calibre.gui2), for the few tests that convert books
        from calibre.gui2.jobs import JobManager
        gui.job_manager = JobManager()
    return gui


def stand_in_main_window(library: object) -> QWidget:
    """What Book AI's calibre jobs use of the main window: the library at path library open
    (calibre's LibraryDatabase), the book list, the status bar, calibre's real job manager, and the
    jobs that failed, recorded in job_failures (calibre's job_exception)."""
    from calibre.library import db
    gui = stand_in_gui(job_manager=True)
    gui.current_db = db(str(library))
    gui.library_view = LibraryView()
    gui.status_bar = StatusBar()
    gui.job_failures = []
    gui.job_exception = lambda job, dialog_title='': gui.job_failures.append(job)
    return gui


def wait_until(condition: Callable[[], object], timeout: float = 120,
               state: Callable[[], object] | None = None) -> None:
    """Run Qt's events until condition() holds; an AssertionError after timeout seconds, saying
    state() (what the test can see of where things stand) when given."""
    end = time.monotonic() + timeout
    while not condition():
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        if time.monotonic() > end:
            raise AssertionError(f'timed out waiting after {timeout:g} s' + (f': {state()!r}' if state else ''))
        time.sleep(0.005)


def when_modal(act: Callable[[Any], object], kind: type = QWidget) -> None:
    """Call act with the next modal dialog shown (of type kind), from Qt's events: armed before the
    click that opens the dialog, which runs in an event loop of its own."""
    def poll() -> None:
        d = QApplication.activeModalWidget()
        if not isinstance(d, kind):
            QTimer.singleShot(50, poll)
        else:
            act(d)
    QTimer.singleShot(50, poll)


def shoot(widget: QWidget, path: Path, smallest: int, for_readme: bool = False) -> None:
    """widget as the reader sees it, saved at path; a picture smaller than smallest bytes is taken for
    an empty one. for_readme: kept in docs/screenshots too, where the README shows it."""
    QApplication.processEvents()
    assert widget.grab().save(str(path))
    assert path.stat().st_size > smallest, f'{path} looks empty'
    if for_readme:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SCREENSHOTS / path.name)
