# License: GPLv3 Copyright: the Book AI developers
"""Choose a model from a provider's catalogue: ModelChooser(models, current).

For providers whose model list says more than ids (has_model_chooser: OpenRouter), as
calibre 9.17's OpenRouter "Choose an AI model" dialog does, and a little more: a search box
(every word typed must be part of a word of the model's name or id), Only free, Only
unmoderated, sorting by name, newest, price (low to high, high to low) or context length,
and what the catalogue says of the model selected: name, id, prices per million tokens and
per request, image or web search, context length, when it was published, whether its answers
are moderated, and its description. The filters and the sort are remembered
(the 'model_chooser' preference), as calibre remembers its own.

Everything shown comes from the service and is treated as hostile: it is escaped and shown
as plain text (the description's Markdown is not rendered, its links are not links), with
control characters left out. The list is held to providers.models.kept_models() whoever gives
it: one row per id, and a price shown only when it is one (finite, from 0 to
models.MOST_UNIT_PRICE), else as unknown. The dialog opens no connection: the list is given to it, and
Refresh only asks its owner (gui/provider_config.py) for a new one, which the owner fetches
through the provider in a worker thread and hands over with set_models().
"""

import html
from collections.abc import Callable
from datetime import datetime, timezone

from qt.core import (
    QAbstractItemView, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QLineEdit,
    QListWidget, QListWidgetItem, QLocale, QPushButton, QSize, QSplitter, Qt, QTextBrowser, QVBoxLayout, QWidget,
    pyqtSignal,
)

from calibre.utils.date import format_date

from calibre_plugins.bookai.core.messages import money
from calibre_plugins.bookai.core.printable import inert
from calibre_plugins.bookai.providers.models import MOST_UNIT_PRICE, Model, kept_models
from calibre_plugins.bookai.settings.prefs import plugin_prefs

load_translations()

ID_ROLE = Qt.ItemDataRole.UserRole


def plain(text: str) -> str:
    """text from a service, safe to put into the dialog's HTML: no control characters, escaped."""
    return html.escape(inert(text or ''))


def per_million(price: float) -> str:
    """A price per token as US dollars per million tokens: '$2', '$0.25', '$0.039'; 'Unknown'
    for one that is not a price (NaN, infinite, negative, above MOST_UNIT_PRICE)."""
    if money(price, MOST_UNIT_PRICE) is None:
        return _('Unknown')
    value = price * 1e6
    text = f'{value:.2f}' if value >= 0.1 else f'{value:.3g}'
    return '$' + (text[:-3] if text.endswith('.00') else text)


def dollars(price: float) -> str:
    """A price per unit (a request, an image, a web search) in US dollars; 'Unknown' for one
    that is not a price."""
    if money(price, MOST_UNIT_PRICE) is None:
        return _('Unknown')
    text = f'{price:.4f}'.rstrip('0').rstrip('.') if price >= 0.0001 else f'{price:.3g}'
    return '$' + text


def output_price(m: Model) -> float:
    """What a model's answers cost per token, for sorting by price; unknown sorts last."""
    price = m.price('completion')
    return price if price is not None and price >= 0 else float('inf')


def matches(m: Model, words: list[str]) -> bool:
    """Every word typed is part of a word of the model's name or id."""
    name_words = (m.name + ' ' + m.id.replace('/', ' ')).lower().split()
    return all(any(w in n for n in name_words) for w in words)


# sort key: label, and how the models are ordered
SORTS = (
    ('newest', _('Newest'), lambda m: (-m.created, m.display_name.lower())),
    ('name', _('Name'), lambda m: m.display_name.lower()),
    ('cheapest', _('Price, low to high'), lambda m: (output_price(m), m.display_name.lower())),
    ('expensive', _('Price, high to low'),
     lambda m: (output_price(m) == float('inf'), -output_price(m), m.display_name.lower())),
    ('context', _('Context length, longest first'), lambda m: (-m.context_length, m.display_name.lower())),
)


