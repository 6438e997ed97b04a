# License: GPLv3 Copyright: the Book AI developers
"""Ask my library: a question answered from the full text of the library's books.

calibre's full-text index (when the library has it turned on) finds the passages
that match the question, over the whole library or the books selected; they go
with the question, numbered, and the answer's citations open the passage, with
its book, and "Open in viewer at this place". Each question searches anew. What the
model looked up while answering shows under the answer, as in the discussion window
(gui/lookups.py), its passages from any book of the library.
"""

from collections.abc import Callable, Iterable
from html import escape
from typing import TYPE_CHECKING, Any

from qt.core import QComboBox, QHBoxLayout, QLabel, Qt, QVBoxLayout

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.question import Question, library_question
from calibre_plugins.bookai.grounding.library_passages import fts_message
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel, PanelDialog
from calibre_plugins.bookai.gui.icons import plugin_icon
from calibre_plugins.bookai.gui.lookups import number_of, passage_text
from calibre_plugins.bookai.gui import settings_dialog
from calibre_plugins.bookai.gui.worker import run_in_thread

if TYPE_CHECKING:
    from calibre.gui2.ui import Main

load_translations()


class LibraryPanel(ConversationPanel):
    """The conversation panel, with passages found in the library's full-text index."""

    def __init__(self, window: 'LibraryQuestionWindow', *args: Any, **kwargs: Any) -> None:
        self.window = window
        super().__init__(*args, **kwargs)

    def ask(self, question: str, typed: str = '') -> bool:
        """Search the library for question (in a thread), then send it with the passages found."""
        ready = self.ready_provider(typed)
        if ready is None:
            return False
        provider = ready  # not None, in the closure too
        db, book_ids = self.window.library.db, self.window.searched_ids()
        token = self.start_waiting(_('Searching the full text of your books…'))

        def found(q: Question | None, exc: BaseException | None) -> None:
            if not self.stop_waiting(token):
                return
            if exc is not None or q is None or not q.passages:  # q is None only with exc
                self.show_notice((str(exc) if exc is not None else _(
                    'Nothing in the full-text index of your books matches the question.')) + ' ' + _(
                    'Nothing was sent.'))
                return self.give_back(typed)
            self.send(provider, q, typed)
        run_in_thread(lambda: library_question(db, question, book_ids), found, self)
        return True

    def go_to_for(self, place: Place) -> Callable[[Place], None]:
        return self.window.open_in_viewer


class LibraryQuestionWindow(PanelDialog):
    """library: conversation.library.BookLibrary; selected: the ids of the books selected (may be empty)."""

    def __init__(self, library: BookLibrary, conversation: Conversation, selected: Iterable[int] = (),
                 parent: 'Main | None' = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowFlags(Qt.WindowType.Window)
        self.gui, self.library, self.selected = parent, library, tuple(selected)
        self.setup_ui(conversation)
        self.setWindowTitle(_('Ask my library — Book AI'))
        self.panel.show_conversation()
        self.resize(760, 720)

    def setup_ui(self, conversation: Conversation) -> None:
        self.setWindowIcon(plugin_icon('bookai'))
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        label = QLabel(_('&Search in:'), self)
        self.where = QComboBox(self)
        label.setBuddy(self.where)
        self.where.addItem(_('The whole library'), 'all')
        if self.selected:
            self.where.addItem(_('The {count} selected book(s)').format(count=len(self.selected)), 'selected')
            self.where.setCurrentIndex(1)
        row.addWidget(label)
        row.addWidget(self.where)
        row.addStretch(1)
        layout.addLayout(row)
        self.panel = LibraryPanel(
            self, conversation, keep=self.library.history.save, settings=self.show_settings,
            placeholder=_('Ask a question about your books (Enter sends, Shift+Enter starts a new line)'),
            intro=self.intro, parent=self)
        self.panel.state_changed.connect(lambda streaming: self.where.setEnabled(not streaming))
        layout.addWidget(self.panel, 1)
        self.panel.question.setFocus(Qt.FocusReason.OtherFocusReason)

    @property
    def conv(self) -> Conversation:
        return self.panel.conv

    def searched_ids(self) -> tuple[int, ...] | None:
        """The books searched: those selected, or None for the whole library."""
        return self.selected if self.where.currentData() == 'selected' else None

    def intro(self) -> str:
        text = _('Your question is looked up in the full text of your books, and the passages found go with '
                 'it. The answer cites them.')
        note = fts_message(self.library.db)
        return '<p>' + escape(text) + '</p>' + (f'<p><i>{escape(note)}</i></p>' if note else '')

    def open_in_viewer(self, place: Place) -> None:
        """Open the book a passage is from in the E-book viewer, at the passage."""
        text, live = '', self.panel.live_lookups
        for turn in reversed(self.panel.conv.turns):  # the passage's text, sent with a question or found by a lookup
            n = number_of(turn, place, live)
            if n:
                text = passage_text(turn, n, live)
                break
        words = ' '.join(text.replace('…', ' ').split()[:8])
        assert self.gui is not None  # opened from calibre's main window (main_window.action), which opens books
        self.gui.iactions['View'].view_format_by_id(place.book_id, place.fmt, open_at=f'search:{words}'
                                                     if words else None)

    def show_settings(self) -> None:
        settings_dialog.show_settings(self, self.library.db)
