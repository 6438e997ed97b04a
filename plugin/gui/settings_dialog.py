# License: GPLv3 Copyright: the Book AI developers
"""The plugin's settings: which provider answers, the quick actions of the library and
of the E-book viewer, the viewer's highlight style for notes, what is sent about the
books, where answers are saved, and how covers are made (the image provider, the reader's
own cover styles, calibre templates for the text on a cover).

SettingsWidget shows and edits them (validate(), then commit() writes them), with an
ActionsEditor for each list of quick actions; SettingsDialog holds one with OK and
Cancel; show_settings() opens it.
"""

import os

from calibre.constants import numeric_version
from calibre.library.field_metadata import FieldMetadata
from qt.core import (
    QAbstractItemView, QCheckBox, QColor, QComboBox, QDialog, QDialogButtonBox, QFont, QFormLayout, QFrame,
    QHBoxLayout, QIcon, QLabel, QLineEdit, QListWidget, QListWidgetItem, QMessageBox, QPainter, QPainterPath,
    QPalette, QPen, QPixmap, QPlainTextEdit, QPointF, QPushButton, QRectF, QScrollArea, QSize, QSpinBox,
    QStackedWidget, Qt, QTabWidget, QVBoxLayout, QWidget, pyqtSignal,
)

from calibre_plugins.bookai.conversation import forget
from calibre_plugins.bookai.conversation.actions import (
    QuickAction, action_name, library_actions, library_actions_builtin, viewer_actions, viewer_actions_builtin,
)
from calibre_plugins.bookai.conversation.books import (
    allowed_fields, interface_language, language_name, offered_fields, set_allowed_fields,
)
from calibre_plugins.bookai.conversation.notes import save_targets
from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
from calibre_plugins.bookai.providers.base import AIProviderPlugin, Capability
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from calibre_plugins.bookai.settings.prefs import not_saved, plugin_prefs, problems

load_translations()

# the fixed answer languages offered: (ISO 639 code, the name the model is told, in English)
LANGUAGES = (('eng', 'English'), ('fra', 'French'), ('deu', 'German'), ('spa', 'Spanish'), ('ita', 'Italian'),
             ('por', 'Portuguese'), ('nld', 'Dutch'), ('pol', 'Polish'), ('rus', 'Russian'), ('ukr', 'Ukrainian'),
             ('tur', 'Turkish'), ('zho', 'Chinese'), ('jpn', 'Japanese'), ('kor', 'Korean'), ('ara', 'Arabic'),
             ('hin', 'Hindi'), ('swe', 'Swedish'), ('ces', 'Czech'), ('ell', 'Greek'))

ACTION_ROLE = Qt.ItemDataRole.UserRole       # a quick action's item: its dict (name, label, template, builtin)
FIELD_ROLE = Qt.ItemDataRole.UserRole        # a field's item: its key


def wrapped_label(text: str, parent: QWidget) -> QLabel:
    """A label whose text wraps."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    return label


def checked(item: QListWidgetItem) -> bool:
    return item.checkState() == Qt.CheckState.Checked


def check_state(on: bool) -> Qt.CheckState:
    return Qt.CheckState.Checked if on else Qt.CheckState.Unchecked


def field_name(db: object, key: str) -> str:
    """The name calibre shows for a field: the library's when db is given, else calibre's standard one."""
    try:
        if db is not None:
            name = db.field_metadata[key]['name']
        else:
            name = FieldMetadata()[key]['name']
    except Exception:
        name = ''
    return name or key.lstrip('#').replace('_', ' ').capitalize()


def sample_book() -> object:
    """A made-up book to try a template on, as calibre's template editor makes one."""
    from calibre.ebooks.metadata.book.base import Metadata
    mi = Metadata(_('Title'), [_('Author')])
    mi.series, mi.series_index = _('Series'), 3
    mi.tags = [_('Tag 1'), _('Tag 2')]
    mi.languages = ['eng']
    return mi


def library_variables_help() -> str:
    return _('In the prompt, {books_word} becomes "book" or "books" and {is_are} "is" or "are", by the number '
             'of books; {title}, {authors} and {series} are those of the first book.')


def reading_variables_help() -> str:
    return _('In the prompt, {selected} becomes the selected text (best at the end of the prompt) and '
             '{language} the answer language; {title} and {authors} are those of the book.')


# the viewer's builtin highlight styles, as calibre names them (calibre.gui2.viewer.highlights
# builtin_highlight_styles(): color-<which>, decoration-<which>) and shows them (viewer.js)
HIGHLIGHT_COLORS = (  # which, light background, dark background
    ('yellow', '#ffeb6b', '#906e00'), ('green', '#c0ed72', '#306f50'), ('blue', '#add8ff', '#265589'),
    ('red', '#ffb0ca', '#a23e5a'), ('purple', '#d9b2ff', '#505088'))