class ModelChooser(QDialog):
    """The catalogue of a provider, to search, filter, sort and choose from. chosen_id() is
    the model chosen when accepted: '' for "choose automatically"."""

    refresh_requested = pyqtSignal()

    def __init__(self, models: list[Model], current: str = '', provider_name: str = '',
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(_('Choose a model of {provider}').format(provider=provider_name) if provider_name
                            else _('Choose a model'))
        self.models: list[Model] = []
        self.cleared = False
        self.setup_ui()
        self.restore_choices()
        self.set_models(models, current)
        self.only_free.toggled.connect(self.remember_choices)
        self.only_unmoderated.toggled.connect(self.remember_choices)
        self.sort.currentIndexChanged.connect(self.remember_choices)

    def restore_choices(self) -> None:
        """The filters and the sort as last left; what cannot be used (an edited file) is ignored."""
        saved = plugin_prefs().get('model_chooser')
        saved = saved if isinstance(saved, dict) else {}
        for box, key in ((self.only_free, 'only_free'), (self.only_unmoderated, 'only_unmoderated')):
            box.blockSignals(True)
            box.setChecked(saved.get(key) is True)
            box.blockSignals(False)
        if isinstance(saved.get('sort'), str) and (i := self.sort.findData(saved['sort'])) >= 0:
            self.sort.blockSignals(True)
            self.sort.setCurrentIndex(i)
            self.sort.blockSignals(False)

    def remember_choices(self, *args) -> None:
        try:
            plugin_prefs()['model_chooser'] = {'only_free': self.only_free.isChecked(), 'sort': self.sort.currentData(),
                                               'only_unmoderated': self.only_unmoderated.isChecked()}
        except OSError:  # not remembered: the choice still works
            pass

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.search = QLineEdit(self)
        self.search.setPlaceholderText(_('Search for models by name'))
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.update_list)
        self.only_free = QCheckBox(_('Only &free'), self)
        self.only_free.toggled.connect(self.update_list)
        self.only_unmoderated = QCheckBox(_('Only &unmoderated'), self)
        self.only_unmoderated.setToolTip(_('Only models whose answers the service does not filter'))
        self.only_unmoderated.toggled.connect(self.update_list)
        row.addWidget(self.search, 1)
        row.addWidget(self.only_free)
        row.addWidget(self.only_unmoderated)
        layout.addLayout(row)

        row = QHBoxLayout()
        label = QLabel(_('S&ort by:'), self)
        self.sort = QComboBox(self)
        for key, text, _key_func in SORTS:
            self.sort.addItem(text, key)
        self.sort.currentIndexChanged.connect(self.update_list)
        label.setBuddy(self.sort)
        row.addWidget(label)
        row.addWidget(self.sort)
        row.addStretch(1)
        self.refresh_button = QPushButton(_('&Refresh list'), self)
        self.refresh_button.setToolTip(_('Ask the service for its models again'))
        self.refresh_button.clicked.connect(self.ask_refresh)
        row.addWidget(self.refresh_button)
        layout.addLayout(row)

        self.splitter = QSplitter(self)
        self.list = QListWidget(self.splitter)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.currentItemChanged.connect(self.show_details)
        self.list.itemDoubleClicked.connect(lambda item: self.accept())
        self.details = QTextBrowser(self.splitter)
        self.details.setOpenLinks(False)
        self.details.setOpenExternalLinks(False)
        self.splitter.addWidget(self.list)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        layout.addWidget(self.splitter, 1)

        row = QHBoxLayout()
        self.counts = QLabel(self)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        self.clear_button = self.buttons.addButton(_('Choose &automatically'),
                                                   QDialogButtonBox.ButtonRole.ActionRole)
        self.clear_button.setToolTip(_('Use no particular model: the provider chooses one for each question'))
        self.clear_button.clicked.connect(self.choose_automatically)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        row.addWidget(self.counts)
        row.addWidget(self.status, 1)
        row.addWidget(self.buttons)
        layout.addLayout(row)
        self.show_help()

    def sizeHint(self) -> QSize:
        return QSize(860, 560)

    # the list {{{

    def set_models(self, models: list[Model], current: str | None = None) -> None:
        """Show models (as kept_models() keeps them), keeping the search, filters, sort and the
        model selected (or current)."""
        keep = self.chosen_id() if current is None else current
        self.models = kept_models(list(models))  # one row per id, numbers that are numbers
        self.update_list(select=keep)

    def shown(self) -> list[Model]:
        """The models the search and filters let through, in the order chosen."""
        words = self.search.text().lower().split()
        models = [m for m in self.models if (not words or matches(m, words))
                  and (not self.only_free.isChecked() or m.free)
                  and (not self.only_unmoderated.isChecked() or m.moderated is False)]
        key = next(f for k, text, f in SORTS if k == self.sort.currentData())
        return sorted(models, key=key)

    def update_list(self, *args, select: str | None = None) -> None:
        """Fill the list from the search, filters and sort, keeping the model selected."""
        keep = select if select is not None else self.chosen_id()
        self.list.blockSignals(True)
        try:
            self.list.clear()
            for m in self.shown():
                item = QListWidgetItem(m.display_name, self.list)
                item.setData(ID_ROLE, m.id)
                item.setToolTip(m.id)  # a Model's words are inert as it is made
                if m.id == keep:
                    self.list.setCurrentItem(item)
        finally:
            self.list.blockSignals(False)
        shown, total = self.list.count(), len(self.models)
        self.counts.setText(_('{count} models').format(count=total) if shown == total
                            else _('{shown} of {total} models').format(shown=shown, total=total))
        self.show_details()

    def chosen_id(self) -> str:
        """The id of the model selected; '' for none (or after "Choose automatically")."""
        item = self.list.currentItem()
        return item.data(ID_ROLE) if item is not None and not self.cleared else ''

    def choose_automatically(self) -> None:
        self.cleared = True
        self.accept()

    def ask_refresh(self) -> None:
        self.refresh_button.setEnabled(False)
        self.show_status(_('Asking for the models…'))
        self.refresh_requested.emit()

    def refreshed(self, models: list[Model] | None, problem: str = '') -> None:
        """The owner's answer to Refresh: the new list, or what went wrong."""
        self.refresh_button.setEnabled(True)
        if models is None:
            self.show_status(problem, False)
        else:
            self.set_models(models)
            self.show_status(_('{count} models available.').format(count=len(self.models)), True)

    def show_status(self, text: str, ok: bool | None = None) -> None:
        colors: dict[bool | None, str] = {True: 'green', False: 'red'}
        color = colors.get(ok)
        self.status.setText(f'<span style="color:{color}">{plain(text)}</span>' if color else plain(text))

    # }}}

    # details {{{

    def show_help(self) -> None:
        self.details.setHtml('<p>{}</p><p>{}</p>'.format(
            plain(_('Choose a model to use. Newer models are generally more capable, and often more expensive.')),
            plain(_('A moderated model\'s answers are filtered by the service.'))))

    def show_details(self, *args) -> None:
        """What the catalogue says of the model selected."""
        model_id = self.chosen_id() if not self.cleared else ''
        m = next((m for m in self.models if m.id == model_id), None)
        if m is None:
            return self.show_help()
        self.details.setHtml(details_html(m))

    # }}}


