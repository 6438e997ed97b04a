# License: GPLv3 Copyright: the Book AI developers
"""The History: the conversations kept for this library, newest first, to reopen or delete.

A conversation file that cannot be read is set aside by conversation.history (never
deleted), and this window says so and where it is.
"""

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from qt.core import (
    QAbstractItemView, QCheckBox, QDialog, QDialogButtonBox, QLabel, QTreeWidget, QTreeWidgetItem, Qt, QVBoxLayout,
    QWidget,
)

from calibre.gui2 import question_dialog

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.conversation.library import BookLibrary

load_translations()


class HistoryWindow(QDialog):
    """open_conversation(conversation) is called for the conversation the user opens.
    book_ids: offer "only these books" (the books selected in the library)."""

    def __init__(self, library: 'BookLibrary', open_conversation: Callable[['Conversation'], object],
                 book_ids: Iterable[int] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.library, self.open_conversation, self.book_ids = library, open_conversation, tuple(book_ids)
        self.setWindowTitle(_('Book AI history'))
        self.setup_ui()
        self.refresh()
        self.resize(720, 480)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        self.only_selected = QCheckBox(_('Only conversations about the selected books'), self)
        self.only_selected.setVisible(bool(self.book_ids))
        self.only_selected.toggled.connect(self.refresh)
        layout.addWidget(self.only_selected)
        self.list = QTreeWidget(self)
        self.list.setHeaderLabels([_('Books'), _('Last question'), _('Questions'), _('Model')])
        self.list.setRootIsDecorated(False)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.list.itemDoubleClicked.connect(lambda item, col: self.open_selected())
        self.list.itemSelectionChanged.connect(self.update_buttons)
        layout.addWidget(self.list, 1)
        self.notice = QLabel(self)
        self.notice.setWordWrap(True)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.notice)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.open_button = bb.addButton(_('&Open'), QDialogButtonBox.ButtonRole.ActionRole)
        self.delete_button = bb.addButton(_('&Delete'), QDialogButtonBox.ButtonRole.DestructiveRole)
        self.open_button.clicked.connect(self.open_selected)
        self.delete_button.clicked.connect(self.delete_selected)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    def refresh(self) -> None:
        """List the conversations again, and say what could not be read."""
        history = self.library.history
        history.damaged.clear()
        summaries = []
        if self.only_selected.isChecked():
            seen = set()
            for book_id in self.book_ids:
                for s in history.summaries(self.library.library_id, book_id):
                    if s.id not in seen:
                        seen.add(s.id)
                        summaries.append(s)
            summaries.sort(key=lambda s: s.updated, reverse=True)
        else:
            summaries = history.summaries(self.library.library_id)
        self.list.clear()
        for s in summaries:
            item = QTreeWidgetItem(self.list, [s.title, time.strftime('%Y-%m-%d %H:%M', time.localtime(s.updated)),
                                               str(s.turns), s.model])
            item.setData(0, Qt.ItemDataRole.UserRole, s.id)
        for col in range(3):
            self.list.resizeColumnToContents(col)
        if history.damaged:
            self.notice.setText(_('Some saved conversations could not be read. They were kept, set aside, as: '
                                  '{files}').format(files=', '.join(history.damaged)))
        elif history.unreadable:
            self.notice.setText(history.unreadable)
        elif not summaries:
            self.notice.setText(_('No conversations yet. They are kept here as soon as a question is answered.'))
        else:
            self.notice.setText('')
        self.update_buttons()

    def selected_ids(self) -> list[str]:
        return [item.data(0, Qt.ItemDataRole.UserRole) for item in self.list.selectedItems()]

    def update_buttons(self) -> None:
        n = len(self.selected_ids())
        self.open_button.setEnabled(n == 1)
        self.delete_button.setEnabled(n > 0)

    def open_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 1:
            return
        try:
            conv = self.library.history.load(self.library.library_id, ids[0])
        except ValueError as e:
            self.refresh()  # the file is set aside: off the list; then the why, which refresh() would clear
            self.notice.setText(str(e))
            return
        if conv is not None:
            self.open_conversation(conv)

    def delete_selected(self) -> None:
        ids = self.selected_ids()
        if not ids or not question_dialog(self, _('Delete conversations'), _(
                'Delete {count} conversation(s) for good? This cannot be undone.').format(count=len(ids))):
            return
        for conv_id in ids:
            self.library.history.delete(self.library.library_id, conv_id)
        self.refresh()
