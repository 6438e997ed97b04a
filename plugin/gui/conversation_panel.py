# License: GPLv3 Copyright: the Book AI developers
"""The conversation part shared by the library's discussion window and the viewer's
panel: the chat, the question box (Enter sends, Shift+Enter starts a new line),
Send/Stop, Retry, New chat, Copy all, Save, What will be sent, Settings, and the
line naming provider, model, tokens and cost.

A question is sent from a worker thread (gui.worker) and its answer streams back
into the chat. Stop cancels it; an error is shown in words inside the
conversation, nothing said before is lost, and Retry asks again. Every finished
turn is handed to keep() (the History). closing() stops an answer that is still
coming and keeps what came.

With a Grounding (gui.passages), the panel has a "Book text" row: passages of the
book go with each question as the reader chose, read first when needed (which can
take a moment, and can be stopped), shown for consent before they go to an online
provider; the answer's [n] citations are links to those passages.
"""

from html import escape

from qt.core import (
    QApplication, QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, Qt, QVBoxLayout, QWidget,
    pyqtSignal,
)

from calibre_plugins.bookai.conversation.conversation import usage_text
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, ReasoningDelta, TextDelta
from calibre_plugins.bookai.gui.chat import ChatView, citing, link, sent_note
from calibre_plugins.bookai.gui.passages import scope_label

load_translations()


def by_meaning(provider, scope):
    """Whether passages are ranked by meaning too: as the settings say, for the scopes that rank,
    with a provider on this computer that embeds (an online one would get the whole book)."""
    from calibre_plugins.bookai.providers.base import Capability
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    return (scope in ('position', 'book') and plugin_prefs()['retrieval'] == 'embeddings' and provider.is_local
            and bool(provider.capabilities & Capability.EMBEDDINGS))


