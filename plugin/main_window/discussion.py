# License: GPLv3 Copyright: the Book AI developers
"""The discussion window: a conversation about one or more books of the library.

Non-modal: the books it is about, the quick actions, and the conversation
(gui.conversation_panel), whose turns are kept in the History and whose answers
can be saved to the books. About one book, the book's own text can go with the
questions (gui.passages), and a citation opens the book in the E-book viewer
at the passage cited; its X-Ray tab (gui.xray_view) shows the characters, places
and terms met up to the place the viewer saved, and a link there opens the viewer
at that place. Closing the window mid-answer stops the answer and keeps what
came, and stops an X-Ray being made (what it read is kept).
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

from qt.core import QCloseEvent, QDialog, QHBoxLayout, QLabel, QMenu, QPushButton, Qt, QTabWidget, QVBoxLayout, QWidget

from calibre_plugins.bookai.conversation.books import answer_language

from calibre_plugins.bookai.conversation.actions import QuickAction, library_actions
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.notes import NotSaved, append_note, note_markdown
from calibre_plugins.bookai.conversation.question import Question
from calibre_plugins.bookai.grounding.formats import READ_DIRECTLY
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.gui import settings_dialog
from calibre_plugins.bookai.gui.book_text import LibraryBook
from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel, PanelDialog
from calibre_plugins.bookai.gui.icons import plugin_icon
from calibre_plugins.bookai.gui.passages import Grounding
from calibre_plugins.bookai.gui.xray_view import XRayView
from calibre_plugins.bookai.main_window.save_to_book import SaveToBookDialog
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.gui2.ui import Main

load_translations()

QUICK_BUTTONS = 6  # more quick actions than this go into a "More" menu


class DiscussionWindow(PanelDialog):
    """library: conversation.library.BookLibrary; on_saved(book ids): after a note was saved to books."""

    def __init__(self, library: BookLibrary, conversation: Conversation, parent: 'Main | None' = None,
                 on_saved: Callable[[list[int]], None] | None = None) -> None:
        super().__init__(parent)
        self.gui = parent
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowFlags(Qt.WindowType.Window)
        self.library, self.on_saved = library, on_saved
        self.setup_ui(conversation)
        self.show_conversation()
        self.resize(760, 720)

    def setup_ui(self, conversation: Conversation) -> None:
        self.setWindowIcon(plugin_icon('bookai'))
        layout = QVBoxLayout(self)
        self.books_label = QLabel(self)
        self.books_label.setWordWrap(True)
        self.books_label.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.books_label)
        grounding = self.grounding_for(conversation)
        # about one book: the chat and the book's X-Ray, in tabs; about several, the chat alone
        self.tabs: QTabWidget | None = None
        self.xray: XRayView | None = None
        chat_layout = layout
        if grounding is not None:
            self.tabs = QTabWidget(self)
            self.tabs.setDocumentMode(True)
            layout.addWidget(self.tabs, 1)
            chat = QWidget(self.tabs)
            chat_layout = QVBoxLayout(chat)
            chat_layout.setContentsMargins(0, 6, 0, 0)
        self.actions_row = QHBoxLayout()
        chat_layout.addLayout(self.actions_row)
        self.action_buttons: list[QPushButton] = []
        self.panel = ConversationPanel(
            conversation, keep=self.library.history.save, save=self.save_to_book, save_text=_('Save to &book'),
            settings=self.show_settings, placeholder=_(
                'Ask a question about the book (Enter sends, Shift+Enter starts a new line)'),
            intro=lambda: '<p>' + _('Choose a quick action above, or type a question below.') + '</p>',
            grounding=grounding, parent=self, select_book=self.select_book if self.gui is not None else None)
        self.panel.state_changed.connect(self.streaming_changed)
        chat_layout.addWidget(self.panel, 1)
        if grounding is not None:  # "Previously in the series", beside Story so far
            from calibre_plugins.bookai.conversation.recap import earlier_in_series
            db, book_id = self.library.db, conversation.books[0].book_id
            self.panel.offer_series(lambda: db, book_id, *earlier_in_series(db, book_id))
        if self.tabs is not None and grounding is not None:
            self.tabs.addTab(chat, _('Chat'))
            self.xray = XRayView(grounding, lambda: answer_language(self.conv.books), settings=self.show_settings,
                                 vertical=False, parent=self.tabs)
            self.tabs.addTab(self.xray, _('X-Ray'))
        self.fill_quick_actions()
        self.panel.question.setFocus(Qt.FocusReason.OtherFocusReason)

    def grounding_for(self, conversation: Conversation) -> Grounding | None:
        """About one book of the library open in calibre: its text can go with the questions."""
        if len(conversation.books) != 1 or self.gui is None:
            return None
        book_id = conversation.books[0].book_id
        source = LibraryBook(self.gui, self.library.db, book_id, self)
        return Grounding(source, ('metadata', 'chapter', 'position', 'so-far', 'book'), source.position,
                         go_to=self.open_in_viewer)

    def open_in_viewer(self, place: Place) -> None:
        """Open the book in the E-book viewer at a passage cited."""
        grounding, gui = self.panel.grounding, self.gui
        assert grounding is not None and gui is not None  # the grounding's go_to: made only in calibre's window
        text = grounding.source.loaded
        book_id = self.conv.books[0].book_id
        fmt = text.fmt if text is not None else None
        if fmt is None:
            fmt = next((f for f in READ_DIRECTLY if self.library.db.has_format(book_id, f)), None)
        if fmt is None:
            return
        # a CFI where the text was the book's own EPUB; else where the viewer puts that fraction of the book
        open_at = place.cfi if place.cfi and fmt in READ_DIRECTLY else f'{place.position:.4f}'
        gui.iactions['View'].view_format_by_id(book_id, fmt, open_at=open_at)

    @property
    def conv(self) -> Conversation:
        return self.panel.conv

    def closeEvent(self, ev: QCloseEvent) -> None:
        if self.xray is not None:
            self.xray.closing()
        super().closeEvent(ev)

    def reject(self) -> None:
        if self.xray is not None:
            self.xray.closing()
        super().reject()

    def fill_quick_actions(self) -> None:
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
        self.streaming_changed(self.panel.streaming)

    def streaming_changed(self, streaming: bool) -> None:
        for b in self.action_buttons:
            b.setEnabled(not streaming)

    def show_conversation(self) -> None:
        books = self.conv.books
        if len(books) == 1:
            title = _('Discussing {title} by {authors}').format(title=books[0].title, authors=books[0].authors_text)
        else:
            title = _('Discussing {count} books: {titles}').format(
                count=len(books), titles='; '.join(b.title for b in books))
        self.books_label.setText(title)
        self.setWindowTitle(_('{title} — Book AI').format(title=self.conv.title))
        self.panel.show_conversation()

    def run_action(self, action: QuickAction) -> None:
        self.panel.ask(action.prompt(self.conv.books))

    def ask_suggestions(self, question: Question) -> bool:
        """Ask what to read next among books of the library (main_window/read_next.py)."""
        return self.panel.ask_suggestions(question)

    def select_book(self, book_id: int) -> None:
        """A book an answer suggested, selected in calibre's book list; said when the list, as it is shown
        now (a search, a virtual library), does not have it."""
        gui = self.gui
        assert gui is not None  # the panel is given this only in calibre's window
        view = gui.library_view
        view.select_rows([book_id])
        if book_id not in view.get_selected_ids():
            self.panel.show_notice(_('That book is not in the book list as it is shown now: clear the search or '
                                     'the virtual library to see it.'))

    def save_to_book(self, index: int | None) -> None:
        """Save a reply (index: its turn), or the whole conversation (None), to the books."""
        turns = self.conv.turns if index is None else [self.conv.turns[index]]
        note = note_markdown(turns, self.panel.assistant(self.panel.provider))
        prefs = plugin_prefs()
        d = SaveToBookDialog(self.library.db, self.conv.books, note, prefs['save_field'], self)
        if d.exec() != QDialog.DialogCode.Accepted or not d.book_ids:
            return
        if d.remember.isChecked():
            prefs['save_field'] = d.field
        name = d.field_box.currentText()
        try:
            ids = append_note(self.library.db, d.book_ids, d.field, note)
        except NotSaved as e:  # some books did not get it: which, and what became of each, in words
            if self.on_saved is not None and e.saved:
                self.on_saved(e.saved)
            return self.panel.show_notice(str(e))
        except Exception as e:
            return self.panel.show_notice(_('Nothing was saved: {error}').format(error=e))
        if self.on_saved is not None:
            self.on_saved(ids)
        self.panel.show_notice(_('Saved to {field} of {count} book(s).').format(field=name, count=len(ids)))

    def show_settings(self) -> None:
        settings_dialog.show_settings(self, self.library.db)
        if not self.panel.streaming:
            self.fill_quick_actions()
