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
"""

from html import escape

from qt.core import (
    QApplication, QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, Qt, QVBoxLayout, QWidget,
    pyqtSignal,
)

from calibre_plugins.bookai.conversation.conversation import usage_text
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, ReasoningDelta, TextDelta
from calibre_plugins.bookai.gui.chat import ChatView, link

load_translations()


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
    HTML shown above an empty conversation; and prepare(question), what a typed question
    becomes before it is sent."""

    state_changed = pyqtSignal(bool)  # streaming

    def __init__(self, conversation, keep=None, save=None, save_text='', settings=None, intro=None,
                 placeholder='', prepare=None, parent=None):
        super().__init__(parent)
        self.conv = conversation
        self.keep_conversation, self.save, self.open_settings, self.intro = keep, save, settings, intro
        self.prepare = prepare
        self.cancel = self.answer = self.asking = None
        self.closed = False
        self.setup_ui(save_text, placeholder)

    def setup_ui(self, save_text, placeholder):
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.chat = ChatView(self)
        self.chat.link_activated.connect(self.on_link)
        self.chat.save_text = save_text if self.save is not None else ''
        layout.addWidget(self.chat, 1)

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
        return self.cancel is not None

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
        question = self.question.toPlainText().strip()
        if question and self.ask(self.prepare(question) if self.prepare else question):
            self.question.clear()

    def ask(self, question):
        """Send question; False if it was not sent (a question typed then stays in the box)."""
        if self.streaming:
            return False
        provider = self.provider
        problem = self.provider_problem(provider)
        if problem:
            self.show_notice(problem + ' ' + _('Nothing was sent. Set up a provider in the settings.'))
            return False
        from calibre_plugins.bookai.gui.preview import PreviewDialog, needs_confirmation
        if needs_confirmation(provider, self.conv):
            model = self.conv.model or provider.option('model')
            d = PreviewDialog(provider, model, self.conv.messages_for(question), confirm=True, parent=self)
            if d.exec() != QDialog.DialogCode.Accepted:
                return False
        from calibre_plugins.bookai.gui.worker import stream_in_thread
        replaced = self.conv.retry_question() != ''
        messages = self.conv.ask(question)
        if replaced:  # a failed turn is asked again: it goes away
            self.chat.show_conversation(self.conv.turns[:-1], self.assistant(provider), self.intro_html())
        self.asking = provider
        self.answer = Answer()
        self.chat.begin_answer(question, _('{assistant} is answering…').format(assistant=self.assistant(provider)))
        self.cancel = stream_in_thread(provider, messages, self.on_chunk, use_model=self.conv.model)
        self.update_state()
        return True

    def on_chunk(self, chunk):
        if self.closed or self.answer is None:
            return  # closed, or a new conversation started: this answer is no longer shown
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
        if self.cancel is not None:
            self.cancel.cancel()  # the stream ends with a cancelled Done, which finishes the turn

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
        PreviewDialog(provider, model, self.conv.messages_for(question), parent=self).exec()

    def show_settings(self):
        if self.open_settings is not None:
            self.open_settings()
        if not self.streaming and not self.closed:
            self.show_conversation()

    # }}}
