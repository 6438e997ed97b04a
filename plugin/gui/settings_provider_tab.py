# License: GPLv3 Copyright: the Book AI developers
"""The Provider tab of the settings: which provider answers, the settings of the one chosen
(a ProviderConfigWidget each, made when first shown), and the import of calibre's own AI
settings; ProviderSettingsDialog, one provider's settings in a window of their own (the
Cover artwork tab opens it for the provider of images).
"""

from typing import TYPE_CHECKING

from qt.core import (
    QComboBox, QDialog, QDialogButtonBox, QFormLayout, QFrame, QPushButton, QScrollArea,
    QStackedWidget, Qt, QVBoxLayout, QWidget, pyqtSignal,
)

from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
from calibre_plugins.bookai.gui.settings_tab import SettingsTab, labelled_row, wrapped_label
from calibre_plugins.bookai.providers.base import AIProviderPlugin
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.utils.config import JSONConfig

load_translations()


class ProviderSettingsDialog(QDialog):
    """One provider's settings (as the Provider tab shows them), saved on OK."""

    def __init__(self, provider: AIProviderPlugin, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(_('{provider} settings').format(provider=provider.display_name))
        layout = QVBoxLayout(self)
        self.config = ProviderConfigWidget(provider, self)
        layout.addWidget(self.config, 1)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    def accept(self) -> None:
        if self.config.validate():  # what is wrong is shown under its field
            return
        self.config.commit()
        super().accept()


def provider_text(p: AIProviderPlugin) -> str:
    """A provider as the lists of providers name it: local or not, ready or not."""
    text = p.display_name
    if p.connection.is_local:
        text += ' ' + _('(local)')
    state = _('ready') if not p.config.missing_setup() else _('needs setting up')
    return f'{text} \u2014 {state}'


class ProviderTab(SettingsTab):
    """Which provider answers, and its settings."""

    carried_over = pyqtSignal()  # calibre's AI settings were carried over: what is shown is out of date

    def __init__(self, db: 'Cache | None', prefs: 'JSONConfig', parent: QWidget | None = None):
        # provider name: its ProviderConfigWidget, made when first shown
        self.config_widgets: dict[str, ProviderConfigWidget] = {}
        # provider name: the scroll area holding it in the stack
        self.config_pages: dict[str, QScrollArea] = {}
        super().__init__(db, prefs, parent)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        self.providers = {name: get_provider(name) for name in PROVIDERS}
        self.provider_box = QComboBox(self)
        self.provider_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for name in self.providers:
            self.provider_box.addItem('', name)
        self.show_provider_states()
        layout.addLayout(labelled_row(_('&Answers come from:'), self.provider_box, self))
        self.none_chosen = wrapped_label(_(
            'No provider is chosen yet: nothing is sent anywhere until you choose one here and click OK.'), self)
        self.none_chosen.setStyleSheet('QLabel { font-weight: bold }')
        layout.addWidget(self.none_chosen)
        self.provider_status = wrapped_label('', self)
        layout.addWidget(self.provider_status)
        self.provider_stack = QStackedWidget(self)
        layout.addWidget(self.provider_stack, 1)
        self.import_button = QPushButton(_("I&mport from calibre's AI..."), self)
        self.import_button.setToolTip(_("Carry over the providers, keys and choices of calibre's own AI (calibre 8.11 "
                                        'and later): you see what was found before anything changes'))
        self.import_button.clicked.connect(self.import_from_calibre)
        layout.addWidget(self.import_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.provider_box.currentIndexChanged.connect(self.show_provider)
        self.embeddings_box = QComboBox(self)
        self.embeddings_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.embeddings_box.addItem(_('The provider answers come from'), '')
        for name, p in self.providers.items():
            if p.capabilities & Capability.EMBEDDINGS:
                self.embeddings_box.addItem(p.display_name, name)
        self.embeddings_box.setToolTip(_('The provider that embeds your books\' metadata for Search library by '
                                         'meaning and More like this: one on this computer sends nothing away'))
        layout.addLayout(labelled_row(_('Search librar&y by meaning with:'), self.embeddings_box, self))

    def load(self) -> None:
        chosen = self.prefs['provider']
        self.none_chosen.setVisible(chosen not in self.providers)
        index = self.provider_box.findData(chosen) if chosen in self.providers else 0
        self.provider_box.setCurrentIndex(max(0, index))
        self.show_provider()
        self.embeddings_box.setCurrentIndex(max(0, self.embeddings_box.findData(self.prefs['library_embeddings_provider'])))

    def problem(self) -> str:
        """What is wrong with the settings of a provider shown (shown under its field too), with that
        provider shown; '' when nothing is."""
        for name, w in self.config_widgets.items():
            problem = w.validate()  # shown under its field too
            if problem:
                self.provider_box.setCurrentIndex(self.provider_box.findData(name))
                return problem
        return ''

    def save(self, prefs: 'JSONConfig') -> None:
        for w in self.config_widgets.values():
            w.commit()
        prefs['provider'] = self.selected_provider or ''
        prefs['library_embeddings_provider'] = self.embeddings_box.currentData() or ''

    def import_from_calibre(self) -> None:
        """The import of calibre's AI settings; once something was carried over, the settings
        shown are read again (carried_over)."""
        # on use: only when the reader does this
        from calibre_plugins.bookai.gui.carry_over_offer import offer_on_demand
        path = getattr(getattr(self.db, 'backend', None), 'library_path', '')  # a library's new_api
        libraries = [path] if path else []
        if offer_on_demand(self, libraries):
            self.carried_over.emit()

    def show_provider_states(self) -> None:
        """Say in the list of providers which are ready and, in a tooltip, what the others lack."""
        for i, p in enumerate(self.providers.values()):
            self.provider_box.setItemText(i, provider_text(p))
            self.provider_box.setItemData(i, p.config.missing_setup() or _('Ready to use'), Qt.ItemDataRole.ToolTipRole)

    @property
    def selected_provider(self) -> str | None:
        return self.provider_box.currentData()

    def show_provider(self) -> None:
        """Show the settings of the provider chosen in the list (made when first shown)."""
        name = self.selected_provider
        if name is None:
            return
        p = self.providers[name]
        if name not in self.config_widgets:
            w = ProviderConfigWidget(p)
            for form in w.findChildren(QFormLayout):  # a narrow dialog puts a wide field under its label
                form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
            scroll = QScrollArea(self.provider_stack)
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(w)
            scroll.viewport().setAutoFillBackground(False)  # the tab's own background, not a grey box
            w.setAutoFillBackground(False)
            self.config_widgets[name] = w
            self.config_pages[name] = scroll
            self.provider_stack.addWidget(scroll)
        self.provider_stack.setCurrentWidget(self.config_pages[name])
        missing = p.config.missing_setup()
        self.provider_status.setText(missing)
        self.provider_status.setVisible(bool(missing))

    def keep_typed(self, name: str) -> None:
        """Save what is typed in the settings of provider name, when this tab shows them (before
        they are edited elsewhere)."""
        if name in self.config_widgets:
            self.config_widgets[name].commit()

    def saved_elsewhere(self, name: str) -> None:
        """The settings of provider name were saved elsewhere: shown as saved now."""
        self.providers[name] = get_provider(name)
        if name in self.config_widgets:
            page = self.config_pages.pop(name)
            self.config_widgets.pop(name)
            self.provider_stack.removeWidget(page)
            page.deleteLater()
            if self.selected_provider == name:
                self.show_provider()
        self.show_provider_states()

    def keys_forgotten(self) -> None:
        """Every key was forgotten: the providers shown read their keys again."""
        self.providers = {name: get_provider(name) for name in self.providers}
        for w in self.config_widgets.values():
            w.key_forgotten()
        self.show_provider_states()
        self.show_provider()
