# License: GPLv3 Copyright: the Book AI developers
"""Make chapter summaries, in the Book AI menu of calibre's main window: the chapters read of the
selected books summarized ahead, so that "Everything up to where I am", the story so far and the
X-Ray find them made.

conversation/library_summaries.py's one Qt-free path: the books read and planned in a thread (their
text, the reader's place saved by the E-book viewer, the chapters read to their end, those kept
already), then, for a provider on the internet, the reader's consent with the estimated tokens and
cost; then ONE calibre job (calibre.gui2.threaded_jobs.ThreadedJob, as the covers' job) that makes
them: its progress in calibre's Jobs (the fraction done and the chapter), Stop from there (the
summaries made are kept), a line a book in its log (a book with no place known: nothing of it is
sent, said there), and the outcome in words in the status bar when it ends. A book whose summaries
are being made already is not started again: said in words.

Imported only when the menu entry is chosen (action.py).
"""

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.conversation.library_summaries import (
    BooksRun, Plans, described, estimate_books, make_summaries, plan_books,
)
from calibre_plugins.bookai.conversation.recap import needs_consent, remember_consent
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.main_window.calibre_window import say
from calibre_plugins.bookai.main_window.threaded_job import job_cancel, job_progress, job_result, start_job
from calibre_plugins.bookai.providers.registry import chosen_provider

if TYPE_CHECKING:
    from calibre.gui2.threaded_jobs import ThreadedJob
    from calibre.gui2.ui import Main

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

JOB_TYPE = 'bookai-summaries'
TITLE = _('Make chapter summaries')

# the books whose summaries are being planned or made in this calibre: (library id, book id)
busy: set[tuple[str, int]] = set()
jobs: set['ThreadedJob'] = set()


def error(gui: Any, text: str) -> None:
    from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
    error_dialog(gui, TITLE, text, show=True)


def info(gui: Any, text: str, details: str = '') -> None:
    from calibre.gui2 import info_dialog  # looked up when called, so that a test can stand in for it
    info_dialog(gui, TITLE, text, det_msg=details, show=True)


def make_chapter_summaries(gui: 'Main', ids: Sequence[int]) -> bool:
    """The chapters read of the books ids summarized by the chosen provider, as a calibre job (see the
    module's doc). False when nothing starts (said why, in words)."""
    ids = list(ids)
    if not ids:
        error(gui, _('No books selected'))
        return False
    provider = chosen_provider()
    problem = provider.config.missing_setup() if provider is not None else _('No AI provider is chosen yet.')
    if provider is None or problem:
        error(gui, problem + ' ' + _('Nothing was sent. Set up a provider in the settings.'))
        return False
    db = gui.current_db.new_api
    library_id = db.library_id
    already = [i for i in ids if (library_id, i) in busy]
    if already:
        titles = ', '.join(one_line(db.field_for('title', i) or str(i)) for i in already)
        error(gui, ngettext('Chapter summaries are being made for {titles} already: wait for that job to end, or '
                            'stop it in the Jobs window. Nothing was started.',
                            'Chapter summaries are being made for these books already: {titles}. Wait for that '
                            'job to end, or stop it in the Jobs window. Nothing was started.',
                            len(already)).format(titles=titles))
        return False
    busy.update((library_id, i) for i in ids)
    chosen: 'AIProviderPlugin' = provider
    cancel = CancelToken()

    def plan() -> Plans:  # in a thread: the books' text, files, perhaps the service's model list
        return plan_books(db, ids, chosen, cancel=cancel)

    def planned(plans: Plans | None, exc: BaseException | None) -> None:
        if exc is not None or plans is None:
            busy.difference_update((library_id, i) for i in ids)
            error(gui, _('The books could not be read for their summaries: {error}').format(error=exc))
            return
        if not start(gui, plans, chosen, library_id):
            busy.difference_update((library_id, i) for i in ids)
    say(gui, _('Book AI: reading the books for their chapter summaries…'), 5000)
    run_in_thread(plan, planned, gui)
    return True


def start(gui: 'Main', plans: Plans, provider: 'AIProviderPlugin', library_id: str) -> bool:
    """The job started for plans, after the reader's consent where it is needed; False when not."""
    if not plans.requests:
        reasons = [f'{one_line(b.title)}: {b.why}' for b in plans.books if b.why]
        info(gui, _('There are no chapter summaries to make: every chapter read of these books has one, or '
                    'nothing of them can be summarized yet.'), '\n'.join(reasons))
        return False
    estimate = estimate_books(plans, provider)
    said = described(plans, estimate)
    if needs_consent(provider, plans.consent_keys):
        from calibre.gui2 import question_dialog  # looked up when called, so that a test can stand in for it
        if not question_dialog(gui, TITLE, _('The chapters you have read go to {provider}, on the internet, to be '
                                             'summarized: {what} Send them?').format(
                provider=provider.display_name, what=said)):
            say(gui, _('Book AI: nothing was sent.'), 5000)
            return False
        remember_consent(provider, plans.consent_keys)
    books = [(library_id, b.book_id) for b in plans.books]
    description = ngettext('Book AI: chapter summaries of {count} book', 'Book AI: chapter summaries of {count} books',
                           len(plans.books)).format(count=len(plans.books))
    start_job(gui, JOB_TYPE, description, summaries_job, (plans, provider), lambda job: job_done(gui, job, books), jobs)
    say(gui, _('Book AI: making chapter summaries: {what}').format(what=said), 5000)
    return True


def summaries_job(plans: Plans, provider: 'AIProviderPlugin', abort: threading.Event | None = None, log: Any = None,
                  notifications: Any = None) -> BooksRun:
    """The job's work, in calibre's job thread: library_summaries.make_summaries, its progress as
    calibre's notifications, its lines in the job's log; calibre's Stop (abort) stops it."""
    with job_cancel(abort, 'BookAI-summaries-stop') as cancel:
        return make_summaries(plans, provider, cancel, job_progress(notifications), log if callable(log) else None)


def job_done(gui: 'Main', job: 'ThreadedJob', books: Sequence[tuple[str, int]]) -> None:
    """The job ended (finished, stopped or failed): its books free again, and its outcome said."""
    busy.difference_update(books)
    result = job_result(gui, job, BooksRun, jobs, _('Chapter summaries could not be made'))
    if result is None:
        return
    say(gui, _('Book AI: {outcome}').format(outcome=result.said()), 0)