def price_lines(m: Model) -> list[str]:
    """The prices of m, each in words, from what the catalogue lists."""
    if m.free:
        return [_('Free')]
    if not m.pricing:
        return [_('Not listed')]
    lines = []
    for kind, text in (('prompt', _('{price} per million input tokens')),
                       ('completion', _('{price} per million output tokens')),
                       ('internal_reasoning', _('{price} per million reasoning tokens'))):
        price = m.price(kind)
        if price is not None and price > 0:
            lines.append(text.format(price=per_million(price)))
    for kind, text in (('request', _('{price} per request')), ('image', _('{price} per input image')),
                       ('image_output', _('{price} per million output image tokens')),
                       ('web_search', _('{price} per web search'))):
        price = m.price(kind)
        if price is not None and price > 0:
            lines.append(text.format(price=per_million(price) if kind == 'image_output' else dollars(price)))
    if not lines:
        lines.append(_('Unknown'))  # listed, but not as a price anyone pays (openrouter/auto: -1)
    return lines


def details_html(m: Model) -> str:
    """What the catalogue says of m, as HTML made only of escaped text."""
    locale = QLocale.system()
    rows = [(_('Identifier'), plain(m.id)), (_('Price'), '<br>'.join(plain(p) for p in price_lines(m)))]
    if 0 < m.context_length < 2 ** 53:  # a number, not a service's joke
        rows.append((_('Context length'), plain(_('{count} tokens').format(count=locale.toString(m.context_length)))))
    if m.created > 0:
        try:
            day = datetime.fromtimestamp(m.created, timezone.utc)
        except (ValueError, OverflowError, OSError):  # a date no calendar has
            day = None
        if day is not None:
            rows.append((_('Published'), plain(format_date(day, 'd MMMM yyyy'))))
    rows.append((_('Content moderated'), plain({True: _('yes'), False: _('no'), None: _('not said')}[m.moderated])))
    if m.input_modalities or m.output_modalities:
        rows.append((_('Takes'), plain(', '.join(m.input_modalities) or '?')))
        rows.append((_('Gives'), plain(', '.join(m.output_modalities) or '?')))
    table = ''.join(f'<tr><td style="padding-right:12px"><b>{plain(k)}</b></td><td>{v}</td></tr>' for k, v in rows)
    description = '<br>'.join(plain(line) for line in m.description.splitlines())
    return (f'<h3>{plain(m.display_name)}</h3><table>{table}</table>'
            + (f'<p>{description}</p>' if description else ''))


def open_chooser(models: list[Model], current: str, provider_name: str, parent: QWidget,
                 on_chosen: Callable[[str], None]) -> ModelChooser:
    """Open a ModelChooser (modal to its window, without blocking); on_chosen(model id, '' for
    automatic) when it is accepted."""
    d = ModelChooser(models, current, provider_name, parent)
    d.accepted.connect(lambda: on_chosen(d.chosen_id()))
    d.resize(d.sizeHint())
    d.open()
    return d
