# License: GPLv3 Copyright: the Book AI developers
"""The plugin's settings: which provider answers, the quick actions of the library and
of the E-book viewer, the viewer's highlight style for notes, what is sent about the
books, where answers are saved, and how covers are made (the image provider, the reader's
own cover styles, calibre templates for the text on a cover).

SettingsWidget shows and edits them in tabs, each a SettingsTab of its own module
(settings_provider_tab, settings_actions_tabs, settings_books_tabs, settings_covers_tab)
that loads, checks and saves its own settings: SettingsWidget assembles them, validate()
asks each, then commit() has each write its own. SettingsDialog holds one with OK and
Cancel; show_settings() opens it.
"""

from typing import TYPE_CHECKING

from qt.core import QDialog, QDialogButtonBox, QSize, QTabWidget, QVBoxLayout, QWidget, pyqtSignal

from calibre_plugins.bookai.gui.settings_actions_tabs import LibraryActionsTab, ReadingTab
from calibre_plugins.bookai.gui.settings_books_tabs import BookFieldsTab, SaveTab, SentTab
from calibre_plugins.bookai.gui.settings_covers_tab import CoversTab
from calibre_plugins.bookai.gui.settings_provider_tab import ProviderTab
from calibre_plugins.bookai.gui.settings_tab import SettingsTab, wrapped_label
from calibre_plugins.bookai.settings.prefs import not_saved, plugin_prefs, problems

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()


class SettingsWidget(QWidget):
    """Every setting of the plugin, in tabs; validate(), then commit() writes them."""

    carried_over = pyqtSignal()  # calibre's AI settings were carried over: what is shown is out of date

    def __init__(self, db: 'Cache | None' = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.db = db  # a calibre library's new_api, or None
        self.prefs = plugin_prefs()
        self.setup_ui()

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.file_problems = wrapped_label('', self)  # a settings file that could not be read: said here
        self.file_problems.setStyleSheet('QLabel { color: red }')
        layout.addWidget(self.file_problems)
        self.tabs = QTabWidget(self)
        layout.addWidget(self.tabs)
        db, prefs = self.db, self.prefs
        self.provider_tab = ProviderTab(db, prefs, self)
        self.provider_tab.carried_over.connect(self.carried_over)
        self.library_tab = LibraryActionsTab(db, prefs, self)
        self.reading_tab = ReadingTab(db, prefs, self)
        self.fields_tab = BookFieldsTab(db, prefs, self)
        self.sent_tab = SentTab(db, prefs, self.provider_tab, self)
        self.save_tab = SaveTab(db, prefs, self)
        self.covers_tab = CoversTab(db, prefs, self.provider_tab, self)
        self.tabs.addTab(self.provider_tab, _('&Provider'))
        self.tabs.addTab(self.library_tab, _('&Library actions'))
        self.tabs.addTab(self.reading_tab, _('Read&ing'))
        self.tabs.addTab(self.fields_tab, _('&Book fields'))
        self.tabs.addTab(self.sent_tab, _('&Sent to the AI'))
        self.tabs.addTab(self.save_tab, _('Sa&ve to book'))
        # every letter of "Covers" is some other tab's or field's Alt key: this one has a free one
        self.tabs.addTab(self.covers_tab, _('Cover art&work'))
        self.show_file_problems()

    # the tabs, by the name another window opens them at (show_settings(tab=...))
    TABS = ('provider', 'library-actions', 'reading', 'book-fields', 'sent-to-the-ai', 'save-to-book', 'covers')

    def all_tabs(self) -> list[SettingsTab]:
        """The tabs, in their order."""
        return [self.tabs.widget(i) for i in range(self.tabs.count())]

    def show_tab(self, name: str) -> None:
        """Show the tab named (one of TABS); any other name leaves the first one shown."""
        if name in self.TABS:
            self.tabs.setCurrentIndex(self.TABS.index(name))

    def show_file_problems(self) -> None:
        """Say what could not be read of the settings files, above the tabs."""
        text = '\n'.join(problems())
        self.file_problems.setText(text)
        self.file_problems.setVisible(bool(text))

    def sizeHint(self) -> QSize:
        return QSize(800, 500)

    def problem(self) -> str:
        """'' when everything shown can be saved, else what is wrong, in a sentence (its tab shown)."""
        for tab in self.all_tabs():
            problem = tab.problem()
            if problem:
                self.tabs.setCurrentWidget(tab)
                return problem
        return ''

    # calibre's Preferences → Plugins → Customize: validate() before save_settings(), and
    # (calibre 9+) before the dialog closes
    validate_before_accept = True

    def validate(self) -> bool:
        """True if the settings can be saved; else says why, and False."""
        problem = self.problem()
        if problem:
            from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
            error_dialog(self, _('The settings cannot be saved'), problem, show=True)
        return not problem

    def commit(self) -> bool:
        """Write every setting shown: True, else says why the file could not be written, and False."""
        try:
            self.write()
        except OSError as e:
            from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
            error_dialog(self, _('The settings cannot be saved'), not_saved(self.prefs, e), show=True)
            return False
        finally:
            self.show_file_problems()  # a damaged file: now with where it was kept
        return True

    def write(self) -> None:
        """Write every setting shown. Raises OSError."""
        for tab in self.all_tabs():
            tab.save(self.prefs)


class SettingsDialog(QDialog):
    """The settings, with OK and Cancel."""

    def __init__(self, db: 'Cache | None' = None, parent: QWidget | None = None, tab: str = ''):
        super().__init__(parent)
        self.setWindowTitle(_('Book AI settings'))
        layout = QVBoxLayout(self)
        self.db = db
        self.settings = SettingsWidget(db, self)
        self.settings.carried_over.connect(self.read_again)
        layout.addWidget(self.settings, 1)
        self.bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.bb.accepted.connect(self.accept)
        self.bb.rejected.connect(self.reject)
        layout.addWidget(self.bb)
        self.settings.show_tab(tab)
        self.resize(self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(800, 560)  # room for the seven tabs' names

    def accept(self) -> None:
        if self.settings.validate() and self.settings.commit():
            super().accept()

    def read_again(self) -> None:
        """Show the settings as saved now (after calibre's were carried over)."""
        old = self.settings
        self.settings = SettingsWidget(self.db, self)
        self.settings.carried_over.connect(self.read_again)
        self.layout().replaceWidget(old, self.settings)
        old.hide()
        old.deleteLater()


def show_settings(parent: QWidget | None = None, db: 'Cache | None' = None, tab: str = '') -> bool:
    """Open the settings (modal), on the tab named (a key of SettingsWidget.TABS); True if they were saved."""
    return SettingsDialog(db, parent, tab).exec() == QDialog.DialogCode.Accepted