HIGHLIGHT_DECORATIONS = ('wavy', 'strikeout')


def highlight_styles() -> tuple[tuple[str, str], ...]:
    """(style name, human name) of calibre's builtin highlight styles, in the viewer's order."""
    colors = {'yellow': _('Yellow highlight'), 'green': _('Green highlight'), 'blue': _('Blue highlight'),
              'red': _('Pink highlight'), 'purple': _('Purple highlight')}
    decorations = {'wavy': _('Red wavy underline'), 'strikeout': _('Red strikeout')}
    return tuple((f'color-{which}', colors[which]) for which, light, dark in HIGHLIGHT_COLORS) + tuple(
        (f'decoration-{which}', decorations[which]) for which in HIGHLIGHT_DECORATIONS)


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


class ActionEditor(CheckedEditor):
    """Edit a quick action's label and prompt template; variables_help names the {variables} it may use."""

    def __init__(self, label: str = '', template: str = '', title: str = '', parent: QWidget | None = None,
                 variables_help: str = ''):
        super().__init__(parent)
        self.setWindowTitle(title or _('Quick action'))
        self.variables_help = variables_help or library_variables_help()
        self.setup_ui()
        self.label_edit.setText(label)
        self.template_edit.setPlainText(template)
        self.resize(560, 340)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.label_edit = QLineEdit(self)
        self.label_edit.setPlaceholderText(_('The name shown in the menu'))
        form.addRow(_('&Label:'), self.label_edit)
        self.template_edit = QPlainTextEdit(self)
        self.template_edit.setPlaceholderText(_('What the AI is asked, in any language'))
        form.addRow(_('&Prompt template:'), self.template_edit)
        layout.addLayout(form, 1)
        self.help = wrapped_label(self.variables_help, self)
        self.help.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.help)
        self.add_error_and_buttons(layout, self.label_edit, self.template_edit)

    @property
    def label(self) -> str:
        return self.label_edit.text().strip()

    @property
    def template(self) -> str:
        return self.template_edit.toPlainText().strip()

    def problem(self) -> str:
        """What is missing for the action to be saved, in a sentence; '' when nothing is."""
        if not self.label:
            return _('The action needs a label: it is how you find it in the menu.')
        if not self.template:
            return _('The action needs a prompt template: it is what is asked.')
        return ''

    def refused(self) -> None:
        (self.label_edit if not self.label else self.template_edit).setFocus()


