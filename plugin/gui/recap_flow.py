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
"""

from typing import TYPE_CHECKING

from qt.core import QCheckBox, QMessageBox, QObject, pyqtSignal

from calibre_plugins.bookai.conversation.recap import RecapJob, book_source, needs_consent, remember_consent
from calibre_plugins.bookai.conversation.summaries import BookKey, SummaryRun
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ContextTooLong
from calibre_plugins.bookai.core.messages import Answer
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.gui.worker import run_in_thread

if TYPE_CHECKING:
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

    def start(self, since: float | None = None) -> bool:
        """The story so far up to the reader's place; with since (an earlier place, a fraction of the
        book), what was read since it. False when nothing could start (the panel says why)."""
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
            if since is not None and since >= position:
                panel.stop_waiting(token)
                return panel.show_notice(_('You have not read further since then: there is nothing new to recap.'))
            self.plan(provider, text, position, since, token)
        source.load(loaded)
        return True

    def plan(self, provider: 'AIProviderPlugin', text: 'BookText', position: float, since: float | None,
             token: object) -> None:
        panel = self.panel
        book = panel.conv.books[0] if panel.conv.books else None
        about = (f'{book.title} by {book.authors_text}' if book.authors else book.title) if book else ''
        job = RecapJob(provider, panel.conv, [book_source(BookKey(text.library_id, text.book_id, text.fmt),
                                                          text.book, position, about)],
                       'since' if since is not None else 'story',
                       read_until(text.book, since) if since is not None else 0)
        panel.loading_cancel = cancel = CancelToken()

        def work() -> str:
            job.prepare(cancel)
            return job.described()

        def planned(described: str | None, exc: BaseException | None) -> None:
            if not panel.waiting_for(token):
                return
            if exc is not None or described is None:
                panel.stop_waiting(token)
                if exc is not None and not isinstance(exc, Cancelled):  # NoRecap, ProviderError...: in words
                    panel.show_notice(str(exc))
                return None
            for notice in job.ready_plan().notices:
                panel.show_notice(notice)
            if needs_consent(provider, job.consent_keys) and not self.consented(provider, job, described):
                panel.stop_waiting(token)
                return panel.show_notice(_('Nothing was sent.'))
            panel.show_notice(described)
            self.summarize(provider, job, cancel, token)
        run_in_thread(work, planned, self)

    def consented(self, provider: 'AIProviderPlugin', job: RecapJob, described: str) -> bool:
        """The reader's yes to sending the book's text to provider, not on this computer; with
        "Don't ask again for this book" kept."""
        box = QMessageBox(QMessageBox.Icon.Question, _('The story so far'), _(
            'The recap sends the text of the book you have read, or summaries of it, to {provider}.').format(
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

        def work() -> SummaryRun:
            return job.summarize(cancel, lambda done, total, chapter: self.progressed.emit(done, total, chapter))

        def summarized(run: SummaryRun | None, exc: BaseException | None) -> None:
            if not panel.waiting_for(token):
                return
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
        run_in_thread(work, summarized, self)

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
