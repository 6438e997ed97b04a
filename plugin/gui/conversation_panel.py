# License: GPLv3 Copyright: the Book AI developers
"""The conversation part shared by the library's discussion window and the viewer's
panel: the chat, the question box (Enter sends, Shift+Enter starts a new line),
Send/Stop, Retry, New chat, Copy all, Save, What will be sent, Settings, and the
line naming provider, model, tokens and cost. Under the chat, calibre's notice that
AI answers can be inaccurate, shown as calibre 9.x shows it: once there is an answer,
and not while one is coming.

A question is sent from a worker thread (gui.worker) and its answer streams back
into the chat. Stop cancels it; an error is shown in words inside the
conversation, nothing said before is lost, and Retry asks again. Every finished
turn is kept by the keep given (the History). closing() stops an answer that is still
coming and keeps what came.

With a Grounding (gui.passages), the panel has a "Book text" row: passages of the
book go with each question as the reader chose, read first when needed (which can
take a moment, and can be stopped), shown for consent before they go to an online
provider; the answer's [n] citations are links to those passages. What goes with
a question is built by conversation.question; the panel reads the book, waits,
asks, and shows.

When the model looks things up while it answers (conversation/lookups.py), each lookup comes as a
LookedUp between the answer's chunks: its line shows under the answer as it comes, and its passages
are cited as the question's are. lookups_sentence() says whether a question's answer may look
things up, for What will be sent and the reader's consent.
"""

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QApplication, QCloseEvent, QDialog, QFont, QHBoxLayout, QKeyEvent, QLabel, QPalette, QPlainTextEdit, QPushButton,
    QSizePolicy, Qt, QVBoxLayout, QWidget, pyqtSignal,
)

from calibre_plugins.bookai.conversation.conversation import Conversation, usage_text
from calibre_plugins.bookai.conversation.exchange import Exchange, lookup_toolbox, most_lookups
from calibre_plugins.bookai.conversation.lookup_sources import kept_for_lookups
from calibre_plugins.bookai.conversation.lookups import LookedUp, Lookup, LookupNotice
from calibre_plugins.bookai.conversation.notes import conversation_markdown
from calibre_plugins.bookai.conversation.question import (
    MEANING_FAILED, SO_FAR_SCOPES, Question, Room, book_question, book_text_room, by_meaning, embedder, meaning,
)
from calibre_plugins.bookai.conversation.recap import SoFarSummaries
from calibre_plugins.bookai.conversation.summaries import BookKey
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Answer, Chunk, ReasoningDelta, TextDelta
from calibre_plugins.bookai.grounding import book_tools
from calibre_plugins.bookai.grounding.book_tools import Kept
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex
from calibre_plugins.bookai.grounding.scopes import Excerpt, NoPlace, Place, check_place
from calibre_plugins.bookai.gui.book_text import BookText
from calibre_plugins.bookai.gui.chat import ChatView, citing, link, sent_note
from calibre_plugins.bookai.gui.lookups import cited_place, passage_text
from calibre_plugins.bookai.gui.passages import (
    SO_FAR_CONSENT, CitationDialog, Grounding, ScopeRow, needs_consent, remember_consent, scope_label,
)
from calibre_plugins.bookai.gui.preview import PreviewDialog, needs_confirmation
from calibre_plugins.bookai.gui.worker import run_in_thread, stream_in_thread
from calibre_plugins.bookai.providers.registry import PROVIDERS, chosen_provider, get_provider
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


