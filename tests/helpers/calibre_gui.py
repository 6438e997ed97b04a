# License: GPLv3 Copyright: the Book AI developers
"""What Book AI's windows need of calibre's main window, for windows tested in this process
(offscreen, with the qapp fixture), and a wait on Qt's events."""

import time
from typing import Callable

from qt.core import QApplication, QEventLoop, QWidget


class ViewAction:
    """Stands for calibre's View action: records what would be opened in the E-book viewer."""

    def __init__(self):
        self.opened: list[tuple] = []

    def view_format_by_id(self, book_id: int, fmt: str, open_at: str | None = None) -> None:
        self.opened.append((book_id, fmt, open_at))


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
