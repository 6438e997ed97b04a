# License: GPLv3 Copyright: the Book AI developers
"""Choosing what of the book's own text goes with a question, and the reader's consent.

A window about one book gives its conversation panel a Grounding: where the
book's text comes from, which scopes make sense there, and how to find the
reader's position. The panel shows a "Book text" row with the scope; the
reader's choice is remembered for that book. Until the reader turns book text
on (in the settings for every book, or in this row for one book) only the
book's details are sent.

Before passages go to a provider that is not on this computer the reader sees
them, their token count and cost, and confirms; "don't ask again" is kept per
book and provider.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qt.core import (
    QComboBox, QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget, pyqtSignal,
)

from calibre_plugins.bookai.conversation.question import SO_FAR_CONSENT
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre_plugins.bookai.gui.book_text import BookSource, BookText
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


def scope_label(scope: str) -> str:
    """A scope (grounding.scopes.SCOPES) in the reader's words."""
    return {
        'metadata': _('Book details only'),
        'selection': _('The selection and the paragraphs around it'),
        'chapter': _('This chapter, up to where I am'),
        'position': _('Passages up to where I am (no spoilers)'),
        'so-far': _('Everything up to where I am (no spoilers; as much as the model reads at once)'),
        'book': _('Passages from the whole book (may reveal the ending)'),
    }[scope]


@dataclass
class Grounding:
    """Where a window's book text comes from, and what the reader may send of it."""
    source: 'BookSource'
    scopes: tuple[str, ...]             # the scopes offered, from grounding.scopes.SCOPES
    position: 'Callable[[BookText], float | None]'  # the reader's position (a fraction) or None
    selection: Callable[[], str] | None = None      # the selected text
    go_to: Callable[[Place], None] | None = None    # show that place of the book
    jumps: bool = False                 # a citation clicked goes there at once (else: the passage first)

    @property
    def key(self) -> str:
        """The book, for the remembered scope and consent."""
        return self.source.key

    def scope(self) -> str:
        """The scope chosen for this book, else the settings' default."""
        prefs = plugin_prefs()
        chosen = prefs['book_scopes'].get(self.key)
        if chosen in self.scopes:
            return chosen
        return 'position' if prefs['book_text'] and 'position' in self.scopes else 'metadata'

    def choose(self, scope: str) -> None:
        """Remember the scope chosen for this book."""
        prefs = plugin_prefs()
        scopes = dict(prefs['book_scopes'])
        scopes[self.key] = scope
        prefs['book_scopes'] = scopes


def consent_key(books: str, provider: 'AIProviderPlugin') -> str:
    return f'{books}|{provider.name}'


def needs_consent(books: str, provider: 'AIProviderPlugin') -> bool:
    """Whether the reader must see and confirm book text before it goes to provider. books: which
    book(s) the text is from (Grounding.key, or the library's for passages found across it)."""
    if provider.connection.is_local:
        return False
    return consent_key(books, provider) not in plugin_prefs()['book_text_consent']


def remember_consent(books: str, provider: 'AIProviderPlugin') -> None:
    prefs = plugin_prefs()
    prefs['book_text_consent'] = sorted(set(prefs['book_text_consent']) | {consent_key(books, provider)})


class ScopeRow(QWidget):
    """"Book text: [scope]" and a word on where it goes."""

    changed = pyqtSignal(str)

    def __init__(self, grounding: Grounding, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grounding = grounding
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        label = QLabel(_('&Book text:'), self)
        self.box = QComboBox(self)
        label.setBuddy(self.box)
        for scope in grounding.scopes:
            self.box.addItem(scope_label(scope), scope)
        self.box.setCurrentIndex(max(0, self.box.findData(grounding.scope())))
        self.box.setToolTip(_('What of the book\'s own text is sent with your questions. Passages are '
                              'numbered and the answer cites them.'))
        self.box.currentIndexChanged.connect(self.on_change)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        layout.addWidget(label)
        layout.addWidget(self.box)
        layout.addWidget(self.note, 1)

    @property
    def scope(self) -> str:
        return self.box.currentData()

    def on_change(self) -> None:
        self.grounding.choose(self.scope)
        self.changed.emit(self.scope)

    def show_destination(self, provider: 'AIProviderPlugin | None') -> None:
        if self.scope == 'metadata':
            text = _('Only the book\'s details are sent.')
        elif provider is not None and provider.connection.is_local:
            text = _('Local: the book\'s text stays on this computer.')
        elif provider is not None and not needs_consent(
                self.grounding.key + (SO_FAR_CONSENT if self.scope == 'so-far' else ''), provider):
            text = _('Passages go to {provider} without asking: you said so for this book.').format(
                provider=provider.display_name)
        else:
            text = _('You see the passages before they are sent.')
        self.note.setText(text)


class CitationDialog(QDialog):
    """The passage a citation points to, its chapter and place, and "Open in viewer at this place"."""

    def __init__(self, number: int, place: Place, text: str, go_to: Callable[[Place], None] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.place = place
        self.go_to: Callable[[Place], None] | None = go_to
        self.setWindowTitle(_('Passage {n}').format(n=number))
        layout = QVBoxLayout(self)
        if place.book_id:  # found across the library: the book is what tells where
            self.where = QLabel(_('From {title}').format(title=place.chapter), self)
        else:
            self.where = QLabel(_('{chapter}, at {position:.0%} of the book').format(
                chapter=place.chapter or _('Untitled chapter'), position=place.position), self)
        self.where.setWordWrap(True)
        layout.addWidget(self.where)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setPlainText(text or _('The text of this passage was not kept.'))
        layout.addWidget(self.text, 1)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.open_button = None
        if go_to is not None:
            self.open_button = bb.addButton(_('&Open in viewer at this place'), QDialogButtonBox.ButtonRole.ActionRole)
            self.open_button.clicked.connect(self.open_here)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)
        self.resize(560, 380)

    def open_here(self) -> None:
        go_to = self.go_to
        assert go_to is not None  # the button that calls this is there only with go_to
        go_to(self.place)
        self.accept()
