# License: GPLv3 Copyright: the Book AI developers
"""The tabs of the settings that hold quick actions: Library actions (those offered about the
selected books) and Reading (the E-book viewer's, the highlight style Save as note uses, and the
text size of the chat), each with an ActionsEditor, the list to tick, add, edit, remove,
reorder and restore, whose ActionEditor edits one action.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from calibre.constants import numeric_version
from qt.core import (
    QAbstractItemView, QColor, QComboBox, QDialog, QFont, QFormLayout, QHBoxLayout, QIcon, QLabel, QLineEdit,
    QListWidget, QListWidgetItem, QPainter, QPainterPath, QPalette, QPen, QPixmap, QPlainTextEdit, QPointF,
    QPushButton, QRectF, QSpinBox, Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.conversation.actions import (
    QuickAction, action_name, library_actions, library_actions_builtin, viewer_actions, viewer_actions_builtin,
)
from calibre_plugins.bookai.gui.settings_tab import (
    CheckedEditor, SettingsTab, check_state, checked, form_label, wrapped_label,
)
from calibre_plugins.bookai.settings.prefs import CHAT_TEXT_SIZES, chat_text_size

if TYPE_CHECKING:
    from calibre.utils.config import JSONConfig

load_translations()

ACTION_ROLE = Qt.ItemDataRole.UserRole       # a quick action's item: its dict (name, label, template, builtin)


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


def chat_text_sizes() -> tuple[tuple[int, str], ...]:
    """(percent, name) of the text sizes the chat can have, smallest first."""
    names = {85: _('Smaller'), 100: _('Normal'), 115: _('Larger'), 130: _('Much larger'), 150: _('Largest')}
    return tuple((percent, names[percent]) for percent in CHAT_TEXT_SIZES)


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

    def __init__(self, builtin: Sequence[QuickAction], actions: list[QuickAction], explanation: str,
                 variables_help: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.builtin_actions = {a.name: a for a in builtin}
        self.variables_help = variables_help
        self.setup_ui(explanation)
        self.action_list.currentRowChanged.connect(self.action_selected)
        self.action_list.itemDoubleClicked.connect(self.edit_action)
        self.show_actions(actions)

    def show_actions(self, actions: list[QuickAction]) -> None:
        """Show actions (disabled ones included, in their order), the first one selected."""
        self.action_list.clear()
        for a in actions:
            self.action_list.addItem(self.action_item(
                {'name': a.name, 'label': a.label, 'template': a.template, 'builtin': a.builtin}, a.enabled))
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
        """(the item selected, its action): both None when no item is, neither when one is."""
        item = self.action_list.currentItem()
        return (item, item.data(ACTION_ROLE)) if item is not None else (None, None)

    def action_selected(self) -> None:
        item, action = self.current_action()
        row, count = self.action_list.currentRow(), self.action_list.count()
        self.edit_button.setEnabled(item is not None)
        self.remove_button.setEnabled(action is not None and not action['builtin'])
        self.up_button.setEnabled(item is not None and row > 0)
        self.down_button.setEnabled(item is not None and row < count - 1)
        self.restore_button.setEnabled(action is not None and action['builtin'] and self.is_edited(action))
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
        if item is None or action is None:
            return
        d = self.editor(action['label'], action['template'], _('Edit quick action'))
        if d.exec() != QDialog.DialogCode.Accepted:
            return
        self.set_action(item, dict(action, label=d.label, template=d.template))
        self.action_selected()

    def remove_action(self) -> None:
        item, action = self.current_action()
        if item is None or action is None or action['builtin']:
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
        if base is None or action is None:
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




class ActionsTab(SettingsTab):
    """A tab holding an ActionsEditor (self.editor) of the quick actions that builtin() and actions() give."""

    def builtin(self) -> Sequence[QuickAction]:
        """The plugin's own actions."""
        raise NotImplementedError

    def actions(self) -> list[QuickAction]:
        """The actions as the preferences hold them, disabled ones included."""
        raise NotImplementedError

    def explanation(self) -> str:
        """What the actions are for, shown above the list."""
        raise NotImplementedError

    def variables_help(self) -> str:
        """The sentence naming the {variables} a prompt template may use."""
        raise NotImplementedError

    def setup_ui(self) -> None:
        self.tab_layout = QVBoxLayout(self)
        self.editor = ActionsEditor(self.builtin(), [], self.explanation(), self.variables_help(), self)
        self.tab_layout.addWidget(self.editor, 1)

    def load(self) -> None:
        self.editor.show_actions(self.actions())