class QuestionBox(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = pyqtSignal()

    def keyPressEvent(self, ev: QKeyEvent) -> None:
        if ev.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                ev.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            ev.accept()
            self.submitted.emit()
            return
        super().keyPressEvent(ev)


class ConversationPanel(QWidget):
    """conversation: a conversation.Conversation. The owner supplies:
    keep(conversation), to keep it after each turn; save(turn_index or None), for the Save
    links and button (None: no saving); settings(), to open the settings; intro(), the
    HTML shown above an empty conversation; prepare(question), what a typed question
    becomes before it is sent; grounding (gui.passages.Grounding), for a window about
    one book whose text can be sent; and select_book(book id), what a link to a book an answer
    about what to read next suggested does (None: such links do nothing)."""

    state_changed = pyqtSignal(bool)  # streaming
    answered = pyqtSignal(object)  # an answer ended (its Answer: done, stopped or failed)

    def __init__(self, conversation: Conversation, keep: Callable[[Conversation], None] | None = None,
                 save: Callable[[int | None], None] | None = None, save_text: str = '',
                 settings: Callable[[], None] | None = None, intro: Callable[[], str] | None = None,
                 placeholder: str = '', prepare: Callable[[str], str] | None = None,
                 grounding: Grounding | None = None, parent: QWidget | None = None,
                 select_book: Callable[[int], None] | None = None) -> None:
        super().__init__(parent)
        self.conv = conversation
        self.select_book = select_book
        self.keep_conversation, self.save, self.open_settings, self.intro = keep, save, settings, intro
        self.prepare, self.grounding = prepare, grounding
        self.exchange: Exchange | None = None  # the question whose answer is coming
        self.live_lookups: list[Lookup] = []  # what the model looked up so far for the answer that is coming
        self.loading: object | None = None  # the token of the wait before a question is sent (start_waiting)
        self.loading_cancel: CancelToken | None = None  # Stop for the passages being embedded
        self.closed = False
        self.setup_ui(save_text, placeholder)

    def setup_ui(self, save_text: str, placeholder: str) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.chat = ChatView(self)
        self.chat.link_activated.connect(self.on_link)
        self.chat.citation_activated.connect(self.show_citation)
        self.chat.book_activated.connect(self.show_suggested)
        self.chat.save_text = save_text if self.save is not None else ''
        layout.addWidget(self.chat, 1)
        self.accuracy_notice = n = QLabel(_('AI generated answers can be inaccurate, please verify any answers before '
                                            'acting on them.'), self)
        n.setWordWrap(True)
        n.setTextFormat(Qt.TextFormat.PlainText)
        n.setMargin(2)
        font = QFont(n.font())
        font.setItalic(True)
        n.setFont(font)
        n.setBackgroundRole(QPalette.ColorRole.Base)  # as calibre's: on the chat's own background
        n.setAutoFillBackground(True)
        n.setVisible(False)
        layout.addWidget(n)
        self.scope_row = None
        if self.grounding is not None:
            self.scope_row = ScopeRow(self.grounding, self)
            self.scope_row.changed.connect(self.update_state)
            layout.addWidget(self.scope_row)

        row = QHBoxLayout()
        self.question = QuestionBox(self)
        self.question.setPlaceholderText(placeholder or _('Ask a question (Enter sends, Shift+Enter starts a new '
                                                          'line)'))
        self.question.setTabChangesFocus(True)
        self.question.setMaximumHeight(self.question.fontMetrics().lineSpacing() * 4 + 12)
        self.question.submitted.connect(self.send_question)
        row.addWidget(self.question, 1)
        self.send_button = QPushButton(_('&Send'), self)
        self.send_button.clicked.connect(self.send_or_stop)
        self.send_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        row.addWidget(self.send_button)
        layout.addLayout(row)

        self.bar = bar = QHBoxLayout()
        self.retry_button = self.button(_('&Retry'), self.retry, _('Ask the question that failed again'))
        self.new_button = self.button(_('&New chat'), self.new_chat, _('Start again'))
        self.copy_button = self.button(_('&Copy all'), self.copy_all, _('Copy the whole conversation'))
        self.save_button = self.button(save_text, lambda: self.save(None) if self.save is not None else None,
                                       _('Save the whole conversation'))  # shown only with save
        self.save_button.setVisible(self.save is not None)
        self.recap_button = None
        if self.grounding is not None:  # the story so far (gui/recap_flow.py)
            from calibre_plugins.bookai.gui.recap_flow import RecapFlow
            self.recap = RecapFlow(self)
            self.recap_button = self.button(_('Story so &far'), lambda: self.recap.start(),
                                            _('A recap of the book up to where you are, citing its passages'))
        self.series_button: QPushButton | None = None  # offer_series()
        self.series_problem = ''  # why there is no "Previously in the series", in words
        self.preview_button = self.button(_('&What will be sent'), self.show_preview,
                                          _('The exact messages the next question sends, and where'))
        self.settings_button = self.button(_('Se&ttings'), self.show_settings)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)

    def offer_series(self, db_of: 'Callable[[], Cache]', book_id: int, series: str, count: int | None,
                     place: 'Callable[[QPushButton], object] | None' = None) -> None:
        """"Previously in the series" beside Story so far (or where place(button) puts it), for book_id
        of the library db_of() opens (in a thread, when the reader asks), in series, after count books
        of it the library holds (None: not known until asked): disabled, its tooltip saying why, for a
        book in no series or the first."""
        if self.recap_button is None or self.series_button is not None:
            return
        b = self.series_button = QPushButton(_('Prev&iously in the series'), self)
        b.setAutoDefault(False)
        b.clicked.connect(lambda: self.recap.start_series(db_of, book_id))
        if place is None:
            self.bar.insertWidget(self.bar.indexOf(self.recap_button) + 1, b)
        else:
            place(b)
        if not series:
            self.series_problem = _('This book is not in a series.')
        elif count == 0:
            self.series_problem = _('The library holds no earlier book of the series {series}.').format(series=series)
        b.setToolTip(self.series_problem or _('A recap of the earlier books of {series} that the library holds, '
                                              'citing their passages').format(series=series))
        self.update_state()

    def button(self, text: str, slot: Callable[[], object], tip: str = '') -> QPushButton:
        b = QPushButton(text, self)
        b.clicked.connect(slot)
        b.setAutoDefault(False)
        if tip:
            b.setToolTip(tip)
        self.bar.addWidget(b)
        return b

    # what is shown {{{

    @property
    def provider(self) -> 'AIProviderPlugin | None':
        """The provider of this conversation: the one it is pinned to, else the chosen one."""
        if self.conv.provider in PROVIDERS:
            return get_provider(self.conv.provider)
        return chosen_provider()

    @property
    def streaming(self) -> bool:
        """An answer is coming, or the book's text is being read for a question."""
        return self.cancel is not None or self.loading is not None

    @property
    def scope(self) -> str:
        return self.scope_row.scope if self.scope_row is not None else 'metadata'

    def assistant(self, provider: 'AIProviderPlugin | None' = None) -> str:
        return self.conv.model or (provider.display_name if provider else _('Assistant'))

    def provider_problem(self, provider: 'AIProviderPlugin | None') -> str:
        return _('No AI provider is chosen yet.') if provider is None else provider.config.missing_setup()

    def intro_html(self) -> str:
        provider = self.provider
        problem = self.provider_problem(provider)
        if problem:
            return (f'<p>{escape(problem)} ' + escape(_('Nothing is sent anywhere until you set one up.')) + ' ' +
                    link('settings/0', _('Open the settings')) + '</p>')
        if self.conv.turns or self.intro is None:
            return ''
        return self.intro()

    def show_conversation(self) -> None:
        self.chat.show_conversation(self.conv.turns, self.assistant(self.provider), self.intro_html())
        self.update_state()

    def set_conversation(self, conversation: Conversation) -> None:
        """Show another conversation (New chat, a new selection); one still streaming is stopped and kept."""
        self.closing()
        self.closed = False
        self.conv = conversation
        self.chat.reasoning_shown.clear()
        self.show_conversation()

    def update_state(self) -> None:
        streaming = self.streaming
        self.send_button.setText(_('&Stop') if streaming else _('&Send'))
        self.send_button.setToolTip(_('Stop the answer') if streaming else _('Send the question (Enter)'))
        self.retry_button.setVisible(not streaming and bool(self.conv.retry_question()))
        has_answers = any(t.answer for t in self.conv.turns)
        self.copy_button.setEnabled(bool(self.conv.turns))
        self.save_button.setEnabled(not streaming and has_answers)
        self.new_button.setEnabled(bool(self.conv.turns) or streaming)
        self.accuracy_notice.setVisible(has_answers and not streaming)
        if self.recap_button is not None:
            self.recap_button.setEnabled(not streaming)
        if self.series_button is not None:
            self.series_button.setEnabled(not streaming and not self.series_problem)
        provider = self.provider
        parts = []
        if provider is not None:
            parts.append(provider.display_name)
            parts.append(self.conv.model or provider.config.option('model') or _('model chosen automatically'))
            usage = usage_text(self.conv.total_usage(), provider.connection.is_local)
            if usage:
                parts.append(usage)
        self.status.setText(' · '.join(parts))
        if self.scope_row is not None:
            self.scope_row.show_destination(provider)
            self.scope_row.setEnabled(not streaming)
        self.state_changed.emit(streaming)

    def show_notice(self, text: str) -> None:
        self.chat.append_html(f'<p><i>{escape(text)}</i></p>')
        self.chat.scroll_to_bottom()

    # }}}

    # asking {{{

    def send_or_stop(self) -> None:
        if self.streaming:
            self.stop()
        else:
            self.send_question()

    def send_question(self) -> None:
        if self.streaming:
            return
        typed = self.question.toPlainText().strip()
        if typed:
            self.question.clear()
            self.ask(self.prepare(typed) if self.prepare else typed, typed)

    def ready_provider(self, typed: str = '') -> 'AIProviderPlugin | None':
        """The provider to ask, or None (said why; a typed question goes back in the box) when an
        answer is coming already or no provider is set up."""
        if self.streaming:
            return None
        provider = self.provider
        problem = self.provider_problem(provider)
        if problem:
            self.show_notice(problem + ' ' + _('Nothing was sent. Set up a provider in the settings.'))
            self.give_back(typed)
            return None
        return provider

    def give_back(self, typed: str) -> None:
        """A typed question that was not sent goes back into the (empty) box."""
        if typed and not self.question.toPlainText().strip():
            self.question.setPlainText(typed)

    def ask(self, question: str, typed: str = '') -> bool:
        """Send question (with the book's text as the Book text row says); False if it was not
        sent. typed: the text typed for it, put back in the box when it is not sent."""
        ready = self.ready_provider(typed)
        if ready is None:
            return False
        provider = ready  # not None, in the closures too
        if self.scope == 'metadata':
            return self.send(provider, Question(question), typed)
        assert self.grounding is not None  # a scope other than metadata comes from its Book text row
        grounding = self.grounding  # not None, in the closures too
        scope, source = self.scope, grounding.source
        token = self.start_waiting(_('Reading the text of the book…') if source.loaded is None else '')

        def loaded(text: BookText | None, error: str) -> None:
            if not self.waiting_for(token):
                return  # stopped, or the window closed, while the book was read
            if text is None:
                self.stop_waiting(token)
                self.show_notice(error + ' ' + _('Nothing was sent.'))
                return self.give_back(typed)
            if self.place_unknown(text, scope):  # nothing goes, not even to be embedded
                self.stop_waiting(token)
                return self.give_back(typed)
            read = text  # not None, in the lambda too
            if scope == 'so-far':  # the summaries kept, for when the text read does not fit: read with the room
                summaries.append(SoFarSummaries(provider, BookKey(text.library_id, text.book_id, text.fmt)))
            self.learn_room(provider, question, scope, token, lambda room, kept: roomed(read, room, kept),
                            summaries[0] if summaries else None,  # still waiting
                            self.lookup_sources(provider, read, self.position(read, scope), grounding.key))

        summaries: list[SoFarSummaries] = []  # for scope "so-far": the book's, once its text is read

        def roomed(text: BookText, room: Room | None, kept: Kept | None) -> None:
            if by_meaning(provider, scope):  # still waiting: for the embeddings
                return self.rank_by_meaning(provider, text, question, token,
                                            lambda *meaning: chosen(text, room, kept, *meaning))
            self.stop_waiting(token)
            chosen(text, room, kept)

        def chosen(text: BookText, room: Room | None, kept: Kept | None, embedding_index: EmbeddingIndex | None = None,
                   question_vector: list[float] | None = None) -> None:
            if not text.skipped_told and (note := text.book.skipped_note()):
                text.skipped_told = True
                self.show_notice(note)
            selection = grounding.selection() if grounding.selection else ''
            position = self.position(text, scope)
            try:
                q = book_question(question, scope, text.book, text.index, position, selection,
                                  embedding_index=embedding_index, question_vector=question_vector, room=room,
                                  summaries=summaries[0] if summaries else None, kept=kept,
                                  embed=embedder(provider, embedding_index))
            except NoPlace:
                self.say_no_place()
                return self.give_back(typed)
            self.send(provider, q, typed)
        source.load(loaded)
        return True

    def lookup_sources(self, provider: 'AIProviderPlugin', text: BookText, position: float | None,
                       book_key: str) -> Callable[[], Kept | None]:
        """What reads the summaries and X-Ray kept for the book and the model that answers, for its
        lookups: made here, on the GUI thread, and called in learn_room's thread (it reads files),
        reading them only when the model may look things up."""
        model = self.conv.model or provider.config.option('model') or ''
        language = self.conv.language
        if not plugin_prefs()['lookups'] or not model or position is None:
            return lambda: None
        place = position  # not None, in the closure too
        key = BookKey(text.library_id, text.book_id, text.fmt)

        def read() -> Kept | None:
            try:
                if not provider.takes_tools(model):
                    return None
            except Exception:  # as lookup_toolbox() takes it
                return None
            return kept_for_lookups(provider, model, text.book, place, key, book_key, language)
        return read

    def start_waiting(self, notice: str = '') -> object:
        """A question waits for work before it is sent (the book read, passages found): Send
        becomes Stop until stop_waiting(). Returns the token of this wait."""
        self.loading = token = object()
        if notice:
            self.show_notice(notice)
        self.update_state()
        return token

    def waiting_for(self, token: object) -> bool:
        """Whether the work of that wait still matters: not stopped, the window not closed."""
        return self.loading is token and not self.closed

    def stop_waiting(self, token: object) -> bool:
        """The wait is over; False when its work no longer matters."""
        if not self.waiting_for(token):
            return False
        self.loading = None
        self.update_state()
        return True

    def learn_room(self, provider: 'AIProviderPlugin', question: str, scope: str, token: object,
                   then: Callable[['Room | None', Kept | None], None], summaries: SoFarSummaries | None = None,
                   kept: Callable[[], Kept | None] = lambda: None) -> None:
        """What the model has room for in this conversation (book_text_room(), in a thread: it may
        ask the service), then then(room, what kept() read); room None, as unknown, when that
        fails. summaries: the book's chapter summaries, read in the same thread when the text read
        is more than the room; kept: what reads the files its lookups use (lookup_sources())."""
        self.loading_cancel = cancel = CancelToken()
        conv = self.conv

        def work() -> 'tuple[Room | None, Kept | None]':
            try:
                found = kept()
            except Exception:  # a file that cannot be read is none; its own reader set it aside
                found = None
            try:
                room = book_text_room(provider, conv, question, cancel=cancel, scope=scope)
            except Exception:  # unknown: the text goes as if the window had room
                return None, found
            if summaries is not None and room is not None and room.tokens > 0:
                summaries.load()  # a file: not on the GUI thread
            return room, found

        def done(result: 'tuple[Room | None, Kept | None] | None', exc: BaseException | None) -> None:
            if not self.waiting_for(token):
                return
            self.loading_cancel = None
            then(*(result if exc is None and result is not None else (None, None)))
        run_in_thread(work, done, self)

    def rank_by_meaning(self, provider: 'AIProviderPlugin', text: BookText, question: str, token: object,
                        then: Callable[..., None]) -> None:
        """The book's passages and the question embedded by provider (in a thread; the passages
        once a book), then then(embedding_index, question_vector); by words alone if that fails."""
        self.loading_cancel = cancel = CancelToken()
        kept = text.meaning

        def work() -> tuple[EmbeddingIndex, list[float]]:
            return meaning(provider, text.index, question, kept, cancel)

        def done(result: tuple[EmbeddingIndex, list[float]] | None, exc: BaseException | None) -> None:
            if not self.stop_waiting(token):
                return
            self.loading_cancel = None
            if exc is not None:
                self.show_notice(MEANING_FAILED.format(error=exc))
                return then()
            assert result is not None  # no exception: what work returned
            text.meaning = result[0]
            then(*result)
        run_in_thread(work, done, self)

    def position(self, text: BookText, scope: str) -> float | None:
        """The reader's place in the book, for a scope that keeps to it (None for the whole book)."""
        if scope == 'book':
            return None
        assert self.grounding is not None  # a scope other than metadata comes from its Book text row
        return self.grounding.position(text)

    def place_unknown(self, text: BookText, scope: str) -> bool:
        """Whether scope keeps to the reader's place and none is known (said so), by the rule of
        grounding.scopes, before any work for the passages."""
        try:
            check_place(scope, self.position(text, scope))
        except NoPlace:
            self.say_no_place()
            return True
        return False

    def say_no_place(self) -> None:
        self.show_notice(_('Book AI does not know where you are in this book, so it cannot keep to what you '
                           'have read. Open the book in calibre\'s E-book viewer: your place is saved when you '
                           'close it. Or choose "{scope}". Nothing was sent.').format(scope=scope_label('book')))

    def send(self, provider: 'AIProviderPlugin', question: Question, typed: str = '') -> bool:
        """Tell the reader question's notices, confirm (as the settings say, and before book text
        goes online), then stream the answer."""
        for notice in question.notices:
            self.show_notice(notice)
        lookups, most = self.lookups_sentence(provider, question)
        consent = bool(question.passages or lookups) and needs_consent(self.consent_books(question), provider)
        if consent or needs_confirmation(provider, self.conv):
            model = self.conv.model or provider.config.option('model')
            d = PreviewDialog(provider, model, question.messages(self.conv), confirm=True,
                              passages=len(question.places) if consent else 0, lookups=lookups if consent else '',
                              most_lookups=most, parent=self)
            if d.exec() != QDialog.DialogCode.Accepted:
                self.give_back(typed)
                return False
            if consent and d.dont_ask is not None and d.dont_ask.isChecked():
                remember_consent(self.consent_books(question), provider)
        self.exchange = exchange = Exchange(self.conv, provider, question)
        self.live_lookups = live = list[Lookup]()
        if exchange.replaces_failed:  # a failed turn is asked again: it goes away
            self.chat.show_conversation(self.conv.turns[:-1], self.assistant(provider), self.intro_html())
        answering = _('{assistant} is answering…').format(assistant=self.assistant(provider))
        self.chat.begin_answer(question.text, answering, citing(exchange.index, exchange.turn, lambda: live),
                               sent_note(exchange.turn), exchange.index)
        stream_in_thread(exchange.chunks, exchange.cancel, self.on_chunk)
        self.update_state()
        return True

    @property
    def cancel(self) -> CancelToken | None:
        """Stop for the answer that is coming, if one is."""
        return self.exchange.cancel if self.exchange is not None else None

    @property
    def answer(self) -> Answer | None:
        """What came of the answer that is coming, if one is."""
        return self.exchange.answer if self.exchange is not None else None

    def lookups_sentence(self, provider: 'AIProviderPlugin', question: Question) -> tuple[str, int]:
        """Whether the answer to question may look things up: what the model can see through its
        tools, in a sentence (Toolbox.description()), and how many lookups at most; ('', 0) when it
        looks nothing up. For What will be sent and the reader's consent."""
        toolbox = lookup_toolbox(provider, question, self.conv.model)
        return (toolbox.description(), most_lookups()) if toolbox is not None else ('', 0)

    def preview_lookups(self, provider: 'AIProviderPlugin', model: str) -> tuple[str, int]:
        """lookups_sentence() for What will be sent before a question is asked: the book's tools, as the
        question's would be, in every scope with book text."""
        if self.scope == 'metadata' or not plugin_prefs()['lookups']:
            return '', 0
        try:
            takes = provider.takes_tools(model or '')
        except Exception:  # as lookup_toolbox() takes it
            takes = False
        return (book_tools.description(self.scope != 'book'), most_lookups()) if takes else ('', 0)

    def on_chunk(self, chunk: 'Chunk | LookedUp | LookupNotice', cancel: CancelToken) -> None:
        exchange = self.exchange
        if self.closed or exchange is None or cancel is not exchange.cancel:
            return  # closed, or an answer stopped by a new conversation: it is no longer shown
        if isinstance(chunk, LookedUp):  # Exchange.take keeps it with the turn, below
            self.live_lookups.append(chunk.lookup)
            self.chat.add_lookup(chunk.lookup)
        elif isinstance(chunk, LookupNotice):
            self.show_notice(chunk.text)
        if exchange.take(chunk):
            self.finish_answer()
        elif isinstance(chunk, TextDelta):
            self.chat.add_text(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self.chat.add_reasoning(chunk.text)

    def finish_answer(self) -> None:
        exchange, self.exchange = self.exchange, None
        assert exchange is not None  # called only while an answer is coming
        not_kept = exchange.finish(self.keep_conversation)
        self.chat.end_answer(exchange.index, exchange.turn, self.assistant(exchange.provider))
        if not_kept:
            self.show_notice(not_kept)
        self.update_state()
        self.answered.emit(exchange.answer)

    def stop(self) -> None:
        if self.loading is not None:  # the book's text was being read for a question: not sent
            self.loading = None
            self.cancel_loading()
            self.show_notice(_('Stopped. Nothing was sent.'))
            self.update_state()
        if self.cancel is not None:
            self.cancel.cancel()  # the stream ends with a cancelled Done, which finishes the turn

    def books_key(self) -> str:
        """Which book(s) the passages sent are from, for the reader's consent."""
        return self.grounding.key if self.grounding is not None else f'{self.conv.library_id}:library'

    def consent_books(self, question: Question) -> str:
        """What the reader's consent to send question's book text is kept for: the book(s), and
        for everything read so far, a large send, a consent of its own (SO_FAR_CONSENT)."""
        so_far = isinstance(question.excerpt, Excerpt) and question.excerpt.scope in SO_FAR_SCOPES
        return self.books_key() + (SO_FAR_CONSENT if so_far else '')

    def cancel_loading(self) -> None:
        if self.grounding is not None:
            self.grounding.source.cancel()
        if self.loading_cancel is not None:
            self.loading_cancel.cancel()
            self.loading_cancel = None

    def retry(self) -> None:
        question = self.conv.retry_question()
        if question and self.conv.turns[-1].suggested:  # what to read next: the same books offered
            self.ask_suggestions(Question(question, suggested=self.conv.turns[-1].suggested))
        elif question:
            self.ask(question)

    def closing(self) -> None:
        """Stop an answer that is streaming; what came of it is kept as a stopped turn."""
        if self.loading is not None:
            self.loading = None
            self.cancel_loading()
        if self.exchange is not None:
            self.exchange.stopped_here()
            self.finish_answer()
        self.closed = True

    # }}}

    # the rest {{{

    def on_link(self, what: str, index: int) -> None:
        turns = self.conv.turns
        if what == 'settings':
            return self.show_settings()
        if what == 'retry':
            return self.retry()
        if not 0 <= index < len(turns):
            return
        if what == 'copy':
            QApplication.clipboard().setText(turns[index].answer)
        elif what in ('reasoning', 'lookups'):
            (self.chat.toggle_reasoning if what == 'reasoning' else self.chat.toggle_lookups)(index)
            if not self.streaming:
                self.chat.show_conversation(turns, self.assistant(self.provider), self.intro_html())
        elif what == 'save' and self.save is not None:
            self.save(index)

    def show_citation(self, index: int, number: int) -> None:
        """A citation was clicked: go to that place of the book, or show the passage."""
        turns = self.conv.turns
        if not 0 <= index < len(turns):
            return
        live = self.live_lookups if self.exchange is not None and index == self.exchange.index else ()
        place = cited_place(turns[index], number, live)  # sent with the question, or found by a lookup
        if place is None:
            return
        g = self.grounding
        if g is not None and g.go_to is not None and g.jumps:
            return g.go_to(place)
        text = passage_text(turns[index], number, live)
        CitationDialog(number, place, text, self.go_to_for(place), self).exec()

    def show_suggested(self, index: int, number: int) -> None:
        """A book an answer suggested was clicked: the book its turn offered as that number, selected."""
        turns = self.conv.turns
        if self.select_book is None or not 0 <= index < len(turns):
            return
        offered = turns[index].suggested
        if 0 < number <= len(offered):
            self.select_book(offered[number - 1][0])

    def ask_suggestions(self, question: Question) -> bool:
        """Send a question about what to read next from the library (its books offered in
        question.suggested), as it is: with the books' details only. False if it was not sent."""
        provider = self.ready_provider()
        return provider is not None and self.send(provider, question)

    def go_to_for(self, place: Place) -> Callable[[Place], None] | None:
        """How to show a place cited in the E-book viewer, or None."""
        return self.grounding.go_to if self.grounding is not None else None

    def copy_all(self) -> None:
        QApplication.clipboard().setText(conversation_markdown(self.conv.turns, self.assistant(self.provider)))

    def new_chat(self) -> None:
        c = self.conv
        self.set_conversation(Conversation(c.books, c.library_id, language=c.language, selection=c.selection))

    def show_preview(self) -> None:
        provider = self.provider
        if provider is None:
            return self.show_notice(_('No AI provider is chosen yet.') + ' ' + _(
                'Nothing is sent anywhere until you set one up.'))
        question = self.question.toPlainText().strip() or _('(your question)')
        model = self.conv.model or provider.config.option('model')
        messages = Question(question).messages(self.conv)
        if self.scope != 'metadata':
            self.show_notice(_('Passages of the book are chosen for each question when it is sent, and shown '
                               'for you to confirm before they go to a provider that is not on this computer.'))
        lookups, most = self.preview_lookups(provider, model)
        PreviewDialog(provider, model, messages, parent=self, lookups=lookups, most_lookups=most).exec()

    def show_settings(self) -> None:
        if self.open_settings is not None:
            self.open_settings()
            self.chat.apply_text_size()  # the chat's text size, as the settings say now
        if not self.streaming and not self.closed:
            self.show_conversation()

    # }}}


class PanelDialog(QDialog):
    """A window around a ConversationPanel (self.panel): closed however the reader closes it
    (its close button, Esc, calibre quitting or switching library), the answer that is
    streaming stops and what came of it is kept."""

    def closeEvent(self, ev: QCloseEvent) -> None:
        self.panel.closing()
        super().closeEvent(ev)  # QDialog's rejects a visible dialog, and so hides it

    def reject(self) -> None:
        # Esc, and QDialog's closeEvent: the same stop, then hidden (not self.close(): re-entrant)
        self.panel.closing()
        super().reject()