class QuestionBox(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = pyqtSignal()

    def keyPressEvent(self, ev):
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
    becomes before it is sent; and grounding (gui.passages.Grounding), for a window about
    one book whose text can be sent."""

    state_changed = pyqtSignal(bool)  # streaming

    def __init__(self, conversation, keep=None, save=None, save_text='', settings=None, intro=None,
                 placeholder='', prepare=None, grounding=None, parent=None):
        super().__init__(parent)
        self.conv = conversation
        self.keep_conversation, self.save, self.open_settings, self.intro = keep, save, settings, intro
        self.prepare, self.grounding = prepare, grounding
        self.cancel = self.answer = self.asking = self.loading = self.loading_cancel = None
        self.closed = False
        self.setup_ui(save_text, placeholder)

    def setup_ui(self, save_text, placeholder):
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.chat = ChatView(self)
        self.chat.link_activated.connect(self.on_link)
        self.chat.citation_activated.connect(self.show_citation)
        self.chat.save_text = save_text if self.save is not None else ''
        layout.addWidget(self.chat, 1)
        self.scope_row = None
        if self.grounding is not None:
            from calibre_plugins.bookai.gui.passages import ScopeRow
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
        self.save_button = self.button(save_text, lambda: self.save(None), _('Save the whole conversation'))
        self.save_button.setVisible(self.save is not None)
        self.preview_button = self.button(_('&What will be sent'), self.show_preview,
                                          _('The exact messages the next question sends, and where'))
        self.settings_button = self.button(_('Se&ttings'), self.show_settings)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)

    def button(self, text, slot, tip=''):
        b = QPushButton(text, self)
        b.clicked.connect(slot)
        b.setAutoDefault(False)
        if tip:
            b.setToolTip(tip)
        self.bar.addWidget(b)
        return b

    # what is shown {{{

    @property
    def provider(self):
        """The provider of this conversation: the one it is pinned to, else the chosen one."""
        from calibre_plugins.bookai.providers.registry import PROVIDERS, chosen_provider, get_provider
        if self.conv.provider in PROVIDERS:
            return get_provider(self.conv.provider)
        return chosen_provider()

    @property
    def streaming(self):
        """An answer is coming, or the book's text is being read for a question."""
        return self.cancel is not None or self.loading is not None

    @property
    def scope(self):
        return self.scope_row.scope if self.scope_row is not None else 'metadata'

    def assistant(self, provider=None):
        return self.conv.model or (provider.display_name if provider else _('Assistant'))

    def provider_problem(self, provider):
        return _('No AI provider is chosen yet.') if provider is None else provider.missing_setup()

    def intro_html(self):
        provider = self.provider
        problem = self.provider_problem(provider)
        if problem:
            return (f'<p>{escape(problem)} ' + escape(_('Nothing is sent anywhere until you set one up.')) + ' ' +
                    link('settings/0', _('Open the settings')) + '</p>')
        if self.conv.turns or self.intro is None:
            return ''
        return self.intro()

    def show_conversation(self):
        self.chat.show_conversation(self.conv.turns, self.assistant(self.provider), self.intro_html())
        self.update_state()

    def set_conversation(self, conversation):
        """Show another conversation (New chat, a new selection); one still streaming is stopped and kept."""
        self.closing()
        self.closed = False
        self.conv = conversation
        self.chat.reasoning_shown.clear()
        self.show_conversation()

    def update_state(self):
        streaming = self.streaming
        self.send_button.setText(_('&Stop') if streaming else _('&Send'))
        self.send_button.setToolTip(_('Stop the answer') if streaming else _('Send the question (Enter)'))
        self.retry_button.setVisible(not streaming and bool(self.conv.retry_question()))
        has_answers = any(t.answer for t in self.conv.turns)
        self.copy_button.setEnabled(bool(self.conv.turns))
        self.save_button.setEnabled(not streaming and has_answers)
        self.new_button.setEnabled(bool(self.conv.turns) or streaming)
        provider = self.provider
        parts = []
        if provider is not None:
            parts.append(provider.display_name)
            parts.append(self.conv.model or provider.option('model') or _('model chosen automatically'))
            usage = usage_text(self.conv.total_usage(), provider.is_local)
            if usage:
                parts.append(usage)
        self.status.setText(' · '.join(parts))
        if self.scope_row is not None:
            self.scope_row.show_destination(provider)
            self.scope_row.setEnabled(not streaming)
        self.state_changed.emit(streaming)

    def show_notice(self, text):
        self.chat.append_html(f'<p><i>{escape(text)}</i></p>')
        self.chat.scroll_to_bottom()

    # }}}

    # asking {{{

    def send_or_stop(self):
        if self.streaming:
            self.stop()
        else:
            self.send_question()

    def send_question(self):
        if self.streaming:
            return
        typed = self.question.toPlainText().strip()
        if typed:
            self.question.clear()
            self.ask(self.prepare(typed) if self.prepare else typed, typed)

    def ready_provider(self, typed=''):
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

    def give_back(self, typed):
        """A typed question that was not sent goes back into the (empty) box."""
        if typed and not self.question.toPlainText().strip():
            self.question.setPlainText(typed)

    def ask(self, question, typed=''):
        """Send question (with the book's text as the Book text row says); False if it was not
        sent. typed: the text typed for it, put back in the box when it is not sent."""
        provider = self.ready_provider(typed)
        if provider is None:
            return False
        if self.scope == 'metadata':
            return self.send(provider, question, typed)
        scope, source = self.scope, self.grounding.source
        token = self.start_waiting(_('Reading the text of the book…') if source.loaded is None else '')

        def loaded(text, error):
            if not self.waiting_for(token):
                return  # stopped, or the window closed, while the book was read
            if text is not None and by_meaning(provider, scope):  # still waiting: for the embeddings
                if self.place_unknown(text, scope):  # nothing goes, not even to be embedded
                    self.stop_waiting(token)
                    return self.give_back(typed)
                return self.rank_by_meaning(provider, text, question, token, lambda *meaning: chosen(text, *meaning))
            self.stop_waiting(token)
            if text is None:
                self.show_notice(error + ' ' + _('Nothing was sent.'))
                return self.give_back(typed)
            chosen(text)

        def chosen(text, embedding_index=None, question_vector=None):
            if not text.skipped_told and (note := text.book.skipped_note()):
                text.skipped_told = True
                self.show_notice(note)
            ex = self.excerpt(text, scope, question, embedding_index, question_vector)
            if ex is None:
                return self.give_back(typed)
            from calibre_plugins.bookai.grounding.scopes import passages_block
            if not ex.passages:
                self.show_notice(_('No passage of the book fits this question there; only the book\'s details go '
                                   'with it.'))
                return self.send(provider, question, typed)
            self.send(provider, question, typed, passages_block(ex), ex.until is not None, ex.places)
        source.load(loaded)
        return True

    def start_waiting(self, notice=''):
        """A question waits for work before it is sent (the book read, passages found): Send
        becomes Stop until stop_waiting(). Returns the token of this wait."""
        self.loading = token = object()
        if notice:
            self.show_notice(notice)
        self.update_state()
        return token

    def waiting_for(self, token):
        """Whether the work of that wait still matters: not stopped, the window not closed."""
        return self.loading is token and not self.closed

    def stop_waiting(self, token):
        """The wait is over; False when its work no longer matters."""
        if not self.waiting_for(token):
            return False
        self.loading = None
        self.update_state()
        return True

    def rank_by_meaning(self, provider, text, question, token, then):
        """The book's passages and the question embedded by provider (in a thread; the passages
        once a book), then then(embedding_index, question_vector); by words alone if that fails."""
        from calibre_plugins.bookai.core.cancel import CancelToken
        from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, embed_question
        from calibre_plugins.bookai.gui.worker import run_in_thread
        self.loading_cancel = cancel = CancelToken()
        kept = getattr(text, 'meaning', None)

        def work():
            ei = kept if kept is not None and kept.matches(text.index.passages) else EmbeddingIndex.build(
                provider, text.index.passages, cancel=cancel)
            return ei, embed_question(provider, ei, question, cancel)

        def done(result, exc):
            if not self.stop_waiting(token):
                return
            self.loading_cancel = None
            if exc is not None:
                self.show_notice(_('Passages could not be ranked by meaning ({error}); they are ranked by their '
                                   'words.').format(error=exc))
                return then()
            text.meaning = result[0]
            then(*result)
        run_in_thread(work, done, self)

    def excerpt(self, text, scope: str, question: str, embedding_index=None, question_vector=None):
        """The passages for question, or None (said why) when they cannot be chosen: for a scope
        that keeps to the reader's place when none is known (the rule is grounding.scopes')."""
        from calibre_plugins.bookai.grounding.scopes import NoPlace, excerpt
        from calibre_plugins.bookai.settings.prefs import plugin_prefs
        position = self.grounding.position(text) if scope != 'book' else None
        selection = self.grounding.selection() if self.grounding.selection else ''
        try:
            return excerpt(text.book, scope, question, position, selection, plugin_prefs()['book_text_budget'],
                           text.index, embedding_index, question_vector)
        except NoPlace:
            self.say_no_place()
            return None

    def place_unknown(self, text, scope: str) -> bool:
        """Whether scope keeps to the reader's place and none is known (said so), by the rule of
        grounding.scopes, before any work for the passages."""
        from calibre_plugins.bookai.grounding.scopes import NoPlace, check_place
        try:
            check_place(scope, self.grounding.position(text) if scope != 'book' else None)
        except NoPlace:
            self.say_no_place()
            return True
        return False

    def say_no_place(self) -> None:
        self.show_notice(_('Book AI does not know where you are in this book, so it cannot keep to what you '
                           'have read. Open the book in calibre\'s E-book viewer: your place is saved when you '
                           'close it. Or choose "{scope}". Nothing was sent.').format(scope=scope_label('book')))

    def send(self, provider, question, typed='', passages='', spoiler_safe=False, places=()):
        """Confirm (as the settings say, and before book text goes online), then stream the answer.
        passages: the numbered passages sent with it (grounding), each at its place in places."""
        from calibre_plugins.bookai.gui.passages import needs_consent, remember_consent
        from calibre_plugins.bookai.gui.preview import PreviewDialog, needs_confirmation
        consent = bool(passages) and needs_consent(self.books_key(), provider)
        if consent or needs_confirmation(provider, self.conv):
            model = self.conv.model or provider.option('model')
            d = PreviewDialog(provider, model, self.conv.messages_for(question, passages, spoiler_safe),
                              confirm=True, passages=len(places) if consent else 0, parent=self)
            if d.exec() != QDialog.DialogCode.Accepted:
                self.give_back(typed)
                return False
            if consent and d.dont_ask is not None and d.dont_ask.isChecked():
                remember_consent(self.books_key(), provider)
        from calibre_plugins.bookai.gui.worker import stream_in_thread
        replaced = self.conv.retry_question() != ''
        messages = self.conv.ask(question, passages, spoiler_safe, places)
        if replaced:  # a failed turn is asked again: it goes away
            self.chat.show_conversation(self.conv.turns[:-1], self.assistant(provider), self.intro_html())
        self.asking = provider
        self.answer = Answer()
        index = len(self.conv.turns) - 1
        turn = self.conv.turns[index]
        self.chat.begin_answer(question, _('{assistant} is answering…').format(assistant=self.assistant(provider)),
                               citing(index, turn), sent_note(turn))
        self.cancel = stream_in_thread(provider, messages, self.on_chunk, use_model=self.conv.model)
        self.update_state()
        return True

    def on_chunk(self, chunk, cancel):
        if self.closed or cancel is not self.cancel:
            return  # closed, or an answer stopped by a new conversation: it is no longer shown
        self.answer.add(chunk)
        if isinstance(chunk, TextDelta):
            self.chat.add_text(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self.chat.add_reasoning(chunk.text)
        elif isinstance(chunk, (Done, Failed)):
            self.finish_answer()

    def finish_answer(self):
        turn = self.conv.finish(self.answer, self.asking.name)
        self.chat.end_answer(len(self.conv.turns) - 1, turn, self.assistant(self.asking))
        self.cancel = self.answer = self.asking = None
        self.keep()
        self.update_state()

    def stop(self):
        if self.loading is not None:  # the book's text was being read for a question: not sent
            self.loading = None
            self.cancel_loading()
            self.show_notice(_('Stopped. Nothing was sent.'))
            self.update_state()
        if self.cancel is not None:
            self.cancel.cancel()  # the stream ends with a cancelled Done, which finishes the turn

    def books_key(self):
        """Which book(s) the passages sent are from, for the reader's consent."""
        return self.grounding.key if self.grounding is not None else f'{self.conv.library_id}:library'

    def cancel_loading(self):
        if self.grounding is not None:
            self.grounding.source.cancel()
        if self.loading_cancel is not None:
            self.loading_cancel.cancel()
            self.loading_cancel = None

    def retry(self):
        question = self.conv.retry_question()
        if question:
            self.ask(question)

    def keep(self):
        if self.keep_conversation is None:
            return
        try:
            self.keep_conversation(self.conv)
        except OSError as e:
            self.show_notice(_('The conversation could not be kept in the History: {error}').format(error=e))

    def closing(self):
        """Stop an answer that is streaming; what came of it is kept as a stopped turn."""
        if self.loading is not None:
            self.loading = None
            self.cancel_loading()
        if self.cancel is not None:
            self.cancel.cancel()
            self.answer.add(Done(model=self.conv.model, finish_reason='cancelled'))
            self.finish_answer()
        self.closed = True

    # }}}

    # the rest {{{

    def on_link(self, what, index):
        turns = self.conv.turns
        if what == 'settings':
            return self.show_settings()
        if what == 'retry':
            return self.retry()
        if not 0 <= index < len(turns):
            return
        if what == 'copy':
            QApplication.clipboard().setText(turns[index].answer)
        elif what == 'reasoning':
            self.chat.toggle_reasoning(index)
            if not self.streaming:
                self.chat.show_conversation(turns, self.assistant(self.provider), self.intro_html())
        elif what == 'save' and self.save is not None:
            self.save(index)

    def show_citation(self, index, number):
        """A citation was clicked: go to that place of the book, or show the passage."""
        turns = self.conv.turns
        if not 0 <= index < len(turns) or not 0 < number <= len(turns[index].places):
            return
        place = turns[index].places[number - 1]
        g = self.grounding
        if g is not None and g.go_to is not None and g.jumps:
            return g.go_to(place)
        from calibre_plugins.bookai.grounding.scopes import passage_texts
        from calibre_plugins.bookai.gui.passages import CitationDialog
        text = passage_texts(turns[index].passages).get(number, '')
        CitationDialog(number, place, text, self.go_to_for(place), self).exec()

    def go_to_for(self, place):
        """How to show a place cited in the E-book viewer, or None."""
        return self.grounding.go_to if self.grounding is not None else None

    def copy_all(self):
        from calibre_plugins.bookai.conversation.notes import conversation_markdown
        QApplication.clipboard().setText(conversation_markdown(self.conv.turns, self.assistant(self.provider)))

    def new_chat(self):
        from calibre_plugins.bookai.conversation.conversation import Conversation
        c = self.conv
        self.set_conversation(Conversation(c.books, c.library_id, language=c.language, selection=c.selection))

    def show_preview(self):
        from calibre_plugins.bookai.gui.preview import PreviewDialog
        provider = self.provider
        if provider is None:
            return self.show_notice(_('No AI provider is chosen yet.') + ' ' + _(
                'Nothing is sent anywhere until you set one up.'))
        question = self.question.toPlainText().strip() or _('(your question)')
        model = self.conv.model or provider.option('model')
        messages = self.conv.messages_for(question)
        if self.scope != 'metadata':
            self.show_notice(_('Passages of the book are chosen for each question when it is sent, and shown '
                               'for you to confirm before they go to a provider that is not on this computer.'))
        PreviewDialog(provider, model, messages, parent=self).exec()

    def show_settings(self):
        if self.open_settings is not None:
            self.open_settings()
        if not self.streaming and not self.closed:
            self.show_conversation()

    # }}}


class PanelDialog(QDialog):
    """A window around a ConversationPanel (self.panel): closed however the reader closes it
    (its close button, Esc, calibre quitting or switching library), the answer that is
    streaming stops and what came of it is kept."""

    def closeEvent(self, ev):
        self.panel.closing()
        super().closeEvent(ev)  # QDialog's rejects a visible dialog, and so hides it

    def reject(self):  # Esc, and QDialog's closeEvent: the same stop, then hidden (not self.close(): re-entrant)
        self.panel.closing()
        super().reject()