class LibraryActionsTab(ActionsTab):
    """The quick actions of the library, about the selected books."""

    def builtin(self) -> Sequence[QuickAction]:
        return library_actions_builtin()

    def actions(self) -> list[QuickAction]:
        return library_actions(include_disabled=True)

    def explanation(self) -> str:
        return _('The questions offered with one click in the library, about the selected books. Untick an '
                 'action to hide it; your own actions can be removed, calibre\'s can only be hidden or edited.')

    def variables_help(self) -> str:
        return library_variables_help()

    def save(self, prefs: 'JSONConfig') -> None:
        prefs['library_actions'] = self.editor.actions_pref()


class ReadingTab(ActionsTab):
    """The quick actions of the E-book viewer, about the text selected, the highlight style of notes,
    the text size of the chat (in the library's windows too), and after how many days away from a
    book the viewer's panel offers a recap (conversation/last_read.py)."""

    def builtin(self) -> Sequence[QuickAction]:
        return viewer_actions_builtin()

    def actions(self) -> list[QuickAction]:
        return viewer_actions(include_disabled=True)

    def explanation(self) -> str:
        return _('The questions offered with one click in the E-book viewer, about the text you select. Untick '
                 'an action to hide it; your own actions can be removed, calibre\'s can only be hidden or edited.')

    def variables_help(self) -> str:
        return reading_variables_help()

    def setup_ui(self) -> None:
        super().setup_ui()
        self.highlight_box = QComboBox(self)
        self.highlight_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.highlight_box.addItem(self.highlight_icon(''), _('The viewer\'s current style'), '')
        for name, text in highlight_styles():
            self.highlight_box.addItem(self.highlight_icon(name), text, name)
        self.highlight_box.setToolTip(_(
            'When you save an answer as a note on text that has no highlight yet, the text is highlighted '
            'in this style'))
        after = []
        if numeric_version < (8, 11):  # the viewer highlights in its current style, always
            self.highlight_needs = QLabel(_('(needs calibre 8.11 or later)'), self)
            after.append(self.highlight_needs)
        label = self.labelled_row(_('&Highlight style for notes:'), self.highlight_box, *after)
        if after:
            for w in (self.highlight_box, label, self.highlight_needs):
                w.setEnabled(False)
        self.text_size_box = QComboBox(self)
        self.text_size_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for percent, size in chat_text_sizes():
            self.text_size_box.addItem(_('{size} ({percent}%)').format(size=size, percent=percent), percent)
        self.text_size_box.setToolTip(_(
            'The size of the text of the conversations, in the discussion windows, Ask my library and the '
            'E-book viewer\'s Ask AI panel, beside the rest of calibre\'s text. It applies at once to the '
            'window the settings were opened from, to the other open ones with their next question, and to an '
            'E-book viewer already open when it is opened again.'))
        self.labelled_row(_('Chat text si&ze:'), self.text_size_box)
        self.offer_box = QSpinBox(self)
        self.offer_box.setRange(0, 365)
        self.offer_box.setSuffix(' ' + _('days'))
        self.offer_box.setSpecialValueText(_('Never'))
        self.offer_box.setToolTip(_(
            'When you open a book in the E-book viewer after this many days away from it, Book AI\'s panel offers a '
            'recap since you last read. Nothing is sent until you click it. Never: no offer, and Book AI keeps no '
            'record of when you read'))
        self.labelled_row(_('&Offer a recap when a book is opened after:'), self.offer_box)

    def labelled_row(self, text: str, box: QWidget, *after: QWidget) -> QLabel:
        """A row of its own in the tab: the label of box (form_label()), box, then after; its label."""
        row = QHBoxLayout()
        label, _box = form_label(text, box, self)
        for w in (label, box, *after):
            row.addWidget(w)
        row.addStretch(1)
        self.tab_layout.addLayout(row)
        return label

    def load(self) -> None:
        super().load()
        current = self.prefs['highlight_style'] or ''
        if self.highlight_box.findData(current) < 0:  # a custom style, or one of a later calibre
            self.highlight_box.addItem(self.highlight_icon(''), current.removeprefix('custom-'), current)
        self.highlight_box.setCurrentIndex(self.highlight_box.findData(current))
        self.text_size_box.setCurrentIndex(self.text_size_box.findData(chat_text_size()))
        days = self.prefs['recap_offer_days']
        self.offer_box.setValue(max(0, min(365, days if isinstance(days, int) else 7)))

    def save(self, prefs: 'JSONConfig') -> None:
        prefs['viewer_actions'] = self.editor.actions_pref()
        prefs['highlight_style'] = self.highlight_box.currentData() or ''
        prefs['chat_text_size'] = self.text_size_box.currentData()
        prefs['recap_offer_days'] = self.offer_box.value()

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