class ActionsEditor(QWidget):
    """A list of quick actions to tick, add, edit, remove (only the user's own), reorder and restore.

    builtin: the plugin's own actions (QuickAction); actions: the actions as they are now, disabled
    ones included, in their order; explanation: what the actions are for, shown above the list;
    variables_help: the sentence naming the {variables} a prompt template may use.
    actions_pref() gives them back as the preferences keep them.
    """

    def __init__(self, builtin: list[QuickAction], actions: list[QuickAction], explanation: str, variables_help: str,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.builtin_actions = {a.name: a for a in builtin}
        self.variables_help = variables_help
        self.setup_ui(explanation)
        for a in actions:
            self.action_list.addItem(self.action_item(
                {'name': a.name, 'label': a.label, 'template': a.template, 'builtin': a.builtin}, a.enabled))
        self.action_list.currentRowChanged.connect(self.action_selected)
        self.action_list.itemDoubleClicked.connect(self.edit_action)
        self.action_list.setCurrentRow(0)
        self.action_selected()

    def setup_ui(self, explanation: str) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.explanation = wrapped_label(explanation, self)
        layout.addWidget(self.explanation)
        row = QHBoxLayout()
        layout.addLayout(row, 1)
        self.action_list = QListWidget(self)
        self.action_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        row.addWidget(self.action_list, 1)
        buttons = QVBoxLayout()
        row.addLayout(buttons)

        def button(text, slot, tip=''):
            b = QPushButton(text, self)
            b.clicked.connect(slot)
            if tip:
                b.setToolTip(tip)
            buttons.addWidget(b)
            return b

        self.add_button = button(_('&Add...'), self.add_action)
        self.edit_button = button(_('&Edit...'), self.edit_action)
        self.remove_button = button(_('&Remove'), self.remove_action,
                                    _('Only your own actions can be removed: untick the others to hide them'))
        self.up_button = button(_('Move &up'), lambda: self.move_action(-1))
        self.down_button = button(_('Move &down'), lambda: self.move_action(1))
        self.restore_button = button(_('Restore de&fault'), self.restore_action,
                                     _('Give this action back its original label and prompt'))
        buttons.addStretch(1)
        self.action_prompt = wrapped_label('', self)
        self.action_prompt.setTextFormat(Qt.TextFormat.PlainText)
        self.action_prompt.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action_prompt.setMinimumHeight(self.action_prompt.fontMetrics().lineSpacing() * 3)
        self.action_prompt.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.action_prompt)

    def action_item(self, action: dict, enabled: bool = True) -> QListWidgetItem:
        item = QListWidgetItem()
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(check_state(enabled))
        self.set_action(item, action)
        return item

    def set_action(self, item: QListWidgetItem, action: dict) -> None:
        item.setData(ACTION_ROLE, action)
        text = action['label']
        if action['builtin'] and self.is_edited(action):
            text += ' ' + _('(edited)')
        item.setText(text)
        item.setToolTip(action['template'])

    def is_edited(self, action: dict) -> bool:
        """Whether action is a builtin one with another label or prompt than its own."""
        base = self.builtin_actions.get(action['name'])
        return base is not None and (action['label'], action['template']) != (base.label, base.template)

    def current_action(self) -> tuple[QListWidgetItem | None, dict | None]:
        item = self.action_list.currentItem()
        return (item, item.data(ACTION_ROLE)) if item is not None else (None, None)

    def action_selected(self) -> None:
        item, action = self.current_action()
        row, count = self.action_list.currentRow(), self.action_list.count()
        self.edit_button.setEnabled(item is not None)
        self.remove_button.setEnabled(item is not None and not action['builtin'])
        self.up_button.setEnabled(item is not None and row > 0)
        self.down_button.setEnabled(item is not None and row < count - 1)
        self.restore_button.setEnabled(item is not None and action['builtin'] and self.is_edited(action))
        self.action_prompt.setText(_('Prompt: {prompt}').format(prompt=action['template']) if action else '')

    def actions_shown(self) -> list[dict]:
        return [self.action_list.item(i).data(ACTION_ROLE) for i in range(self.action_list.count())]

    def editor(self, label: str = '', template: str = '', title: str = '') -> ActionEditor:
        return ActionEditor(label, template, title, self, self.variables_help)

    def add_action(self) -> None:
        d = self.editor(title=_('New quick action'))
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        taken = {a['name'] for a in self.actions_shown()} | set(self.builtin_actions)
        action = {'name': action_name(d.label, taken), 'label': d.label, 'template': d.template, 'builtin': False}
        self.action_list.addItem(self.action_item(action))
        self.action_list.setCurrentRow(self.action_list.count() - 1)

    def edit_action(self) -> None:
        item, action = self.current_action()
        if item is None:
            return
        d = self.editor(action['label'], action['template'], _('Edit quick action'))
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        self.set_action(item, dict(action, label=d.label, template=d.template))
        self.action_selected()

    def remove_action(self) -> None:
        item, action = self.current_action()
        if item is None or action['builtin']:
            return
        self.action_list.takeItem(self.action_list.row(item))
        self.action_selected()

    def move_action(self, delta: int) -> None:
        row = self.action_list.currentRow()
        target = row + delta
        if row < 0 or not 0 <= target < self.action_list.count():
            return
        item = self.action_list.takeItem(row)
        self.action_list.insertItem(target, item)
        self.action_list.setCurrentRow(target)
        self.action_selected()

    def restore_action(self) -> None:
        item, action = self.current_action()
        base = self.builtin_actions.get(action['name']) if action else None
        if base is None:
            return
        self.set_action(item, dict(action, label=base.label, template=base.template))
        self.action_selected()

    def actions_pref(self) -> list[dict]:
        """The actions as the preferences keep them (a list of {name, label, template, enabled}),
        in the order shown. A builtin action's unchanged label or template is saved empty, so that
        it follows calibre's language and the plugin's updates."""
        saved = []
        for i in range(self.action_list.count()):
            item = self.action_list.item(i)
            a = item.data(ACTION_ROLE)
            base = self.builtin_actions.get(a['name']) if a['builtin'] else None
            saved.append({
                'name': a['name'],
                'label': '' if base is not None and a['label'] == base.label else a['label'],
                'template': '' if base is not None and a['template'] == base.template else a['template'],
                'enabled': checked(item),
            })
        return saved


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


