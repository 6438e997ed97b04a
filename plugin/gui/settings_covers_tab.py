# License: GPLv3 Copyright: the Book AI developers
"""The Cover artwork tab of the settings: the provider that makes covers (chosen apart from the
one that answers; its settings are the Provider tab's), the reader's own cover styles (each
added with a StyleEditor), calibre templates for the text on a cover, the extra instructions,
the requests at once of a job for many books, and how long replaced covers are kept for Undo.
"""

from typing import TYPE_CHECKING

from calibre.library.field_metadata import FieldMetadata
from qt.core import (
    QAbstractItemView, QComboBox, QDialog, QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit, QListWidget,
    QListWidgetItem, QPlainTextEdit, QPushButton, QScrollArea, QSpinBox, Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.gui.settings_provider_tab import ProviderSettingsDialog, ProviderTab, provider_text
from calibre_plugins.bookai.gui.settings_tab import CheckedEditor, SettingsTab, wrapped_label
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.registry import get_provider

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.utils.config import JSONConfig

load_translations()


def sample_book() -> object:
    """A made-up book to try a template on, as calibre's template editor makes one."""
    from calibre.ebooks.metadata.book.base import Metadata
    mi = Metadata(_('Title'), [_('Author')])
    mi.series, mi.series_index = _('Series'), 3
    mi.tags = [_('Tag 1'), _('Tag 2')]
    mi.languages = ['eng']
    return mi



class StyleEditor(CheckedEditor):
    """A cover style of the reader's own: its name and its prompt (as calibre's Add custom style)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(_('Add custom style'))
        layout = QVBoxLayout(self)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.name_edit = QLineEdit(self)
        self.name_edit.setPlaceholderText(_('e.g. Watercolor'))
        form.addRow(_('Style &name:'), self.name_edit)
        layout.addLayout(form)
        layout.addWidget(QLabel(_('Style instructions:'), self))
        self.template_edit = QPlainTextEdit(self)
        self.template_edit.setPlaceholderText(_('Describe the visual style for the cover image'))
        layout.addWidget(self.template_edit, 1)
        self.add_error_and_buttons(layout)
        self.resize(520, 340)

    @property
    def name(self) -> str:
        return ' '.join(self.name_edit.text().split())

    @property
    def template(self) -> str:
        return self.template_edit.toPlainText().strip()

    def problem(self) -> str:
        # on use: only when the reader does this
        from calibre_plugins.bookai.covers.styles import MAX_NAME, MAX_TEMPLATE
        if not self.name:
            return _('Please enter a name for the custom style.')
        if not self.template:
            return _('Please enter instructions for the custom style.')
        if len(self.name) > MAX_NAME:
            return _('A style\'s name can have at most {count} characters.').format(count=MAX_NAME)
        if len(self.template) > MAX_TEMPLATE:
            return _('A style\'s instructions can have at most {count} characters.').format(count=MAX_TEMPLATE)
        return ''



class CoversTab(SettingsTab):
    """The image provider (chosen apart from the one that answers), the reader's own cover
    styles, calibre templates for the text on a cover, the extra instructions, the requests
    at once of a job for many books, and how long replaced covers are kept for Undo.
    provider_tab: the Provider tab, whose providers and settings the image provider's are."""

    def __init__(self, db: 'Cache | None', prefs: 'JSONConfig', provider_tab: ProviderTab,
                 parent: QWidget | None = None):
        self.provider_tab = provider_tab
        super().__init__(db, prefs, parent)

    def setup_ui(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget(scroll)
        inner.setAutoFillBackground(False)
        scroll.viewport().setAutoFillBackground(False)
        layout = QVBoxLayout(inner)
        scroll.setWidget(inner)
        outer.addWidget(scroll)

        row = QHBoxLayout()
        self.image_box = QComboBox(inner)
        self.image_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.image_box.addItem(_('None: no covers are made'), '')
        for name, p in self.provider_tab.providers.items():
            if p.capabilities & Capability.IMAGE_GENERATION:
                self.image_box.addItem(provider_text(p), name)
        label = QLabel(_('Covers are &made by:'), inner)
        label.setBuddy(self.image_box)
        row.addWidget(label)
        row.addWidget(self.image_box)
        self.image_settings_button = QPushButton(_('Its settings…'), inner)
        self.image_settings_button.setToolTip(_('Its key, address and image model: the same settings as on the '
                                                'Provider tab'))
        self.image_settings_button.clicked.connect(self.edit_image_provider)
        row.addWidget(self.image_settings_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.image_state = wrapped_label('', inner)
        self.image_state.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.image_state)

        layout.addWidget(wrapped_label(_(
            'Your own cover styles, offered with calibre\'s when you make a cover (a style is saved from its '
            'prompt there too, with Save style…):'), inner))
        row = QHBoxLayout()
        self.styles_list = QListWidget(inner)
        self.styles_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.styles_list.setMaximumHeight(self.styles_list.fontMetrics().lineSpacing() * 4 + 8)
        # the reader's own styles as shown: [{name, human_name, template}]
        self.saved_cover_styles: list[dict[str, str]] = []
        row.addWidget(self.styles_list, 1)
        buttons = QVBoxLayout()
        self.add_style_button = QPushButton(_('Add st&yle…'), inner)
        self.add_style_button.clicked.connect(self.add_cover_style)
        self.delete_style_button = QPushButton(_('Delete style'), inner)
        self.delete_style_button.clicked.connect(self.delete_cover_styles)
        buttons.addWidget(self.add_style_button)
        buttons.addWidget(self.delete_style_button)
        buttons.addStretch(1)
        row.addLayout(buttons)
        layout.addLayout(row)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.template_edits: dict[str, QLineEdit] = {}  # a template's key: its line, and its editor's button
        self.template_buttons: dict[str, QPushButton] = {}
        for key, text in (('title', _('Title template:')), ('authors', _('Authors template:')),
                          ('series', _('Series template:'))):
            form.addRow(text, self.template_row(key, inner))
        layout.addLayout(form)
        layout.addWidget(wrapped_label(_(
            'Each template is evaluated using the calibre template language. Leave a template blank to use the '
            'corresponding metadata field directly.'), inner))
        layout.addWidget(wrapped_label(_(
            'Extra instructions prepended to every cover generation prompt (regardless of cover style):'), inner))
        self.cover_instructions = QPlainTextEdit(inner)
        self.cover_instructions.setPlaceholderText(_(
            'Optional text prepended to the cover generation instructions for every style'))
        self.cover_instructions.setMaximumHeight(self.cover_instructions.fontMetrics().lineSpacing() * 3 + 12)
        layout.addWidget(self.cover_instructions)

        form = QFormLayout()
        self.at_once_box = QSpinBox(inner)
        self.at_once_box.setRange(1, 8)
        self.at_once_box.setToolTip(_('When covers are made for many books, at most this many requests are sent '
                                      'at a time'))
        form.addRow(_('Requests at once, for many books:'), self.at_once_box)
        self.undo_days_box = QSpinBox(inner)
        self.undo_days_box.setRange(1, 365)
        self.undo_days_box.setSuffix(' ' + _('days'))
        self.undo_days_box.setToolTip(_('A cover Book AI replaced is kept this long in its cache, for Undo cover '
                                        'change'))
        form.addRow(_('Keep replaced covers for Undo:'), self.undo_days_box)
        layout.addLayout(form)
        layout.addStretch(1)
        self.image_box.currentIndexChanged.connect(self.show_image_state)

    def load(self) -> None:
        from calibre_plugins.bookai.covers.styles import saved_styles  # the settings' own: no AI in it
        prefs = self.prefs
        chosen = prefs['image_provider']
        if chosen and self.image_box.findData(chosen) < 0:
            chosen = ''
        self.image_box.setCurrentIndex(max(0, self.image_box.findData(chosen)))
        self.show_image_state()
        self.saved_cover_styles = [{'name': st.name, 'human_name': st.human_name, 'template': st.template}
                                   for st in saved_styles()]
        self.show_cover_styles()
        templates = prefs['cover_templates'] if isinstance(prefs['cover_templates'], dict) else {}
        for key, edit in self.template_edits.items():
            value = templates.get(key)
            edit.setText(value if isinstance(value, str) else '')
        instructions = prefs['cover_instructions']
        self.cover_instructions.setPlainText(instructions if isinstance(instructions, str) else '')
        self.at_once_box.setValue(max(1, min(8, int(prefs['cover_requests_at_once']))))
        self.undo_days_box.setValue(max(1, min(365, int(prefs['cover_undo_days']))))

    def save(self, prefs: 'JSONConfig') -> None:
        prefs['image_provider'] = self.image_box.currentData() or ''
        prefs['cover_styles'] = [dict(st) for st in self.saved_cover_styles]
        prefs['cover_templates'] = {key: edit.text().strip() for key, edit in self.template_edits.items()}
        prefs['cover_instructions'] = self.cover_instructions.toPlainText().strip()
        prefs['cover_requests_at_once'] = self.at_once_box.value()
        prefs['cover_undo_days'] = self.undo_days_box.value()

    def template_row(self, key: str, parent: QWidget) -> QWidget:
        """A calibre template's line, and calibre's template editor beside it."""
        w = QWidget(parent)
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(w)
        edit.setPlaceholderText(_('Leave empty to use the value directly'))
        h.addWidget(edit, 1)
        button = QPushButton(_('Template editor…'), w)
        button.setToolTip(_('Open the calibre template editor'))
        button.clicked.connect(lambda _checked=False, e=edit: self.edit_template(e))
        h.addWidget(button)
        self.template_edits[key], self.template_buttons[key] = edit, button
        return w

    def edit_template(self, edit: QLineEdit) -> None:
        from calibre.gui2.dialogs.template_dialog import TemplateDialog  # calibre's, when asked for
        # a made-up book to try the template on, and the library's fields (else calibre's standard
        # ones): without them, calibre looks for its main window's library, and the E-book viewer,
        # which opens these settings too, has none
        fm = self.db.field_metadata if self.db is not None else FieldMetadata()
        d = TemplateDialog(self, edit.text(), mi=sample_book(), fm=fm)
        d.setWindowTitle(_('Edit template'))
        if d.exec():
            edit.setText(d.rule[1])

    def show_image_state(self) -> None:
        """Whether the image provider chosen is ready, and where its settings are."""
        name = self.image_box.currentData()
        self.image_settings_button.setEnabled(bool(name))
        if not name:
            self.image_state.setText(_('Nothing is sent to make covers until you choose a provider here.'))
            return
        p = self.provider_tab.providers[name]
        missing = p.config.missing_setup()
        state = (_('{provider} needs setting up: {problem}').format(provider=p.display_name, problem=missing)
                 if missing else _('{provider} is ready.').format(provider=p.display_name))
        self.image_state.setText(state + ' ' + _(
            'It is chosen apart from the provider that answers. Its key, address and image model are its '
            'settings on the Provider tab; Its settings… shows them here too.'))

    def edit_image_provider(self) -> None:
        """The image provider's own settings (those of the Provider tab), saved on OK."""
        name = self.image_box.currentData()
        if not name:
            return
        self.provider_tab.keep_typed(name)  # shown on the Provider tab: what is typed there is kept
        d = self.image_settings_dialog = ProviderSettingsDialog(get_provider(name), self)
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        self.provider_tab.saved_elsewhere(name)  # the Provider tab shows it as saved now
        for i in range(self.image_box.count()):
            n = self.image_box.itemData(i)
            if n:
                self.image_box.setItemText(i, provider_text(self.provider_tab.providers[n]))
        self.show_image_state()

    def show_cover_styles(self) -> None:
        self.styles_list.clear()
        for st in self.saved_cover_styles:
            item = QListWidgetItem(st['human_name'], self.styles_list)
            item.setToolTip(st['template'][:500])
            item.setData(Qt.ItemDataRole.UserRole, st['name'])

    def add_cover_style(self) -> None:
        d = StyleEditor(self)
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        taken = {st['name'] for st in self.saved_cover_styles}
        from calibre_plugins.bookai.covers.styles import builtin_names  # on use: only when the reader does this
        taken |= builtin_names()
        base = 'custom_' + d.name.lower().replace(' ', '_')
        name, counter = base, 1
        while name in taken:
            name, counter = f'{base}_{counter}', counter + 1
        self.saved_cover_styles.append({'name': name, 'human_name': d.name, 'template': d.template})
        self.show_cover_styles()

    def delete_cover_styles(self) -> None:
        gone = {item.data(Qt.ItemDataRole.UserRole) for item in self.styles_list.selectedItems()}
        self.saved_cover_styles = [st for st in self.saved_cover_styles if st['name'] not in gone]
        self.show_cover_styles()
