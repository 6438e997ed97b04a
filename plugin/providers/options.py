# License: GPLv3 Copyright: the Book AI developers
"""The settings of a provider: each one an Option, which says how it is edited and checked.

A provider class declares its own options; declared_options() adds what every provider
has (its address, its key, common_options()) and, for one that makes embeddings, the
embedding model. The settings dialog (gui/provider_config.py) and the command line's
configure are built from that list, and check every value with Option.check() before
it is saved; the provider checks again what it reads back from the settings file.
"""

import math
import re
from dataclasses import dataclass
from urllib.parse import urlsplit
from typing import Any, cast

from calibre_plugins.bookai.core.errors import without_userinfo

load_translations()

SHORTEST_TIMEOUT = 0.1    # seconds: the timeouts a reader can set, so that none is 0, negative or endless
LONGEST_TIMEOUT = 3600.0


@dataclass(frozen=True)
class Option:
    """One setting a provider needs. `kind` says how it is edited and checked:
    text, secret (an API key: kept in the secret store, never shown back),
    url, int, float, bool, choice (from `choices`: (value, label) pairs),
    model (an id, with the live list to pick from), headers (Name: value lines).

    Every value is checked where it is set (the settings dialog, the command line's
    configure) and where it is read back from the settings file, by check(): numbers are
    finite and from `minimum` to `maximum`, addresses are parsed (check_url)."""
    name: str
    label: str
    kind: str = 'text'
    default: object = ''
    choices: tuple[tuple[str, str], ...] = ()
    help: str = ''
    # a choice that suggests another option's value: that option's name, and value per choice
    fills: str = ''
    fill_values: tuple[tuple[str, str], ...] = ()
    minimum: float | None = None  # int and float: the smallest value allowed
    maximum: float | None = None  # int and float: the largest value allowed

    def parse(self, text: str) -> object:
        """A value from its text form (the command line's key=value), checked. Raises ValueError."""
        if self.kind in ('int', 'float'):
            try:
                return self.check(int(text) if self.kind == 'int' else float(text))
            except ValueError:  # quoted as typed
                raise ValueError(self.out_of_range(text)) from None
        if self.kind == 'bool':
            low = str(text).strip().lower()
            if low in ('1', 'true', 'yes', 'on'):
                return True
            if low in ('0', 'false', 'no', 'off'):
                return False
            raise ValueError(_('"{value}" is not yes or no').format(value=quoted(text)))
        if self.kind == 'headers':
            return self.check(parse_headers(text))
        return self.check(text)

    def check(self, value: object) -> Any:  # a value of the option's kind
        """value if this option can have it (as typed in, or as read from the settings file),
        else ValueError with what is wrong, in words."""
        kind = self.kind
        if kind in ('int', 'float'):
            n = cast(float, value)  # only read as a number once it is one
            number = type(value) in (int, float) and math.isfinite(n) and (kind == 'float' or type(value) is int)
            if not number or (self.minimum is not None and n < self.minimum) or (
                    self.maximum is not None and n > self.maximum):
                raise ValueError(self.out_of_range(value))
            return float(n) if kind == 'float' else value
        if kind == 'bool':
            if type(value) is not bool:
                raise ValueError(_('"{value}" is not yes or no').format(value=quoted(value)))
            return value
        if kind == 'choice':
            if not isinstance(value, str) or value not in {v for v, label in self.choices}:
                raise ValueError(_('"{value}" is not one of: {choices}').format(
                    value=quoted(value), choices=', '.join(v for v, label in self.choices)))
            return value
        if kind == 'headers':
            return parse_headers(value)
        if kind == 'secret':  # never quoted: a key is not shown, even a wrong one
            if not isinstance(value, str) or not value or any(c.isspace() or not c.isprintable() for c in value):
                raise ValueError(_('An API key is one line of letters, digits and signs, with no space'))
            return value
        if not isinstance(value, str):
            raise ValueError(_('"{value}" is not text').format(value=quoted(value)))
        if kind == 'url':
            return check_url(value)
        if any(not c.isprintable() for c in value):
            raise ValueError(_('"{value}" has a line break or a control character').format(value=quoted(value)))
        return value

    def out_of_range(self, value: object) -> str:
        """What is wrong with a number that is not one, or not one this option allows."""
        low = '' if self.minimum is None else f'{self.minimum:g}'
        high = '' if self.maximum is None else f'{self.maximum:g}'
        if self.kind == 'int':
            return _('"{value}" is not a whole number from {minimum} to {maximum}').format(
                value=quoted(value), minimum=low, maximum=high)
        return _('"{value}" is not a number from {minimum} to {maximum}').format(
            value=quoted(value), minimum=low, maximum=high)


