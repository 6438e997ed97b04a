# License: GPLv3 Copyright: the Book AI developers
"""Ask my library: a question answered from the full text of the library's books.

calibre's full-text index (when the library has it turned on) finds the passages
that match the question, over the whole library or the books selected; they go
with the question, numbered, and the answer's citations open the passage, with
its book, and "Open in viewer at this place". Each question searches anew.
"""

from qt.core import QComboBox, QHBoxLayout, QLabel, Qt, QVBoxLayout

from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel, PanelDialog

load_translations()


class LibraryPanel(ConversationPanel):
    """The conversation panel, with passages found in the library's full-text index."""

    def __init__(self, window, *args, **kwargs):
        self.window = window
        super().__init__(*args, **kwargs)

    def ask(self, question, typed=''):
        provider = self.ready_provider(typed)
        if provider is None:
            return False
        from calibre_plugins.bookai.grounding.library_search import library_excerpt
        from calibre_plugins.bookai.gui.worker import run_in_thread
        db, book_ids = self.window.library.db, self.window.searched_ids()
        token = self.start_waiting(_('Searching the full text of your books…'))

        def found(ex, exc):
            if not self.stop_waiting(token):
                return
            if exc is not None or not ex.passages:
                self.show_notice((str(exc) if exc is not None else _(
                    'Nothing in the full-text index of your books matches the question.')) + ' ' + _(
                    'Nothing was sent.'))
                return self.give_back(typed)
            from calibre_plugins.bookai.grounding.library_search import library_block
            from calibre_plugins.bookai.grounding.scopes import Place
            places = tuple(Place(p.title, 0.0, '', p.book_id, p.format) for p in ex.passages)
            self.send(provider, question, typed, library_block(ex), False, places)
        run_in_thread(lambda: library_excerpt(db, question, book_ids), found, self)
        return True

    def go_to_for(self, place):
        return self.window.open_in_viewer


class LibraryQuestionWindow(PanelDialog):
    """library: conversation.books.BookLibrary; selected: the ids of the books selected (may be empty)."""

    def __init__(self, library, conversation, selected=(), parent=None):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowFlags(Qt.WindowType.Window)
        self.gui, self.library, self.selected = parent, library, tuple(selected)
        self.setup_ui(conversation)
        self.setWindowTitle(_('Ask my library — Book AI'))
        self.panel.show_conversation()
        self.resize(760, 720)

    def setup_ui(self, conversation):
        from calibre_plugins.bookai.gui.icons import plugin_icon
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
    def conv(self):
        return self.panel.conv

    def searched_ids(self):
        return self.selected if self.where.currentData() == 'selected' else None

    def intro(self):
        from html import escape
        from calibre_plugins.bookai.grounding.library_search import fts_message
        text = _('Your question is looked up in the full text of your books, and the passages found go with '
                 'it. The answer cites them.')
        note = fts_message(self.library.db)
        return '<p>' + escape(text) + '</p>' + (f'<p><i>{escape(note)}</i></p>' if note else '')

    def open_in_viewer(self, place):
        """Open the book a passage is from in the E-book viewer, at the passage."""
        from calibre_plugins.bookai.grounding.scopes import passage_texts
        turn = next((t for t in reversed(self.panel.conv.turns) if place in t.places), None)
        text = passage_texts(turn.passages).get(turn.places.index(place) + 1, '') if turn else ''
        words = ' '.join(text.replace('…', ' ').split()[:8])
        self.gui.iactions['View'].view_format_by_id(place.book_id, place.fmt, open_at=f'search:{words}'
                                                     if words else None)

    def show_settings(self):
        from calibre_plugins.bookai.gui.settings_dialog import show_settings
        show_settings(self, self.library.db)
