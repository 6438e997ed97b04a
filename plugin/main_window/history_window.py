# License: GPLv3 Copyright: the Book AI developers
"""The History: the conversations kept for this library, newest first, to search, reopen, export
(as Markdown or HTML, conversation/export.py) or delete.

A conversation file that cannot be read is set aside by conversation.history (never
deleted), and this window says so and where it is.
"""

import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from qt.core import (
    QAbstractItemView, QCheckBox, QDialog, QDialogButtonBox, QLabel, QLineEdit, QTimer, QTreeWidget, QTreeWidgetItem,
    Qt, QVBoxLayout, QWidget,
)

from calibre.gui2 import choose_save_file, error_dialog, question_dialog

from calibre_plugins.bookai.conversation.export import export, format_of
from calibre_plugins.bookai.conversation.history import safe_name
from calibre_plugins.bookai.core.files import write_private
from calibre_plugins.bookai.core.printable import one_line

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
        self.search = QLineEdit(self)
        self.search.setPlaceholderText(_('Search titles, books, questions and answers'))
        self.search.setClearButtonEnabled(True)
        # the list follows the words as they are typed, once typing pauses: each search reads the files
        self.search_timer = QTimer(self)
        self.search_timer.setSingleShot(True)
        self.search_timer.setInterval(250)
        self.search_timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda: self.search_timer.start())
        self.search.returnPressed.connect(self.refresh)
        layout.addWidget(self.search)
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
        self.notice.setTextFormat(Qt.TextFormat.PlainText)  # it may show words typed and file names
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.notice)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.open_button = bb.addButton(_('&Open'), QDialogButtonBox.ButtonRole.ActionRole)
        self.export_button = bb.addButton(_('&Export…'), QDialogButtonBox.ButtonRole.ActionRole)
        self.export_button.setToolTip(_('Save the selected conversations as Markdown or HTML'))
        self.export_button.clicked.connect(self.export_selected)
        self.delete_button = bb.addButton(_('&Delete'), QDialogButtonBox.ButtonRole.DestructiveRole)
        self.open_button.clicked.connect(self.open_selected)
        self.delete_button.clicked.connect(self.delete_selected)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    def refresh(self) -> None:
        """List the conversations again, and say what could not be read."""
        history = self.library.history
        history.damaged.clear()
        self.search_timer.stop()
        words = self.search.text().strip()
        found = history.search(self.library.library_id, words)
        if self.only_selected.isChecked():
            wanted = set(self.book_ids)
            found = [s for s in found if wanted.intersection(s.book_ids)]
        summaries = found
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
        elif not summaries and words:
            self.notice.setText(_('No conversation matches "{words}".').format(words=one_line(words)))
        elif not summaries:
            self.notice.setText(_('No conversations yet. They are kept here as soon as a question is answered.'))
        else:
            self.notice.setText('')
        self.update_buttons()

    def selected_ids(self) -> list[str]:
        """The ids of the selected conversations, in the list's order."""
        items = sorted(self.list.selectedItems(), key=self.list.indexOfTopLevelItem)
        return [item.data(0, Qt.ItemDataRole.UserRole) for item in items]

    def update_buttons(self) -> None:
        n = len(self.selected_ids())
        self.open_button.setEnabled(n == 1)
        self.delete_button.setEnabled(n > 0)
        self.export_button.setEnabled(n > 0)

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

    def export_selected(self) -> None:
        """The selected conversations, in the list's order, saved as one Markdown or HTML file (by the
        name's extension; Markdown when it has none) written whole or not at all."""
        ids = self.selected_ids()
        if not ids:
            return
        convs, problems = [], []
        for conv_id in ids:
            try:
                conv = self.library.history.load(self.library.library_id, conv_id)
            except ValueError as e:
                problems.append(str(e))
                continue
            if conv is not None:
                convs.append(conv)
        if not convs:
            self.refresh()
            self.notice.setText(' '.join(problems) or _('The selected conversations are no longer in the History.'))
            return
        name = safe_name(convs[0].title if len(convs) == 1 else _('Book AI conversations')).strip('_.') or 'history'
        path = choose_save_file(self, 'bookai-history-export', ngettext(
            'Export the conversation', 'Export {count} conversations', len(convs)).format(count=len(convs)),
            filters=[(_('Markdown'), ['md']), (_('HTML'), ['html'])], all_files=False, initial_filename=name + '.md')
        if not path:
            return
        fmt = format_of(path)
        if '.' not in os.path.basename(path):
            path += '.' + fmt
        try:
            write_private(path, export(convs, fmt))
        except OSError as e:
            error_dialog(self, _('Not exported'), _('The conversations could not be saved in {path}: {reason}').format(
                path=path, reason=e.strerror or e), show=True)
            return
        said = ngettext('The conversation was saved in {path}.', '{count} conversations were saved in {path}.',
                        len(convs)).format(count=len(convs), path=path)
        self.notice.setText(' '.join([said] + problems))

    def delete_selected(self) -> None:
        ids = self.selected_ids()
        if not ids or not question_dialog(self, _('Delete conversations'), _(
                'Delete {count} conversation(s) for good? This cannot be undone.').format(count=len(ids))):
            return
        for conv_id in ids:
            self.library.history.delete(self.library.library_id, conv_id)
        self.refresh()