class SettingsWidget(QWidget):
    """Every setting of the plugin, in tabs; validate(), then commit() writes them."""

    carried_over = pyqtSignal()  # calibre's AI settings were carried over: what is shown is out of date

    def __init__(self, db: object = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.db = db  # a calibre library's new_api, or None
        self.prefs = plugin_prefs()
        self.config_widgets = {}  # provider name: its ProviderConfigWidget, made when first shown
        self.config_pages = {}    # provider name: the scroll area holding it in the stack
        self.setup_ui()

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.file_problems = wrapped_label('', self)  # a settings file that could not be read: said here
        self.file_problems.setStyleSheet('QLabel { color: red }')
        layout.addWidget(self.file_problems)
        self.tabs = QTabWidget(self)
        layout.addWidget(self.tabs)
        self.tabs.addTab(self.provider_tab(), _('&Provider'))
        self.tabs.addTab(self.library_tab(), _('&Library actions'))
        self.tabs.addTab(self.reading_tab(), _('Read&ing'))
        self.tabs.addTab(self.fields_tab(), _('&Book fields'))
        self.tabs.addTab(self.sent_tab(), _('&Sent to the AI'))
        self.tabs.addTab(self.save_tab(), _('Sa&ve to book'))
        # every letter of "Covers" is some other tab's or field's Alt key: this one has a free one
        self.tabs.addTab(self.covers_tab(), _('Cover art&work'))
        self.show_file_problems()

    # the tabs, by the name another window opens them at (show_settings(tab=...))
    TABS = ('provider', 'library-actions', 'reading', 'book-fields', 'sent-to-the-ai', 'save-to-book', 'covers')

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

    # Provider {{{

    def provider_tab(self) -> QWidget:
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        self.providers = {name: get_provider(name) for name in PROVIDERS}
        row = QHBoxLayout()
        self.provider_box = QComboBox(tab)
        self.provider_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for name in self.providers:
            self.provider_box.addItem('', name)
        self.show_provider_states()
        label = QLabel(_('&Answers come from:'), tab)
        label.setBuddy(self.provider_box)
        row.addWidget(label)
        row.addWidget(self.provider_box)
        row.addStretch(1)
        layout.addLayout(row)
        chosen = self.prefs['provider']
        self.none_chosen = wrapped_label(_(
            'No provider is chosen yet: nothing is sent anywhere until you choose one here and click OK.'), tab)
        self.none_chosen.setStyleSheet('QLabel { font-weight: bold }')
        self.none_chosen.setVisible(chosen not in self.providers)
        layout.addWidget(self.none_chosen)
        self.provider_status = wrapped_label('', tab)
        layout.addWidget(self.provider_status)
        self.provider_stack = QStackedWidget(tab)
        layout.addWidget(self.provider_stack, 1)
        self.import_button = QPushButton(_("I&mport from calibre's AI..."), tab)
        self.import_button.setToolTip(_("Carry over the providers, keys and choices of calibre's own AI (calibre 8.11 "
                                        'and later): you see what was found before anything changes'))
        self.import_button.clicked.connect(self.import_from_calibre)
        layout.addWidget(self.import_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.provider_box.currentIndexChanged.connect(self.show_provider)
        index = self.provider_box.findData(chosen) if chosen in self.providers else 0
        self.provider_box.setCurrentIndex(max(0, index))
        self.show_provider()
        return tab

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
            self.provider_box.setItemText(i, self.provider_text(p))
            self.provider_box.setItemData(i, p.missing_setup() or _('Ready to use'), Qt.ItemDataRole.ToolTipRole)

    def provider_text(self, p: AIProviderPlugin) -> str:
        text = p.display_name
        if p.is_local:
            text += ' ' + _('(local)')
        state = _('ready') if not p.missing_setup() else _('needs setting up')
        return f'{text} \u2014 {state}'

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
        missing = p.missing_setup()
        self.provider_status.setText(missing)
        self.provider_status.setVisible(bool(missing))

    # }}}

    # Library actions {{{

    def library_tab(self) -> QWidget:
        tab, layout, self.library_editor = self.actions_tab(
            library_actions_builtin(), library_actions(include_disabled=True), _(
                'The questions offered with one click in the library, about the selected books. Untick an '
                'action to hide it; your own actions can be removed, calibre\'s can only be hidden or edited.'),
            library_variables_help())
        return tab

    def actions_tab(self, builtin: list[QuickAction], actions: list[QuickAction], explanation: str,
                    variables_help: str) -> tuple[QWidget, QVBoxLayout, ActionsEditor]:
        """A tab holding an ActionsEditor: (tab, its layout, the editor)."""
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        editor = ActionsEditor(builtin, actions, explanation, variables_help, tab)
        layout.addWidget(editor, 1)
        return tab, layout, editor

    # }}}

    # Reading {{{

    def reading_tab(self) -> QWidget:
        tab, layout, self.viewer_editor = self.actions_tab(
            viewer_actions_builtin(), viewer_actions(include_disabled=True), _(
                'The questions offered with one click in the E-book viewer, about the text you select. Untick '
                'an action to hide it; your own actions can be removed, calibre\'s can only be hidden or edited.'),
            reading_variables_help())
        row = QHBoxLayout()
        self.highlight_box = QComboBox(tab)
        self.highlight_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.highlight_box.addItem(self.highlight_icon(''), _('The viewer\'s current style'), '')
        for name, text in highlight_styles():
            self.highlight_box.addItem(self.highlight_icon(name), text, name)
        current = self.prefs['highlight_style'] or ''
        if self.highlight_box.findData(current) < 0:  # a custom style, or one of a later calibre
            self.highlight_box.addItem(self.highlight_icon(''), current.removeprefix('custom-'), current)
        self.highlight_box.setCurrentIndex(self.highlight_box.findData(current))
        self.highlight_box.setToolTip(_(
            'When you save an answer as a note on text that has no highlight yet, the text is highlighted '
            'in this style'))
        label = QLabel(_('&Highlight style for notes:'), tab)
        label.setBuddy(self.highlight_box)
        row.addWidget(label)
        row.addWidget(self.highlight_box)
        if numeric_version < (8, 11):  # the viewer highlights in its current style, always
            self.highlight_box.setEnabled(False)
            label.setEnabled(False)
            self.highlight_needs = QLabel(_('(needs calibre 8.11 or later)'), tab)
            self.highlight_needs.setEnabled(False)
            row.addWidget(self.highlight_needs)
        row.addStretch(1)
        layout.addLayout(row)
        return tab

    def highlight_icon(self, name: str) -> QIcon:
        """A small picture of a builtin highlight style: its colour, or its red line; blank for another name."""
        size = self.highlight_box.iconSize()
        dpr = self.devicePixelRatioF()
        pixmap = QPixmap(size * dpr)
        pixmap.setDevicePixelRatio(dpr)
        pixmap.fill(Qt.GlobalColor.transparent)
        w, h = size.width(), size.height()
        p = QPainter(pixmap)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        kind, which = name.split('-', 1) if '-' in name else ('', '')
        if kind == 'color':
            light, dark = next((light, dark) for c, light, dark in HIGHLIGHT_COLORS if c == which)
            is_dark = self.palette().color(QPalette.ColorRole.Window).lightnessF() < 0.5
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(dark if is_dark else light))
            p.drawRoundedRect(QRectF(1, 2, w - 2, h - 4), 3, 3)
        elif kind == 'decoration':  # letters, underlined with a red wave or struck out in red
            font = QFont(self.font())
            font.setPixelSize(max(8, round(h * 0.7)))
            p.setFont(font)
            p.setPen(self.palette().color(QPalette.ColorRole.Text))
            box = QRectF(0, 0, w, h * 0.8)
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, 'ab')
            p.setPen(QPen(QColor('red'), max(1.0, h / 12)))
            if which == 'wavy':
                path = QPainterPath(QPointF(1, h * 0.86))
                steps = 6
                for i in range(1, steps + 1):
                    path.lineTo(QPointF(1 + (w - 2) * i / steps, h * (0.76 if i % 2 else 0.96)))
                p.strokePath(path, p.pen())
            else:
                y = box.center().y() + 1
                p.drawLine(QPointF(1, y), QPointF(w - 1, y))
        p.end()
        return QIcon(pixmap)

    # }}}

    # Book fields {{{

    def fields_tab(self) -> QWidget:
        """The fields of the books that may be sent: every one calibre offers its own AI, for the
        library the settings were opened from (the standard fields only without one)."""
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        self.fields_intro = wrapped_label(_(
            'The title and authors of the books you ask about are always sent to the AI. Tick the other fields '
            'it may be told about; nothing else about your books is sent, unless you turn on passages of the '
            'book\'s own text.'), tab)
        layout.addWidget(self.fields_intro)
        if self.db is not None:
            self.library_id = self.db.library_id
            fm = self.db.field_metadata
            path = getattr(getattr(self.db, 'backend', None), 'library_path', '') or ''
            where = _('Custom fields are chosen for this library ({library}); the other fields for every '
                      'library.').format(library=os.path.basename(os.path.normpath(path)) if path else self.library_id)
        else:
            self.library_id = ''
            fm = FieldMetadata()
            where = _('Opened here, the settings have no calibre library: only the standard fields are shown, chosen '
                      'for every library. Custom fields are chosen for each library in the Book AI settings of '
                      'calibre\'s main window.')
        self.fields_where = wrapped_label(where, tab)
        self.fields_where.setTextFormat(Qt.TextFormat.PlainText)  # the library's folder name is not markup
        layout.addWidget(self.fields_where)
        self.field_list = QListWidget(tab)
        allowed = allowed_fields(self.library_id)
        for key in offered_fields(fm, custom=self.db is not None):
            item = QListWidgetItem(fm[key].get('name') or key, self.field_list)
            item.setToolTip(key)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
            item.setData(FIELD_ROLE, key)
            item.setCheckState(check_state(key in allowed))
        layout.addWidget(self.field_list, 1)
        row = QHBoxLayout()
        for text, on in ((_('Select &all'), True), (_('Select &none'), False)):
            button = QPushButton(text, tab)
            button.clicked.connect(lambda _checked=False, on=on: self.check_all_fields(on))
            row.addWidget(button)
            if on:
                self.all_fields_button = button
            else:
                self.no_fields_button = button
        row.addStretch(1)
        layout.addLayout(row)
        return tab

    def check_all_fields(self, on: bool) -> None:
        """Tick every field (on), or none."""
        for i in range(self.field_list.count()):
            self.field_list.item(i).setCheckState(check_state(on))

    def fields_pref(self) -> list[str]:
        """The fields ticked, by lookup name, in the order shown."""
        return [self.field_list.item(i).data(FIELD_ROLE) for i in range(self.field_list.count())
                if checked(self.field_list.item(i))]

    # }}}

    # Sent to the AI {{{

    def sent_tab(self) -> QWidget:
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        layout.addWidget(wrapped_label(_(
            'Which fields of the books are sent is chosen in Book fields. Passages of the book\'s own text are '
            'sent only when you turn them on here.'), tab))

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.confirm_box = QComboBox(tab)
        for value, text in (
                ('first', _('Show what will be sent before the first question of each conversation')),
                ('always', _('Show what will be sent before every question')),
                ('never', _('Never: send without asking'))):
            self.confirm_box.addItem(text, value)
        self.confirm_box.setCurrentIndex(max(0, self.confirm_box.findData(self.prefs['confirm_send'])))
        self.confirm_box.setToolTip(_('Local providers run on this computer: nothing is asked before using them'))
        form.addRow(*self.form_label(_('&Confirm before sending to an online provider:'), self.confirm_box, tab))
        self.language_box = QComboBox(tab)
        ui = interface_language() or 'English'
        self.language_box.addItem(_('calibre\'s interface language ({language})').format(language=ui), 'interface')
        self.language_box.addItem(_('The book\'s language (else calibre\'s interface language)'), 'book')
        self.language_box.addItem(_('Do not ask for a language'), 'never')
        for code, english in LANGUAGES:
            shown = language_name(code, localize=True)  # in the reader's language, where calibre knows it
            self.language_box.addItem(shown if shown and shown != language_name(code) else english, english)
        current = self.prefs['answer_language'] or 'interface'
        if self.language_box.findData(current) < 0:
            self.language_box.addItem(current, current)
        self.language_box.setCurrentIndex(self.language_box.findData(current))
        self.language_box.setToolTip(_('The AI is asked to answer in this language, when it can'))
        form.addRow(*self.form_label(_('Answer lan&guage:'), self.language_box, tab))
        self.book_text_box = QCheckBox(_('Send passages of the book\'s own &text with questions'), tab)
        self.book_text_box.setChecked(bool(self.prefs['book_text']))
        self.book_text_box.setToolTip(_(
            'Off: only the book\'s details are sent, and the AI answers from what it knows. On: passages up to '
            'where you are reading go with each question, and the answer cites them. A book\'s window can '
            'choose otherwise for that book. Before book text goes to an online provider, you see it and confirm.'))
        form.addRow(self.book_text_box)
        self.budget_box = QSpinBox(tab)
        self.budget_box.setRange(200, 100_000)
        self.budget_box.setSingleStep(500)
        self.budget_box.setSuffix(' ' + _('tokens'))
        self.budget_box.setValue(int(self.prefs['book_text_budget']))
        self.budget_box.setToolTip(_('At most this much of the book\'s text goes with one question (a token is '
                                     'about four characters of English)'))
        form.addRow(*self.form_label(_('Book te&xt per question, at most:'), self.budget_box, tab))
        self.meaning_box = QCheckBox(_('Rank passages by &meaning too, with a provider on this computer'), tab)
        self.meaning_box.setChecked(self.prefs['retrieval'] == 'embeddings')
        self.meaning_box.setToolTip(_(
            'Passages are ranked by the words they share with your question. With this, the provider\'s '
            'embeddings rank them by meaning as well. Only providers on this computer are used for it: the whole '
            'book goes to the provider to be embedded.'))
        form.addRow(self.meaning_box)
        layout.addLayout(form)
        layout.addStretch(1)
        row = QHBoxLayout()
        self.forget_button = QPushButton(_('&Forget everything...'), tab)
        self.forget_button.setToolTip(_('Delete the API keys, the saved conversations, the cached text of '
                                        'books and the choices made for each book'))
        self.forget_button.clicked.connect(self.forget_everything)
        row.addWidget(self.forget_button)
        self.forgotten = wrapped_label('', tab)
        row.addWidget(self.forgotten, 1)
        layout.addLayout(row)
        return tab

    def forget_everything(self) -> None:
        """Forget everything, once the reader confirmed it, and say what was deleted."""
        box = QMessageBox(QMessageBox.Icon.Warning, _('Forget everything'), _(
            'Delete everything Book AI keeps about you, now and for good?'), QMessageBox.StandardButton.Cancel, self)
        box.setInformativeText('\n'.join((
            _('These are deleted:'),
            '\u2022 ' + _('the API keys of every provider, from your system\'s keyring and from calibre\'s '
                           'configuration folder'),
            '\u2022 ' + _('your saved conversations, in every library'),
            '\u2022 ' + _('the text of books kept to answer questions faster (read again when needed)'),
            '\u2022 ' + _('the choices made for each book: how much of its text is sent, and "don\'t ask again"'),
            '',
            _('Your books, their notes, columns and highlights are not touched, nor are the other settings.'))))
        delete = box.addButton(_('&Forget everything'), QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        self.forget_confirmation = box  # for the tests
        box.exec()
        if box.clickedButton() is not delete:
            return
        try:
            done = forget.forget_everything()
        except Exception as e:
            from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
            return error_dialog(self, _('Not everything was forgotten'), str(e), show=True)
        finally:  # the providers shown read their keys again
            self.providers = {name: get_provider(name) for name in self.providers}
            for w in self.config_widgets.values():
                w.key_forgotten()
            self.show_provider_states()
            self.show_provider()
        self.forgotten.setText(_(
            'Forgotten. API keys: {keys}; conversations: {conversations}; cached book texts: {books}; '
            'choices made for books: {choices}.').format(
                keys=done.keys, conversations=done.conversations, books=done.cached_books, choices=done.book_choices))

    def form_label(self, text: str, buddy: QWidget, parent: QWidget) -> tuple[QLabel, QWidget]:
        label = QLabel(text, parent)
        label.setBuddy(buddy)
        return label, buddy

    # }}}

    # Save to book {{{

    def save_tab(self) -> QWidget:
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        layout.addWidget(wrapped_label(_(
            'An answer you save to a book is added at the end of this field, with the date and the model '
            'that wrote it. What the field holds already is never replaced.'), tab))
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.save_box = QComboBox(tab)
        if self.db is None:
            self.save_box.addItem(field_name(None, 'comments'), 'comments')
        else:
            for key, name, kind in save_targets(self.db):
                self.save_box.addItem(name if key == 'comments' else f'{name} ({key})', key)
        current = self.prefs['save_field'] or 'comments'
        if self.save_box.findData(current) < 0:
            self.save_box.addItem(_('{column} (not in this library)').format(column=current) if self.db is not None
                                  else current, current)
        self.save_box.setCurrentIndex(self.save_box.findData(current))
        form.addRow(*self.form_label(_('Save answers &to:'), self.save_box, tab))
        layout.addLayout(form)
        layout.addWidget(wrapped_label(_(
            'Besides Comments, the columns you made of type "Long text, like comments" are offered.'), tab))
        layout.addStretch(1)
        return tab

    # }}}


    # Cover artwork {{{

    def covers_tab(self) -> QWidget:
        """The image provider (chosen apart from the one that answers), the reader's own cover
        styles, calibre templates for the text on a cover, the extra instructions, the requests
        at once of a job for many books, and how long replaced covers are kept for Undo."""
        from calibre_plugins.bookai.covers.styles import saved_styles  # the settings' own: no AI in it
        tab = QWidget(self)
        outer = QVBoxLayout(tab)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea(tab)
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
        for name, p in self.providers.items():
            if p.capabilities & Capability.IMAGE_GENERATION:
                self.image_box.addItem(self.provider_text(p), name)
        chosen = self.prefs['image_provider']
        if chosen and self.image_box.findData(chosen) < 0:
            chosen = ''
        self.image_box.setCurrentIndex(max(0, self.image_box.findData(chosen)))
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
        self.image_box.currentIndexChanged.connect(self.show_image_state)
        self.show_image_state()

        layout.addWidget(wrapped_label(_(
            'Your own cover styles, offered with calibre\'s when you make a cover (a style is saved from its '
            'prompt there too, with Save style…):'), inner))
        row = QHBoxLayout()
        self.styles_list = QListWidget(inner)
        self.styles_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.styles_list.setMaximumHeight(self.styles_list.fontMetrics().lineSpacing() * 4 + 8)
        self.saved_cover_styles = [{'name': st.name, 'human_name': st.human_name, 'template': st.template}
                                   for st in saved_styles()]
        self.show_cover_styles()
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
        templates = self.prefs['cover_templates'] if isinstance(self.prefs['cover_templates'], dict) else {}
        self.template_edits, self.template_buttons = {}, {}
        for key, text in (('title', _('Title template:')), ('authors', _('Authors template:')),
                          ('series', _('Series template:'))):
            value = templates.get(key)
            form.addRow(text, self.template_row(key, value if isinstance(value, str) else '', inner))
        layout.addLayout(form)
        layout.addWidget(wrapped_label(_(
            'Each template is evaluated using the calibre template language. Leave a template blank to use the '
            'corresponding metadata field directly.'), inner))
        layout.addWidget(wrapped_label(_(
            'Extra instructions prepended to every cover generation prompt (regardless of cover style):'), inner))
        self.cover_instructions = QPlainTextEdit(inner)
        self.cover_instructions.setPlaceholderText(_(
            'Optional text prepended to the cover generation instructions for every style'))
        instructions = self.prefs['cover_instructions']
        self.cover_instructions.setPlainText(instructions if isinstance(instructions, str) else '')
        self.cover_instructions.setMaximumHeight(self.cover_instructions.fontMetrics().lineSpacing() * 3 + 12)
        layout.addWidget(self.cover_instructions)

        form = QFormLayout()
        self.at_once_box = QSpinBox(inner)
        self.at_once_box.setRange(1, 8)
        self.at_once_box.setValue(max(1, min(8, int(self.prefs['cover_requests_at_once']))))
        self.at_once_box.setToolTip(_('When covers are made for many books, at most this many requests are sent '
                                      'at a time'))
        form.addRow(_('Requests at once, for many books:'), self.at_once_box)
        self.undo_days_box = QSpinBox(inner)
        self.undo_days_box.setRange(1, 365)
        self.undo_days_box.setSuffix(' ' + _('days'))
        self.undo_days_box.setValue(max(1, min(365, int(self.prefs['cover_undo_days']))))
        self.undo_days_box.setToolTip(_('A cover Book AI replaced is kept this long in its cache, for Undo cover '
                                        'change'))
        form.addRow(_('Keep replaced covers for Undo:'), self.undo_days_box)
        layout.addLayout(form)
        layout.addStretch(1)
        return tab

    def template_row(self, key: str, value: str, parent: QWidget) -> QWidget:
        """A calibre template's line, and calibre's template editor beside it."""
        w = QWidget(parent)
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(w)
        edit.setText(value)
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
        p = self.providers[name]
        missing = p.missing_setup()
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
        if name in self.config_widgets:  # shown on the Provider tab: what is typed there is kept
            self.config_widgets[name].commit()
        d = self.image_settings_dialog = ProviderSettingsDialog(get_provider(name), self)
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        self.providers[name] = get_provider(name)
        if name in self.config_widgets:  # the Provider tab shows it as saved now
            page = self.config_pages.pop(name)
            self.config_widgets.pop(name)
            self.provider_stack.removeWidget(page)
            page.deleteLater()
            if self.selected_provider == name:
                self.show_provider()
        self.show_provider_states()
        for i in range(self.image_box.count()):
            n = self.image_box.itemData(i)
            if n:
                self.image_box.setItemText(i, self.provider_text(self.providers[n]))
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

    def write_covers(self) -> None:
        prefs = self.prefs
        prefs['image_provider'] = self.image_box.currentData() or ''
        prefs['cover_styles'] = [dict(st) for st in self.saved_cover_styles]
        prefs['cover_templates'] = {key: edit.text().strip() for key, edit in self.template_edits.items()}
        prefs['cover_instructions'] = self.cover_instructions.toPlainText().strip()
        prefs['cover_requests_at_once'] = self.at_once_box.value()
        prefs['cover_undo_days'] = self.undo_days_box.value()

    # }}}

    def problem(self) -> str:
        """'' when everything shown can be saved, else what is wrong, in a sentence."""
        for name, w in self.config_widgets.items():
            problem = w.validate()  # shown under its field too
            if problem:
                self.tabs.setCurrentIndex(0)
                self.provider_box.setCurrentIndex(self.provider_box.findData(name))
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
        for w in self.config_widgets.values():
            w.commit()
        prefs = self.prefs
        prefs['provider'] = self.selected_provider or ''
        prefs['library_actions'] = self.library_editor.actions_pref()
        prefs['viewer_actions'] = self.viewer_editor.actions_pref()
        prefs['highlight_style'] = self.highlight_box.currentData() or ''
        set_allowed_fields(self.library_id, self.fields_pref())
        prefs['confirm_send'] = self.confirm_box.currentData()
        prefs['answer_language'] = self.language_box.currentData()
        prefs['save_field'] = self.save_box.currentData()
        prefs['book_text'] = self.book_text_box.isChecked()
        prefs['book_text_budget'] = self.budget_box.value()
        prefs['retrieval'] = 'embeddings' if self.meaning_box.isChecked() else 'bm25'
        self.write_covers()


class SettingsDialog(QDialog):
    """The settings, with OK and Cancel."""

    def __init__(self, db: object = None, parent: QWidget | None = None, tab: str = ''):
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


def show_settings(parent: QWidget | None = None, db: object = None, tab: str = '') -> bool:
    """Open the settings (modal), on the tab named (a key of SettingsWidget.TABS); True if they were saved."""
    return SettingsDialog(db, parent, tab).exec() == QDialog.DialogCode.Accepted
