# License: GPLv3 Copyright: the Book AI developers
"""What Book AI's calibre jobs (calibre.gui2.threaded_jobs.ThreadedJob: the covers, the chapter
summaries, AI metadata) share: started in calibre's Jobs (start_job()); in the job's thread,
calibre's Stop, an abort Event, made Book AI's CancelToken, and progress told as calibre's
notifications (a fraction done and a line of text); when it ends, its result, or calibre's error
window when it failed (job_result())."""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

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


R = TypeVar('R')


def start_job(gui: Any, job_type: str, description: str, work: Callable[..., Any], args: tuple,
              done: Callable[[Any], None], kept: set) -> Any:
    """A ThreadedJob of work(*args) started in calibre's Jobs (run_job()): one at a time, stoppable;
    done(job) on the GUI thread when it ends."""
    from calibre.gui2 import Dispatcher
    from calibre.gui2.threaded_jobs import ThreadedJob
    job = ThreadedJob(job_type, description, work, args, {}, Dispatcher(done), max_concurrent_count=1, killable=True)
    run_job(gui, job, kept)
    return job


def job_result(gui: Any, job: Any, kind: type[R], kept: set, failed_title: str) -> R | None:
    """What job (ended) gave, when it is a kind; else None, and calibre's error window when it
    failed (not when the reader stopped it). It is let go from kept."""
    kept.discard(job)
    result = getattr(job, 'result', None)
    if isinstance(result, kind):
        return result
    if job.failed and not getattr(job, 'killed', False):
        gui.job_exception(job, dialog_title=failed_title)
    return None


def requests_at_once(setting: str) -> int:
    """The requests at once a job's setting says, 1 to 8 (3 when it says nothing of use)."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    try:
        return max(1, min(8, int(plugin_prefs()[setting])))
    except (TypeError, ValueError):
        return 3
