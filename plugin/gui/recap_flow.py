# License: GPLv3 Copyright: the Book AI developers
"""The story so far in a window about one book (the library's discussion window, the viewer's
panel): conversation.recap's one Qt-free path, run without blocking the window.

The book's text is read (as for a question), the reader's place found (none: nothing is sent,
and the reader is told), the recap planned in a thread (it may ask the service what the model
reads at once), what will be sent and its cost said, and, for a provider not on this computer,
the reader's consent asked the first time for the book. The chapter summaries still missing are
then made in a thread, with their progress in the panel's status line; Stop ends them, and those
made are kept. The recap itself is then sent as the panel sends a question: it streams into the
chat, its [n] citations are links, and the conversation is kept in the History.

"Recap since you last read" (the viewer's offer after a break) is start() from an earlier place;
"Previously in the series" is start_series(): the earlier books of the series that the library
holds, read in the thread, then planned and sent the same way, with one consent for all of them.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

from qt.core import QCheckBox, QMessageBox, QObject, pyqtSignal

from calibre_plugins.bookai.conversation.last_read import since_place
from calibre_plugins.bookai.conversation.recap import (
    RecapJob, book_source, needs_consent, remember_consent, series_job,
)
from calibre_plugins.bookai.conversation.summaries import BookKey, SummaryRun
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ContextTooLong
from calibre_plugins.bookai.core.messages import Answer
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.gui.worker import emitter, run_while

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.gui.book_text import BookText
    from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel
    from calibre_plugins.bookai.gui.passages import Grounding
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


class RecapFlow(QObject):
    """One panel's recaps: start() runs one; the panel's Stop ends it (its loading_cancel)."""

    progressed = pyqtSignal(int, int, str)  # done, total, the chapter being summarized: from the thread

    def __init__(self, panel: 'ConversationPanel') -> None:
        super().__init__(panel)
        self.panel = panel
        self.sent: tuple['AIProviderPlugin', RecapJob] | None = None  # the recap whose answer is coming
        self.progressed.connect(self.show_progress)
        panel.answered.connect(self.on_answered)

    def start(self, since: float | None = None, since_cfi: str = '') -> bool:
        """The story so far up to the reader's place; with since (an earlier place, a fraction of the
        book) or since_cfi (one as the viewer gives it), what was read since it; an earlier place
        not before the reader's (last_read.since_place) gives the story so far. False when nothing
        could start (the panel says why)."""
        panel, grounding = self.panel, self.panel.grounding
        if grounding is None or panel.streaming:
            return False
        ready = panel.ready_provider()
        if ready is None:
            return False
        provider: 'AIProviderPlugin' = ready
        found: 'Grounding' = grounding  # not None, in the closure too
        source = grounding.source
        token = panel.start_waiting(_('Reading the text of the book…') if source.loaded is None else '')

        def loaded(text: 'BookText | None', error: str) -> None:
            if not panel.waiting_for(token):
                return
            if text is None:
                panel.stop_waiting(token)
                return panel.show_notice(error + ' ' + _('Nothing was sent.'))
            position = found.position(text)
            if position is None:
                panel.stop_waiting(token)
                return panel.say_no_place()
            earlier = since
            if since_cfi:
                offset = text.book.offset_of_cfi(since_cfi)
                earlier = since_place(None if offset is None else text.book.fraction(offset), position)
            if earlier is not None and earlier >= position:
                panel.stop_waiting(token)
                return panel.show_notice(_('You have not read further since then: there is nothing new to recap.'))
            read, at = text, position  # not None, in the closure too
            self.plan(provider, lambda cancel: (self.book_job(provider, read, at, earlier), []), token)
        source.load(loaded)
        return True

    def start_series(self, db_of: 'Callable[[], Cache]', book_id: int) -> bool:
        """Previously in the series of book_id (a book of the library db_of() opens, in the thread):
        its earlier books the library holds, as the command line's recap --series makes it
        (conversation.recap.series_job). False when nothing could start (the panel says why)."""
        panel = self.panel
        if panel.streaming:
            return False
        ready = panel.ready_provider()
        if ready is None:
            return False
        provider: 'AIProviderPlugin' = ready
        title = panel.conv.books[0].title if panel.conv.books else ''
        token = panel.start_waiting(_('Reading the earlier books of the series…'))
        self.plan(provider, lambda cancel: series_job(provider, panel.conv, db_of(), book_id, title), token)
        return True

    def book_job(self, provider: 'AIProviderPlugin', text: 'BookText', position: float,
                 since: float | None) -> RecapJob:
        book = self.panel.conv.books[0] if self.panel.conv.books else None
        about = (f'{book.title} by {book.authors_text}' if book.authors else book.title) if book else ''
        return RecapJob(provider, self.panel.conv, [book_source(BookKey(text.library_id, text.book_id, text.fmt),
                                                                text.book, position, about)],
                        'since' if since is not None else 'story',
                        read_until(text.book, since) if since is not None else 0)

    def plan(self, provider: 'AIProviderPlugin', make: 'Callable[[CancelToken], tuple[RecapJob, list[str]]]',
             token: object) -> None:
        """make(cancel) the job (and what it left out, in words) and plan it in a thread; then its
        notices, what will be sent, the reader's consent, the summaries."""
        panel = self.panel
        panel.loading_cancel = cancel = CancelToken()

        def work() -> tuple[RecapJob, list[str], str]:
            job, left_out = make(cancel)
            job.prepare(cancel)
            return job, left_out, job.described()

        def planned(result: tuple[RecapJob, list[str], str] | None, exc: BaseException | None) -> None:
            if exc is not None or result is None:
                panel.stop_waiting(token)
                if exc is not None and not isinstance(exc, Cancelled):  # NoRecap, ProviderError...: in words
                    panel.show_notice(str(exc))
                return None
            job, left_out, described = result
            for notice in (*left_out, *job.ready_plan().notices):
                panel.show_notice(notice)
            if needs_consent(provider, job.consent_keys) and not self.consented(provider, job, described):
                panel.stop_waiting(token)
                return panel.show_notice(_('Nothing was sent.'))
            panel.show_notice(described)
            self.summarize(provider, job, cancel, token)
        run_while(lambda: panel.waiting_for(token), work, planned, self)

    def consented(self, provider: 'AIProviderPlugin', job: RecapJob, described: str) -> bool:
        """The reader's yes to sending the book's text to provider, not on this computer; with
        "Don't ask again for this book" kept."""
        series = job.kind == 'series'
        box = QMessageBox(QMessageBox.Icon.Question, _('Previously in the series') if series else _(
            'The story so far'), (_('The recap sends the text of the earlier books of the series, or summaries of '
                                    'them, to {provider}.') if series else _(
            'The recap sends the text of the book you have read, or summaries of it, to {provider}.')).format(
            provider=provider.display_name), QMessageBox.StandardButton.Cancel, self.panel)
        box.setInformativeText(described)
        send = box.addButton(_('&Send'), QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(send)
        dont_ask = QCheckBox(_('Don\'t ask again for this book'), box)
        box.setCheckBox(dont_ask)
        box.exec()
        if box.clickedButton() is not send:
            return False
        if dont_ask.isChecked():
            remember_consent(provider, job.consent_keys)
        return True

    def summarize(self, provider: 'AIProviderPlugin', job: RecapJob, cancel: CancelToken, token: object) -> None:
        panel = self.panel

        progress = emitter(self.progressed)  # in the thread: only emits

        def work() -> SummaryRun:
            return job.summarize(cancel, progress)

        def summarized(run: SummaryRun | None, exc: BaseException | None) -> None:
            panel.loading_cancel = None
            panel.stop_waiting(token)  # the status line is the panel's again
            if isinstance(exc, Cancelled):
                return panel.show_notice(_('Stopped: the summaries made so far are kept.'))
            if exc is not None or run is None:
                return panel.show_notice(str(exc))
            for notice in run.notices:
                panel.show_notice(notice)
            if run.error is not None:
                return panel.show_notice(str(run.error))
            self.sent = (provider, job)
            if not panel.send(provider, job.question()):
                self.sent = None
        run_while(lambda: panel.waiting_for(token), work, summarized, self)

    def on_answered(self, answer: Answer) -> None:
        """A model that read less than it says it can ("context too long") gets the recap again with
        less (RecapJob.fall_back(): summaries, or fewer of them), as the command line does."""
        sent, self.sent = self.sent, None
        if sent is None or answer.failed is None or not isinstance(answer.failed.error, ContextTooLong):
            return
        provider, job = sent
        said = job.fall_back()
        if not said:
            return
        self.panel.show_notice(said)
        token = self.panel.start_waiting()
        self.panel.loading_cancel = cancel = CancelToken()
        self.summarize(provider, job, cancel, token)

    def show_progress(self, done: int, total: int, chapter: str) -> None:
        if chapter and self.panel.loading is not None:
            self.panel.status.setText(_('Summarizing {chapter} ({done} of {total})…').format(
                chapter=chapter, done=done + 1, total=total))
