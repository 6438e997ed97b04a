# License: GPLv3 Copyright: the Book AI developers
"""What will be sent: the exact messages of the next request, where they go, about
how many tokens they are and what they may cost, before anything is sent.

Shown on request, and, for a provider that is not on this computer, before the
first question of a conversation (or every question) as the settings say.

When the model may look things up while it answers (conversation/lookups.py), what it finds is
not known before: the caller says what it can see, in a sentence, and how many lookups at most;
a paragraph says so, and that what the lookups find goes where the messages go.
"""

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QTextBrowser, Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.core.messages import Message, Role, estimated_tokens
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.core.web_links import shown_address, site
from calibre_plugins.bookai.providers.pricing import sending_estimate
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


def role_name(role: Role | str) -> str:
    """Who a message is from, as the reader is told."""
    return {'system': _('Instructions and the books'), 'developer': _('Instructions'), 'user': _('You'),
            'assistant': _('Assistant')}.get(getattr(role, 'value', role), str(role))


def destination(provider: 'AIProviderPlugin') -> str:
    """Where the messages go, in words."""
    if provider.connection.is_local:
        return _('{provider}, on this computer').format(provider=provider.display_name)
    address = provider.config.base_url
    host = site(address) or shown_address(address)  # a look-alike as punycode, no user:password@
    return _('{provider}, at {host}').format(provider=provider.display_name, host=host)


def summary_html(provider: 'AIProviderPlugin', model: str, messages: Sequence[Message], passages: int = 0) -> str:
    """Where the messages go, about how many tokens they are and their cost, and what of the book is in them."""
    tokens = estimated_tokens(messages)
    lines = [_('These messages go to {where}, model {model}.').format(
        where='<b>' + escape(destination(provider)) + '</b>', model='<b>' + escape(model or _('automatic')) + '</b>')]
    lines.append(escape(sending_estimate(provider.name, model, tokens, provider.connection.is_local)))
    if passages:
        lines.append('<b>' + escape(_('They include {count} passages of the book\'s own text, shown below between '
                                      '<book_passages> and </book_passages>.').format(count=passages)) + '</b>')
        lines.append(escape(_('Nothing else is sent: no file of the book, nothing else about your library.')))
    else:
        lines.append(escape(_('Nothing else is sent: no file of the book, nothing about your library.')))
    return '<p>' + '<br>'.join(lines) + '</p>'


MOST_SENTENCE_CHARS = 1000  # of the caller's sentence on what the lookups can see


def lookups_html(provider: 'AIProviderPlugin', lookups: str, most: int = 0) -> str:
    """The paragraph on the lookups the model may make: lookups, what it can see through them (a
    sentence; '' for no lookups: no paragraph); most, how many at most (0: not said)."""
    sentence = one_line(lookups)[:MOST_SENTENCE_CHARS]
    if not sentence:
        return ''
    if most > 0:
        may = ngettext('While it answers, the model may look things up, at most {count} time.',
                       'While it answers, the model may look things up, at most {count} times.',
                       most).format(count=most)
    else:
        may = _('While it answers, the model may look things up.')
    if provider.connection.is_local:
        where = _('What it finds stays on this computer.')
    else:
        where = _('What it finds is sent to {provider} too, with these messages.').format(
            provider=provider.display_name)
    return '<p>' + escape(may) + '<br>' + escape(sentence) + '<br><b>' + escape(where) + '</b></p>'


def messages_html(messages: Sequence[Message]) -> str:
    parts = []
    for m in messages:
        text = escape(m.text).replace('\n', '<br>')
        parts.append(f'<p style="margin-bottom:2px"><b>{escape(role_name(m.role))}</b></p>'
                     f'<p style="margin-top:0; font-family:monospace">{text}</p>')
    return ''.join(parts)


class PreviewDialog(QDialog):
    """confirm=True: Send and Cancel, and the choice of when to be asked again. passages: how
    many passages of the book are in the messages, lookups: what the model may look up in the
    book (a sentence, '' for nothing) and most_lookups how many times at most, for the reader's
    consent to send them."""

    def __init__(self, provider: 'AIProviderPlugin', model: str, messages: Sequence[Message], confirm: bool = False,
                 passages: int = 0, parent: QWidget | None = None, lookups: str = '',
                 most_lookups: int = 0) -> None:
        super().__init__(parent)
        self.provider, self.model, self.messages, self.confirm = provider, model, messages, confirm
        self.passages, self.lookups, self.most_lookups = passages, lookups, most_lookups
        self.setWindowTitle(_('What will be sent'))
        self.setup_ui()
        self.resize(700, 560)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        self.summary = QLabel(summary_html(self.provider, self.model, self.messages, self.passages)
                              + lookups_html(self.provider, self.lookups, self.most_lookups), self)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.view = QTextBrowser(self)
        self.view.setOpenLinks(False)
        self.view.setHtml(messages_html(self.messages))
        layout.addWidget(self.view, 1)
        self.policy = self.dont_ask = None
        if self.confirm and (self.passages or self.lookups):
            self.dont_ask = QCheckBox(_('Don\'t ask again before sending this book\'s text to {provider}').format(
                provider=self.provider.display_name), self)
            layout.addWidget(self.dont_ask)
        if self.confirm and not self.provider.connection.is_local:
            row = QHBoxLayout()
            row.addWidget(QLabel(_('Show this before sending:'), self))
            self.policy = QComboBox(self)
            for value, text in policy_choices():
                self.policy.addItem(text, value)
            self.policy.setCurrentIndex(max(0, self.policy.findData(plugin_prefs()['confirm_send'])))
            row.addWidget(self.policy, 1)
            layout.addLayout(row)
        if self.confirm:
            bb = QDialogButtonBox(self)
            self.send_button = bb.addButton(_('&Send'), QDialogButtonBox.ButtonRole.AcceptRole)
            bb.addButton(QDialogButtonBox.StandardButton.Cancel)
        else:
            bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    def accept(self) -> None:
        if self.policy is not None:
            plugin_prefs()['confirm_send'] = self.policy.currentData()
        super().accept()


def policy_choices() -> tuple[tuple[str, str], ...]:
    """The values of the confirm_send setting, each with its words."""
    return (('first', _('before the first question of each conversation')),
            ('always', _('before every question')),
            ('never', _('never')))


def needs_confirmation(provider: 'AIProviderPlugin', conversation: Conversation) -> bool:
    """Whether to show what will be sent, and ask, before this conversation's next question."""
    if provider.connection.is_local:
        return False
    policy = plugin_prefs()['confirm_send']
    return policy == 'always' or (policy == 'first' and not any(t.answered for t in conversation.turns))
