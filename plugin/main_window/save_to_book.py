# License: GPLv3 Copyright: the Book AI developers
"""Save to book: a note appended to a book's comments, or to a custom column of the
comments type, after what the field already holds. Nothing is ever replaced.

The dialog shows what will be added and where, and asks; conversation.notes adds it
(append_note), with no display: each book from what its field holds at that moment, read
back once written, the old text put back on any failure, and a field another program
changed meanwhile left alone; the discussion window says in words which books got the
note and what became of the others (notes.NotSaved).
"""

from qt.core import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QListWidget, QListWidgetItem, Qt,
    QTextBrowser, QVBoxLayout, QWidget,
)

from collections.abc import Sequence
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.notes import save_targets
from calibre_plugins.bookai.conversation.render import markdown_to_html

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()


class SaveToBookDialog(QDialog):
    """Which books, which field, and exactly what is added."""

    def __init__(self, db: 'Cache', books: Sequence[BookInfo], note_md: str, field: str = 'comments',
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db, self.books, self.note_md = db, books, note_md
        self.targets = save_targets(db)
        self.setWindowTitle(_('Save to book'))
        self.setup_ui(field)
        self.resize(640, 520)

    def setup_ui(self, field: str) -> None:
        layout = QVBoxLayout(self)
        form = QFormLayout()
        layout.addLayout(form)
        self.book_list = QListWidget(self)
        for book in self.books:
            item = QListWidgetItem(f'{book.title} — {book.authors_text}', self.book_list)
            item.setData(Qt.ItemDataRole.UserRole, book.book_id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
        self.book_list.setMaximumHeight(24 * min(4, len(self.books)) + 8)
        form.addRow(_('Books:'), self.book_list)
        self.field_box = QComboBox(self)
        for key, name, kind in self.targets:
            self.field_box.addItem(name, key)
        self.field_box.setCurrentIndex(max(0, self.field_box.findData(field)))
        form.addRow(_('&Add to:'), self.field_box)
        explain = QLabel(_('The text below is added after what the field already holds. '
                           'Nothing there is replaced.'), self)
        explain.setWordWrap(True)
        layout.addWidget(explain)
        self.preview = QTextBrowser(self)
        self.preview.setOpenLinks(False)
        self.preview.setHtml(markdown_to_html(self.note_md))
        layout.addWidget(self.preview, 1)
        self.remember = QCheckBox(_('Use this field from now on'), self)
        layout.addWidget(self.remember)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    @property
    def field(self) -> str:
        """The field chosen."""
        return self.field_box.currentData()

    @property
    def book_ids(self) -> list[int]:
        """The books ticked."""
        items = (self.book_list.item(i) for i in range(self.book_list.count()))
        return [i.data(Qt.ItemDataRole.UserRole) for i in items if i.checkState() == Qt.CheckState.Checked]
