# License: GPLv3 Copyright: the Book AI developers
"""The discussion window: a conversation about one or more books of the library.

Non-modal. Questions come from the quick actions or the question box (Enter
sends, Shift+Enter starts a new line). The answer streams in from a worker
thread (gui.worker); Stop cancels it, an error is shown in words inside the
conversation with Retry, and nothing said before is lost. Every finished turn is
kept in the History. Closing the window mid-answer stops the answer and keeps
what came.
"""

from qt.core import (
    QApplication, QDialog, QHBoxLayout, QLabel, QMenu, QPlainTextEdit, QPushButton, QSizePolicy, Qt,
    QVBoxLayout, pyqtSignal,
)

from calibre_plugins.bookai.conversation.conversation import Conversation, usage_text
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, ReasoningDelta, TextDelta
from calibre_plugins.bookai.gui.chat import ChatView

load_translations()

QUICK_BUTTONS = 6  # more quick actions than this go into a "More" menu


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


class DiscussionWindow(QDialog):

    def __init__(self, library, conversation, parent=None, on_saved=None):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowFlags(Qt.WindowType.Window)
        self.library, self.conv, self.on_saved = library, conversation, on_saved
        self.cancel = self.answer = self.asking = None
        self.closed = False
        self.setup_ui()
        self.show_conversation()
        self.resize(760, 720)

    # the parts {{{

    def setup_ui(self):
        from calibre_plugins.bookai.gui.icons import plugin_icon
        self.setWindowIcon(plugin_icon('bookai'))
        layout = QVBoxLayout(self)
        self.books_label = QLabel(self)
        self.books_label.setWordWrap(True)
        self.books_label.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.books_label)
        self.actions_row = QHBoxLayout()
        layout.addLayout(self.actions_row)
        self.action_buttons = []
        self.fill_quick_actions()
        self.chat = ChatView(self)
        self.chat.link_activated.connect(self.on_link)
        layout.addWidget(self.chat, 1)

        row = QHBoxLayout()
        self.question = QuestionBox(self)
        self.question.setPlaceholderText(_('Ask a question about the book (Enter sends, Shift+Enter starts a '
                                           'new line)'))
        self.question.setTabChangesFocus(True)
        self.question.setMaximumHeight(self.question.fontMetrics().lineSpacing() * 4 + 12)
        self.question.submitted.connect(self.send_question)
        row.addWidget(self.question, 1)
        self.send_button = QPushButton(_('&Send'), self)
        self.send_button.clicked.connect(self.send_or_stop)
        self.send_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        row.addWidget(self.send_button)
        layout.addLayout(row)

        bar = QHBoxLayout()
        self.retry_button = self.button(bar, _('&Retry'), self.retry, _('Ask the question that failed again'))
        self.new_button = self.button(bar, _('&New chat'), self.new_chat, _('Start again, about the same books'))
        self.copy_button = self.button(bar, _('&Copy all'), self.copy_all, _('Copy the whole conversation'))
        self.save_button = self.button(bar, _('Save to &book'), lambda: self.save_to_book(None),
                                       _('Append the conversation to the book\'s metadata'))
        self.preview_button = self.button(bar, _('&What will be sent'), self.show_preview,
                                          _('The exact messages the next question sends, and where'))
        self.settings_button = self.button(bar, _('Se&ttings'), self.show_settings)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        self.question.setFocus(Qt.FocusReason.OtherFocusReason)

    def button(self, bar, text, slot, tip=''):
        b = QPushButton(text, self)
        b.clicked.connect(slot)
        b.setAutoDefault(False)
        if tip:
            b.setToolTip(tip)
        bar.addWidget(b)
        return b

    def fill_quick_actions(self):
        from calibre_plugins.bookai.conversation.actions import library_actions
        while self.actions_row.count():
            w = self.actions_row.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        actions = library_actions()
        self.action_buttons = []
        shown, more = actions[:QUICK_BUTTONS], actions[QUICK_BUTTONS:]
        for action in shown:
            b = QPushButton(action.label, self)
            b.setAutoDefault(False)
            b.setToolTip(action.prompt(self.conv.books))
            b.clicked.connect(lambda checked=False, a=action: self.run_action(a))
            self.actions_row.addWidget(b)
            self.action_buttons.append(b)
        if more:
            b = QPushButton(_('More'), self)
            m = QMenu(b)
            for action in more:
                m.addAction(action.label).triggered.connect(lambda checked=False, a=action: self.run_action(a))
            b.setMenu(m)
            self.actions_row.addWidget(b)
            self.action_buttons.append(b)
        self.actions_row.addStretch(1)

    # }}}

    # what is shown {{{

    @property
    def provider(self):
        """The provider of this conversation: the one it is pinned to, else the chosen one."""
        from calibre_plugins.bookai.providers.registry import PROVIDERS, chosen_provider, get_provider
        if self.conv.provider in PROVIDERS:
            return get_provider(self.conv.provider)
        return chosen_provider()

    def assistant(self, provider=None):
        return self.conv.model or (provider.display_name if provider else _('Assistant'))

    def show_conversation(self):
        books = self.conv.books
        if len(books) == 1:
            title = _('Discussing {title} by {authors}').format(title=books[0].title, authors=books[0].authors_text)
        else:
            title = _('Discussing {count} books: {titles}').format(
                count=len(books), titles='; '.join(b.title for b in books))
        self.books_label.setText(title)
        self.setWindowTitle(_('{title} — Book AI').format(title=self.conv.title))
        self.chat.show_conversation(self.conv.turns, self.assistant(self.provider), self.intro_html())
        self.update_state()

    def intro_html(self):
        from html import escape
        from calibre_plugins.bookai.gui.chat import link
        provider = self.provider
        problem = _('No AI provider is chosen yet.') if provider is None else provider.missing_setup()
        if problem:
            return (f'<p>{escape(problem)} ' + escape(_('Nothing is sent anywhere until you set one up.')) + ' ' +
                    link('settings/0', _('Open the settings')) + '</p>')
        if self.conv.turns:
            return ''
        return '<p>' + escape(_('Choose a quick action above, or type a question below.')) + '</p>'

    def update_state(self):
        streaming = self.cancel is not None
        self.send_button.setText(_('&Stop') if streaming else _('&Send'))
        self.send_button.setToolTip(_('Stop the answer') if streaming else _('Send the question (Enter)'))
        for b in self.action_buttons:
            b.setEnabled(not streaming)
        self.retry_button.setVisible(not streaming and bool(self.conv.retry_question()))
        has_answers = any(t.answer for t in self.conv.turns)
        self.copy_button.setEnabled(bool(self.conv.turns))
        self.save_button.setEnabled(not streaming and has_answers)
        self.new_button.setEnabled(bool(self.conv.turns) or streaming)
        provider = self.provider
        parts = []
        if provider is not None:
            parts.append(provider.display_name)
            model = self.conv.model or provider.option('model')
            parts.append(model or _('model chosen automatically'))
            usage = usage_text(self.conv.total_usage(), provider.is_local)
            if usage:
                parts.append(usage)
        self.status.setText(' · '.join(parts))

    def show_notice(self, text):
        from html import escape
        self.chat.append_html(f'<p><i>{escape(text)}</i></p>')
        self.chat.scroll_to_bottom()

    # }}}

    # asking {{{

    def run_action(self, action):
        self.ask(action.prompt(self.conv.books))

    def send_or_stop(self):
        if self.cancel is not None:
            self.stop()
        else:
            self.send_question()

    def send_question(self):
        if self.cancel is not None:
            return
        question = self.question.toPlainText().strip()
        if question and self.ask(question):
            self.question.clear()

    def ask(self, question):
        """Send question; False if it was not sent (it then stays where it was)."""
        if self.cancel is not None:
            return False
        provider = self.provider
        problem = _('No AI provider is chosen yet.') if provider is None else provider.missing_setup()
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
            return  # the window was closed, or the chat started anew: this answer is no longer shown
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
        try:
            self.library.history.save(self.conv)
        except OSError as e:
            self.show_notice(_('The conversation could not be kept in the History: {error}').format(error=e))

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
            if self.cancel is None:
                self.chat.show_conversation(turns, self.assistant(self.provider), self.intro_html())
        elif what == 'save':
            self.save_to_book(index)

    def copy_all(self):
        from calibre_plugins.bookai.conversation.notes import conversation_markdown
        QApplication.clipboard().setText(conversation_markdown(self.conv.turns, self.assistant(self.provider)))

    def new_chat(self):
        self.stop_and_keep()
        self.conv = Conversation(self.conv.books, self.conv.library_id, language=self.conv.language)
        self.chat.reasoning_shown.clear()
        self.show_conversation()

    def save_to_book(self, index):
        from calibre_plugins.bookai.conversation.notes import note_markdown
        from calibre_plugins.bookai.library.save_to_book import SaveToBookDialog, append_note
        from calibre_plugins.bookai.settings.prefs import plugin_prefs
        turns = self.conv.turns if index is None else [self.conv.turns[index]]
        note = note_markdown(turns, self.assistant(self.provider))
        prefs = plugin_prefs()
        d = SaveToBookDialog(self.library.db, self.conv.books, note, prefs['save_field'], self)
        if d.exec() != QDialog.DialogCode.Accepted or not d.book_ids:
            return
        if d.remember.isChecked():
            prefs['save_field'] = d.field
        name = d.field_box.currentText()
        try:
            ids = append_note(self.library.db, d.book_ids, d.field, note)
        except Exception as e:
            return self.show_notice(_('Nothing was saved: {error}').format(error=e))
        if self.on_saved is not None:
            self.on_saved(ids)
        self.show_notice(_('Saved to {field} of {count} book(s).').format(field=name, count=len(ids)))

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
        from calibre_plugins.bookai.gui.settings import show_settings
        show_settings(self, self.library.db)
        if self.cancel is None and not self.closed:
            self.fill_quick_actions()
            self.show_conversation()

    def stop_and_keep(self):
        """Stop an answer that is streaming; what came of it is kept as a stopped turn."""
        if self.cancel is None:
            return
        self.cancel.cancel()
        self.answer.add(Done(model=self.conv.model, finish_reason='cancelled'))
        self.finish_answer()

    def closeEvent(self, ev):
        self.stop_and_keep()
        self.closed = True
        super().closeEvent(ev)

    def reject(self):  # Esc closes, the same way
        self.close()

    # }}}


