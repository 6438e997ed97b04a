# License: GPLv3 Copyright: the Book AI developers
"""What Book AI's calibre jobs (calibre.gui2.threaded_jobs.ThreadedJob: the covers, the chapter
summaries) share in the job's thread: calibre's Stop, an abort Event, made Book AI's CancelToken,
and progress told as calibre's notifications (a fraction done and a line of text)."""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.gui.worker import collect_garbage_on_gui_thread


@contextmanager
def job_cancel(abort: threading.Event | None, name: str) -> Iterator[CancelToken]:
    """A CancelToken cancelled when calibre's job is stopped (abort set), for the work inside the
    with block; the thread that watches abort ends with the block."""
    cancel = CancelToken()
    over = threading.Event()

    def watch() -> None:
        while not over.is_set():
            if abort is not None and abort.wait(0.1):
                cancel.cancel()
                return
            if abort is None:
                over.wait(0.1)
    threading.Thread(target=watch, daemon=True, name=name).start()
    try:
        yield cancel
    finally:
        over.set()


def job_progress(notifications: Any) -> Callable[[float, str], None]:
    """tell(fraction, text): the job's progress in calibre's Jobs panel (nothing without notifications)."""
    def tell(fraction: float, text: str) -> None:
        if notifications is not None:
            notifications.put((fraction, text))
    return tell


def run_job(gui: Any, job: Any, kept: set) -> None:
    """Start job (a ThreadedJob) in calibre's job manager, kept alive in kept until its done callback
    lets it go, and point at calibre's Jobs button where the main window has one."""
    kept.add(job)
    collect_garbage_on_gui_thread()  # the job's threads: gui.worker's note
    gui.job_manager.run_threaded_job(job)
    pointer = getattr(gui, 'jobs_pointer', None)
    if pointer is not None:
        pointer.start()