def quoted(value: object, limit: int = 200) -> str:
    """A value as it is quoted in a message: on one line, its control characters escaped,
    the user name and password of an address left out, and not too long."""
    text = str(value)
    text = without_userinfo(text, '…')
    text = ''.join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + '…'


def check_url(value: str) -> str:
    """value, when it is an address Book AI can send to: http or https, a host, a port from 1
    to 65535 when one is given, no space or control character, no query or fragment (they
    would end up before the routes Book AI adds), and no user name or password (a key goes
    in the API key field, where it is kept as a secret). '' (the provider's default) is
    fine. Else ValueError, in words."""
    if not value:
        return value
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(_('"{value}" has a space, a line break or a control character, which an address '
                           'cannot have').format(value=quoted(value)))
    not_an_address = _('"{value}" is not an http:// or https:// address').format(value=quoted(value))
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        raise ValueError(not_an_address) from None
    if parts.scheme.lower() not in ('http', 'https') or not value.lower().startswith(('http://', 'https://')) or \
            not host:
        raise ValueError(not_an_address)
    if parts.username is not None or parts.password is not None:
        raise ValueError(_('"{value}" holds a user name or password: put the key in the API key field '
                           'instead').format(value=quoted(value)))
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (parts.netloc.endswith(':') and port is None):
        raise ValueError(_('The port in "{value}" is not a number from 1 to 65535').format(value=quoted(value)))
    if parts.query or parts.fragment or '?' in value or '#' in value:
        raise ValueError(_('"{value}" has a ? or # part: give only the address of the API').format(
            value=quoted(value)))
    return value


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (RFC 9110's token)


def checked_header(name: str, value: str) -> tuple[str, str]:
    """(name, value) when it can be sent as it is: the name a token, the value without a line
    break or other control character (CR or LF would start another header; ESC would reach a
    terminal). Else ValueError, in words that never quote the value (it may hold a key)."""
    if not HEADER_NAME.fullmatch(name):
        raise ValueError(_('"{name}" is not the name of an HTTP header').format(name=quoted(name, 80)))
    if any(not c.isprintable() and c != '\t' for c in value):
        raise ValueError(_('The value of the header "{name}" has a line break or a control character').format(
            name=name))
    return name, value


def parse_headers(text: object) -> list[tuple[str, str]]:
    """'Name: value' lines (or ; separated), or (name, value) pairs as saved, into a list of
    (name, value), each checked by checked_header(). Raises ValueError for anything else."""
    if isinstance(text, (list, tuple)):
        pairs = [tuple(x) if isinstance(x, (list, tuple)) else x for x in text]
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
                raise ValueError(_('"{value}" is not a "Name: value" header').format(value=quoted(pair)))
            checked_header(*pair)
        return pairs
    if not isinstance(text, str):
        raise ValueError(_('"{value}" is not a "Name: value" header').format(value=quoted(text)))
    headers = []
    for part in text.replace(';', '\n').splitlines():
        if part.strip():
            name, sep, value = part.partition(':')
            if not sep or not name.strip():
                raise ValueError(_('"{value}" is not a "Name: value" header').format(value=quoted(part.strip())))
            headers.append(checked_header(name.strip(), value.strip()))
    return headers


def unusable_values(options: tuple[Option, ...], settings: dict) -> list[tuple[Option, str]]:
    """The options whose value in settings (as saved) cannot be used, each with what is
    wrong, in words: the file was edited, or written by an older version. Keys are not
    looked at: they are kept in the secret store."""
    found = []
    for option in options:
        if option.name in settings and option.kind != 'secret':
            try:
                option.check(settings[option.name])
            except ValueError as e:
                found.append((option, str(e)))
    return found


# How much the model thinks before it answers. Each provider puts it on the wire its own way
# (an effort, a thinking budget, thinking on or off); 'auto' leaves it to the service. Where a
# provider has none of its own yet, the plugin-wide 'reasoning_effort' of Book AI 1.0.0 is used.
REASONING_EFFORT = Option('reasoning_effort', _('Reasoning effort'), 'choice', 'auto', choices=(
    ('auto', _('Automatic')), ('high', _('High')), ('medium', _('Medium')), ('low', _('Low')),
    ('none', _('No reasoning'))), help=_(
        'How much the model reasons before answering, where it can: more gives better answers, '
        'slower and at a higher cost.'))


def common_options(read_timeout: float) -> tuple[Option, ...]:
    """The options every provider has: whether it is on, which model, how much it reasons,
    how long to wait."""
    return (
        Option('enabled', _('Enabled'), 'bool', True),
        Option('model', _('Model'), 'model', '', help=_('Leave empty to choose automatically')),
        Option('model_tier', _('Automatic model choice'), 'choice', 'medium', choices=(
            ('high', _('Most capable')), ('medium', _('Balanced')), ('low', _('Fastest and cheapest')))),
        REASONING_EFFORT,
        Option('connect_timeout', _('Connection timeout (seconds)'), 'float', 30.0,
               minimum=SHORTEST_TIMEOUT, maximum=LONGEST_TIMEOUT),
        Option('read_timeout', _('Longest silence while answering (seconds)'), 'float', read_timeout,
               minimum=SHORTEST_TIMEOUT, maximum=LONGEST_TIMEOUT),
    )


def embedding_option(default_model: str) -> Option:
    """The embedding model of a provider that makes embeddings; default_model is used when it
    is left empty ('' for the chat model)."""
    return Option('embedding_model', _('Embedding model'), 'text', '', help=(
        _('Ranks book passages by meaning, when that is turned on. Empty: {model}').format(model=default_model)
        if default_model else _('Ranks book passages by meaning, when that is turned on. Empty: the chat model')))


def image_model_option(default_model: str) -> Option:
    """The image model of a provider that makes images (covers); default_model is used when it is
    left empty."""
    return Option('image_model', _('Image model'), 'text', '', help=(
        _('Makes covers. Empty: {model}').format(model=default_model) if default_model
        else _("Makes covers. Empty: the service's own default")))


def declared_options(own: tuple[Option, ...], *, default_base_url: str, takes_key: bool, read_timeout: float,
                     embeddings: bool, default_embedding_model: str = '', images: bool = False,
                     default_image_model: str = '') -> tuple[Option, ...]:
    """Every option of a provider, in the order its settings show them: those of its own
    options that fill in another (a server preset) first, then its address, its API key
    (when it takes one), common_options(), its embedding model (when it makes embeddings),
    its image model (when it makes images), and the rest of its own."""
    url = (Option('base_url', _('Address (API root)'), 'url', default_base_url,
                  help=_('A local server, a proxy or a gateway that speaks this API')),)
    key = (Option('api_key', _('API key'), 'secret', ''),) if takes_key else ()
    embedding = (embedding_option(default_embedding_model),) if embeddings else ()
    image = (image_model_option(default_image_model),) if images else ()
    fillers = tuple(o for o in own if o.fills)
    return (fillers + url + key + common_options(read_timeout) + embedding + image
            + tuple(o for o in own if not o.fills))
