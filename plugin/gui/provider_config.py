# License: GPLv3 Copyright: the Book AI developers
"""The settings of one provider, built from the options it declares: ProviderConfigWidget(provider).
Each value is checked as its Option says (providers.options.Option.check): what is wrong is
shown in red under its field, and nothing is saved while anything is wrong. A value saved that
cannot be used (an edited file) is shown as the default, with what was wrong under the field."""

from typing import TYPE_CHECKING

from qt.core import (
    QApplication, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
    QPlainTextEdit, QPushButton, QSpinBox, Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.providers.base import AIProviderPlugin
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option, parse_headers, unusable_values
from calibre_plugins.bookai.settings.keyring import StoreError
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import not_kept

if TYPE_CHECKING:
    from calibre_plugins.bookai.gui.model_chooser import ModelChooser

load_translations()


class ModelPicker(QWidget):
    """An editable model id (any id can be typed or pasted), the live list to pick from,
    Refresh and Copy; Choose… for a provider with a model chooser (add_choose_button)."""

    def __init__(self, value: str, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.box = QComboBox(self)
        self.box.setEditable(True)
        self.box.setMinimumContentsLength(28)
        self.box.lineEdit().setPlaceholderText(_('Automatic'))
        self.box.setEditText(value or '')
        self.refresh_button = QPushButton(_('&Refresh list'), self)
        self.copy_button = QPushButton(_('Copy'), self)
        self.copy_button.setToolTip(_('Copy the model id'))
        self.copy_button.clicked.connect(lambda: QApplication.clipboard().setText(self.value()))
        layout.addWidget(self.box, 1)
        layout.addWidget(self.refresh_button)
        layout.addWidget(self.copy_button)
        self.choose_button: QPushButton | None = None

    def add_choose_button(self) -> QPushButton:
        """Add Choose… (the model chooser, gui/model_chooser.py) beside the box, and return it."""
        button = self.choose_button = QPushButton(_('C&hoose…'), self)
        button.setToolTip(_('Search the models, with their prices and details'))
        self.layout().insertWidget(1, button)
        return button

    def set_value(self, model_id: str) -> None:
        """Show model_id ('' for automatic)."""
        self.box.setEditText(model_id)

    def value(self) -> str:
        """The model id shown."""
        return self.box.currentText().strip()

    def set_models(self, models: list[Model]) -> None:
        """Offer models to pick from, keeping the id shown."""
        current = self.value()
        self.box.clear()
        for m in models:
            self.box.addItem(m.id, m.id)
            if m.display_name != m.id:
                self.box.setItemData(self.box.count() - 1, m.display_name, Qt.ItemDataRole.ToolTipRole)
        self.box.setEditText(current)


class ProviderConfigWidget(QWidget):
    """The settings of provider: a field for each of its options, Test connection, and commit()."""

    def __init__(self, provider: AIProviderPlugin, parent: QWidget | None = None):
        super().__init__(parent)
        self.provider = provider
        self.editors: dict[str, QWidget] = {}
        self.problems: dict[str, QLabel] = {}  # option name: the label under its field saying what is wrong
        self.setup_ui()

    def setup_ui(self) -> None:
        p = self.provider
        outer = QVBoxLayout(self)
        about = QLabel(p.description, self)
        about.setWordWrap(True)
        outer.addWidget(about)
        if p.connection.is_local:
            local = QLabel(_('Runs on this computer: nothing you send leaves it.'), self)
            outer.addWidget(local)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        outer.addLayout(form)
        for option in p.all_options():
            editor = self.editor_for(option)
            self.editors[option.name] = editor
            label = QLabel(option.label + ':', self)
            label.setBuddy(editor)
            if option.help:
                editor.setToolTip(option.help)
            form.addRow(label, editor)
            problem = self.problems[option.name] = QLabel(self)
            problem.setWordWrap(True)
            problem.setStyleSheet('QLabel { color: red }')
            problem.setVisible(False)
            form.addRow('', problem)
            self.watch(option)
            if option.kind == 'secret':
                self.key_place = QLabel(p.config.secrets.where(), self)
                self.key_place.setWordWrap(True)
                form.addRow('', self.key_place)
        for option in p.all_options():
            if option.fills and option.fills in self.editors:
                self.connect_filler(option)
        for option, problem in unusable_values(p.all_options(), p.config.settings):  # saved, and cannot be used
            self.show_problem(option.name, problem)
        self.model_picker: ModelPicker | None = self.editors.get('model')
        self.chooser: ModelChooser | None = None  # the model chooser, while it is open
        if self.model_picker is not None:
            self.model_picker.refresh_button.clicked.connect(self.refresh_models)
            if p.has_model_chooser:
                self.model_picker.add_choose_button().clicked.connect(self.choose_model)
        buttons = QHBoxLayout()
        self.test_button = QPushButton(_('&Test connection'), self)
        self.test_button.setToolTip(_('Send a real, minimal request with these settings'))
        self.test_button.clicked.connect(self.test_connection)
        buttons.addWidget(self.test_button)
        buttons.addStretch(1)
        outer.addLayout(buttons)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        outer.addWidget(self.status)
        outer.addStretch(1)

    def connect_filler(self, option: Option) -> None:
        """A choice that suggests another field's value shows it there as the placeholder."""
        chooser, target = self.editors[option.name], self.editors[option.fills]
        suggestions = dict(option.fill_values)
        default = target.placeholderText()

        def update():
            target.setPlaceholderText(suggestions.get(chooser.currentData()) or default)

        chooser.currentIndexChanged.connect(update)
        update()

    def watch(self, option: Option) -> None:
        """Say what is wrong with a typed value as it is typed."""
        e = self.editors[option.name]
        changed = {QLineEdit: lambda: e.textChanged, QPlainTextEdit: lambda: e.textChanged,
                   ModelPicker: lambda: e.box.editTextChanged}.get(type(e))
        if changed is not None:
            changed().connect(lambda *args: self.show_problem(option.name, self.problem_of(option)))

    def show_problem(self, name: str, problem: str) -> None:
        """Say problem under the field of the option called name; '' hides it."""
        label = self.problems[name]
        label.setText(problem)
        label.setVisible(bool(problem))

    def problem_of(self, option: Option) -> str:
        """What is wrong with the value shown for option, in words; '' when it can be saved."""
        try:
            value = self.value_of(option)
            if value is not None:
                option.check(value)
        except ValueError as e:
            return str(e)
        return ''

    def editor_for(self, option: Option) -> QWidget:
        """The field that edits option, showing its value."""
        value = self.provider.config.option(option.name) if option.kind != 'secret' else ''
        if option.kind == 'secret':
            e = QLineEdit(self)
            e.setEchoMode(QLineEdit.EchoMode.Password)
            e.setPlaceholderText(_('A key is stored: type to replace it') if self.provider.config.api_key
                                 else _('Paste your key here'))
            return e
        if option.kind == 'bool':
            e = QCheckBox(self)
            e.setChecked(bool(value))
            return e
        if option.kind == 'int':
            e = QSpinBox(self)
            e.setRange(int(option.minimum if option.minimum is not None else 0),
                       int(option.maximum if option.maximum is not None else 10_000_000))
            e.setValue(int(value or 0))
            return e
        if option.kind == 'float':
            e = QDoubleSpinBox(self)
            e.setDecimals(1)
            e.setRange(option.minimum if option.minimum is not None else -1,
                       option.maximum if option.maximum is not None else 100_000)
            e.setValue(float(value))
            return e
        if option.kind == 'choice':
            e = QComboBox(self)
            for v, label in option.choices:
                e.addItem(label, v)
            e.setCurrentIndex(max(0, e.findData(value)))
            return e
        if option.kind == 'model':
            return ModelPicker(value, self)
        if option.kind == 'headers':
            e = QPlainTextEdit(self)
            e.setPlainText('\n'.join(f'{k}: {v}' for k, v in (value or ())))
            e.setMaximumHeight(70)
            return e
        e = QLineEdit(self)
        e.setText(str(value or ''))
        if option.kind == 'url':
            e.setPlaceholderText(self.provider.default_base_url or _('http://host:port/v1'))
        return e

    def value_of(self, option: Option) -> object:
        """The value shown for option (None for an API key not typed). Raises ValueError."""
        e = self.editors[option.name]
        if option.kind == 'secret':
            return e.text().strip() or None
        if option.kind == 'bool':
            return e.isChecked()
        if option.kind in ('int', 'float'):
            return e.value()
        if option.kind == 'choice':
            return e.currentData()
        if option.kind == 'model':
            return e.value()
        if option.kind == 'headers':
            return parse_headers(e.toPlainText())
        return e.text().strip()

    def values(self) -> dict[str, object]:
        """The option values as shown, checked, the API key only when one was typed. Raises ValueError."""
        values = {}
        for option in self.provider.all_options():
            value = self.value_of(option)
            if value is not None:
                values[option.name] = option.check(value)
        return values

    def validate(self) -> str:
        """'' when the values can be saved, else what is wrong, in a sentence; each problem is
        shown under its field."""
        found = ''
        for option in self.provider.all_options():
            problem = self.problem_of(option)
            self.show_problem(option.name, problem)
            if problem and not found:
                found = f'{option.label}: {problem}.'
        return found

    def provider_with_these_settings(self) -> AIProviderPlugin:
        """A provider built from what the widget shows, to test before saving."""
        values = self.values()
        settings = {k: v for k, v in values.items() if k != 'api_key'}
        settings['api_key'] = values.get('api_key') or self.provider.config.api_key
        return type(self.provider)(settings=settings)

    def commit(self) -> None:
        """Save: the options to the plugin's settings, a typed key to the secret store; nothing
        while a value is wrong (validate() shows what). Raises OSError when the file cannot be
        written."""
        if self.validate():
            return
        values = self.values()
        key = values.pop('api_key', None)  # a str: the secret option's check gives one
        prefs = plugin_prefs()
        providers = dict(prefs['providers'])
        providers[self.provider.name] = values
        prefs['providers'] = providers
        if isinstance(key, str) and key:
            try:
                self.provider.config.secrets.set(self.provider.name, 'api_key', key)
            except StoreError as e:
                from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
                error_dialog(self, _('The key was not saved'), not_kept(self.provider.display_name),
                             det_msg=str(e), show=True)

    def key_forgotten(self) -> None:
        """The keys were deleted ("Forget everything"): no stored key to fall back on any more."""
        self.provider = type(self.provider)()
        if 'api_key' in self.editors:
            self.editors['api_key'].setPlaceholderText(_('Paste your key here'))

    def show_status(self, text: str, ok: bool | None = None) -> None:
        """Say text under the buttons: in green when ok, in red when not ok."""
        colors: dict[bool | None, str] = {True: 'green', False: 'red'}
        color = colors.get(ok)
        self.status.setText(f'<span style="color:{color}">{text}</span>' if color else text)

    def refresh_models(self) -> None:
        """Ask the service for its models, with the settings shown, and offer them."""
        problem = self.validate()
        if problem:
            return self.show_status(problem, False)
        provider = self.provider_with_these_settings()
        picker = self.model_picker
        assert picker is not None  # Refresh is connected only when there is a model field
        picker.refresh_button.setEnabled(False)
        self.show_status(_('Asking {provider} for its models…').format(provider=provider.display_name))

        def done(models, exc):
            picker.refresh_button.setEnabled(True)
            if exc is not None:
                return self.show_status(str(exc), False)
            picker.set_models(models)
            self.show_status(_('{count} models available.').format(count=len(models)), True)

        run_in_thread(lambda: provider.models(refresh=True), done, self)

    def choose_model(self) -> None:
        """Open the model chooser on the service's models (cached for a day), with the settings
        shown; the model chosen goes into the model field."""
        problem = self.validate()
        if problem:
            return self.show_status(problem, False)
        provider = self.provider_with_these_settings()
        picker = self.model_picker
        assert picker is not None and picker.choose_button is not None  # Choose… is connected only once added
        button = picker.choose_button
        button.setEnabled(False)
        self.show_status(_('Asking {provider} for its models…').format(provider=provider.display_name))

        def done(models, exc):
            button.setEnabled(True)
            if exc is not None:
                return self.show_status(str(exc), False)
            self.show_status('')
            picker.set_models(models)
            # on use: the chooser is built when opened
            from calibre_plugins.bookai.gui.model_chooser import open_chooser
            d = self.chooser = open_chooser(models, picker.value(), provider.display_name, self, picker.set_value)
            d.refresh_requested.connect(lambda: self.refresh_chooser(provider, d))
            d.finished.connect(lambda result: (setattr(self, 'chooser', None), d.deleteLater()))

        run_in_thread(provider.models, done, self)

    def refresh_chooser(self, provider: AIProviderPlugin, chooser: QWidget) -> None:
        """Ask the service for its models again, for the chooser open."""
        def done(models, exc):
            chooser.refreshed(None if exc is not None else models, str(exc) if exc is not None else '')
            if exc is None:
                self.model_picker.set_models(models)

        run_in_thread(lambda: provider.models(refresh=True), done, chooser)

    def test_connection(self) -> None:
        """Test connection, with the settings shown, and say how it went."""
        problem = self.validate()
        if problem:
            return self.show_status(problem, False)
        provider = self.provider_with_these_settings()
        self.test_button.setEnabled(False)
        self.show_status(_('Testing {provider}…').format(provider=provider.display_name))

        def done(result, exc):
            self.test_button.setEnabled(True)
            ok, sentence = (False, str(exc)) if exc is not None else result
            self.show_status(sentence, ok)

        run_in_thread(provider.test_connection, done, self)
