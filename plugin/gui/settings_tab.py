# License: GPLv3 Copyright: the Book AI developers
"""What the tabs of the settings share: SettingsTab, the base of each tab (its setup_ui(),
load() from the preferences, problem() for what cannot be saved, save() to the
preferences), and the small pieces they are made of: wrapped labels, labels with a buddy,
tick states, a field's name and CheckedEditor, the small editor whose OK says what is
missing.
"""

from typing import TYPE_CHECKING

from calibre.library.field_metadata import FieldMetadata
from qt.core import (
    QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QLineEdit, QListWidgetItem, QPlainTextEdit, Qt, QVBoxLayout, QWidget,
)

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.utils.config import JSONConfig


def wrapped_label(text: str, parent: QWidget) -> QLabel:
    """A label whose text wraps."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    return label


def form_label(text: str, buddy: QWidget, parent: QWidget) -> tuple[QLabel, QWidget]:
    """A form's row: the label of buddy (its Alt key goes to buddy), and buddy."""
    label = QLabel(text, parent)
    label.setBuddy(buddy)
    return label, buddy


def labelled_row(text: str, buddy: QWidget, parent: QWidget) -> QHBoxLayout:
    """A row of one field: its label (its Alt key goes to buddy), buddy, then room."""
    row = QHBoxLayout()
    row.addWidget(form_label(text, buddy, parent)[0])
    row.addWidget(buddy)
    row.addStretch(1)
    return row


def checked(item: QListWidgetItem) -> bool:
    return item.checkState() == Qt.CheckState.Checked


def check_state(on: bool) -> Qt.CheckState:
    return Qt.CheckState.Checked if on else Qt.CheckState.Unchecked


def field_name(db: 'Cache | None', key: str) -> str:
    """The name calibre shows for a field: the library's when db is given, else calibre's standard one."""
    try:
        if db is not None:
            name = db.field_metadata[key]['name']
        else:
            name = FieldMetadata()[key]['name']
    except Exception:
        name = ''
    return name or key.lstrip('#').replace('_', ' ').capitalize()


class SettingsTab(QWidget):
    """One tab of the settings: made by setup_ui(), filled from the preferences by load(); problem()
    says what cannot be saved, save(prefs) writes what it shows (raises OSError).

    db: the calibre library's new_api the settings were opened from, or None; prefs: the plugin's
    preferences."""

    def __init__(self, db: 'Cache | None', prefs: 'JSONConfig', parent: QWidget | None = None):
        super().__init__(parent)
        self.db = db
        self.prefs = prefs
        self.setup_ui()
        self.load()

    def setup_ui(self) -> None:
        """Make the tab's widgets."""

    def load(self) -> None:
        """Show the settings as the preferences hold them."""

    def problem(self) -> str:
        """'' when what the tab shows can be saved, else what is wrong, in a sentence."""
        return ''

    def save(self, prefs: 'JSONConfig') -> None:
        """Write what the tab shows to prefs. Raises OSError."""


class CheckedEditor(QDialog):
    """A small editor whose OK keeps it open while problem() names what is missing: said in red,
    above OK and Cancel."""

    def add_error_and_buttons(self, layout: QVBoxLayout, *edits: QLineEdit | QPlainTextEdit) -> None:
        """The error line (hidden again as soon as one of edits changes), then OK and Cancel."""
        self.error = wrapped_label('', self)
        self.error.setStyleSheet('QLabel { color: red }')
        self.error.setVisible(False)
        layout.addWidget(self.error)
        for edit in edits:
            edit.textChanged.connect(lambda: self.error.setVisible(False))
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    def problem(self) -> str:
        """What is missing for OK, in a sentence; '' when nothing is."""
        return ''

    def refused(self) -> None:
        """After OK was refused and the problem said."""

    def accept(self) -> None:
        problem = self.problem()
        if problem:
            self.error.setText(problem)
            self.error.setVisible(True)
            self.refused()
            return
        super().accept()
