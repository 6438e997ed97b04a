# License: GPLv3 Copyright: the Book AI developers
"""The provider base class, shaped like calibre's AIProviderPlugin.

A provider is one small class that knows its wire format and nothing else:

- `options`: the settings it needs, declared (the config widget and the command
  line are built from them);
- `chat_request()`: one HTTP request for a conversation;
- `stream_format` and `read_stream()`: the decoded events in, answer chunks out;
- `models_request()` and `parse_models()`: the live model list;
- `parse_error()`: what the service said when it answered with an error status;
- with Capability.EMBEDDINGS: `embed_request()` and `parse_embeddings()` (the
  default is the /embeddings route most services copy from OpenAI).

Everything else is here, the same for all: settings and keys, choosing the
model, caching the model list for a day, timeouts, Stop, retries, turning every
failure into a Failed chunk, usage and cost, and keeping the provider's secrets
(secret_values) out of everything that leaves it: text_chat's chunks go through
redacted_stream(), and errors, model lists and Test connection are redacted too. The rest of the plugin only ever
calls text_chat() (and embed(), for ranking passages by meaning) and never
knows which provider it holds.
"""

import json
import math
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Flag, auto
from functools import cached_property, wraps

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import (
    ConnectionLost, MissingKey, NotConfigured, ProtocolError, ProviderError, Secrets, TooLarge, secrets_in_header,
    secrets_in_url, without_userinfo,
)
from calibre_plugins.bookai.core.messages import Done, Failed, ReasoningDelta, TextDelta, Usage, WebLink
from calibre_plugins.bookai.core.streams import NDJSONDecoder, SSEDecoder
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.transport import (
    HTTPError, Request, Response, Timeouts, Transport, http_error_to_provider_error,
)
from calibre_plugins.bookai.providers import pricing

load_translations()

to_json = json.JSONEncoder(ensure_ascii=False).encode  # made once: json.dumps makes one per call with options

MODELS_CACHE_SECONDS = 24 * 60 * 60
EMBED_BATCH = 64  # texts per embeddings request
REASONING_EFFORTS = ('auto', 'high', 'medium', 'low', 'none')
TIERS = ('high', 'medium', 'low')
SHORTEST_TIMEOUT = 0.1    # seconds: the timeouts a reader can set, so that none is 0, negative or endless
LONGEST_TIMEOUT = 3600.0


class Capability(Flag):
    NONE = 0
    TEXT_TO_TEXT = auto()
    WEB_SEARCH = auto()
    REASONING = auto()
    EMBEDDINGS = auto()


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
    choices: tuple = ()
    help: str = ''
    # a choice that suggests another option's value: that option's name, and value per choice
    fills: str = ''
    fill_values: tuple = ()
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
            raise ValueError(_('"{value}" is not yes or no').format(value=shown(text)))
        if self.kind == 'headers':
            return self.check(parse_headers(text))
        return self.check(text)

    def check(self, value: object) -> object:
        """value if this option can have it (as typed in, or as read from the settings file),
        else ValueError with what is wrong, in words."""
        kind = self.kind
        if kind in ('int', 'float'):
            number = type(value) in (int, float) and math.isfinite(value) and (kind == 'float' or type(value) is int)
            if not number or (self.minimum is not None and value < self.minimum) or (
                    self.maximum is not None and value > self.maximum):
                raise ValueError(self.out_of_range(value))
            return float(value) if kind == 'float' else value
        if kind == 'bool':
            if type(value) is not bool:
                raise ValueError(_('"{value}" is not yes or no').format(value=shown(value)))
            return value
        if kind == 'choice':
            if not isinstance(value, str) or value not in {v for v, label in self.choices}:
                raise ValueError(_('"{value}" is not one of: {choices}').format(
                    value=shown(value), choices=', '.join(v for v, label in self.choices)))
            return value
        if kind == 'headers':
            return parse_headers(value)
        if kind == 'secret':  # never quoted: a key is not shown, even a wrong one
            if not isinstance(value, str) or not value or any(c.isspace() or not c.isprintable() for c in value):
                raise ValueError(_('An API key is one line of letters, digits and signs, with no space'))
            return value
        if not isinstance(value, str):
            raise ValueError(_('"{value}" is not text').format(value=shown(value)))
        if kind == 'url':
            return check_url(value)
        if any(not c.isprintable() for c in value):
            raise ValueError(_('"{value}" has a line break or a control character').format(value=shown(value)))
        return value

    def out_of_range(self, value: object) -> str:
        """What is wrong with a number that is not one, or not one this option allows."""
        low = '' if self.minimum is None else f'{self.minimum:g}'
        high = '' if self.maximum is None else f'{self.maximum:g}'
        if self.kind == 'int':
            return _('"{value}" is not a whole number from {minimum} to {maximum}').format(
                value=shown(value), minimum=low, maximum=high)
        return _('"{value}" is not a number from {minimum} to {maximum}').format(
            value=shown(value), minimum=low, maximum=high)


def shown(value: object, limit: int = 200) -> str:
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
    from urllib.parse import urlsplit
    if not value:
        return value
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(_('"{value}" has a space, a line break or a control character, which an address '
                           'cannot have').format(value=shown(value)))
    not_an_address = _('"{value}" is not an http:// or https:// address').format(value=shown(value))
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
                           'instead').format(value=shown(value)))
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (parts.netloc.endswith(':') and port is None):
        raise ValueError(_('The port in "{value}" is not a number from 1 to 65535').format(value=shown(value)))
    if parts.query or parts.fragment or '?' in value or '#' in value:
        raise ValueError(_('"{value}" has a ? or # part: give only the address of the API').format(
            value=shown(value)))
    return value


def parse_headers(text: object) -> list:
    """'Name: value' lines (or ; separated), or (name, value) pairs as saved, into a list of
    (name, value). Raises ValueError for anything else."""
    if isinstance(text, (list, tuple)):
        pairs = [tuple(x) if isinstance(x, (list, tuple)) else x for x in text]
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
                raise ValueError(_('"{value}" is not a "Name: value" header').format(value=shown(pair)))
        return pairs
    if not isinstance(text, str):
        raise ValueError(_('"{value}" is not a "Name: value" header').format(value=shown(text)))
    headers = []
    for part in text.replace(';', '\n').splitlines():
        if part.strip():
            name, sep, value = part.partition(':')
            if not sep or not name.strip():
                raise ValueError(_('"{value}" is not a "Name: value" header').format(value=shown(part.strip())))
            headers.append((name.strip(), value.strip()))
    return headers


def common_options(read_timeout):
    """The options every provider has: where it is, which model, how long to wait."""
    return (
        Option('enabled', _('Enabled'), 'bool', True),
        Option('model', _('Model'), 'model', '', help=_('Leave empty to choose automatically')),
        Option('model_tier', _('Automatic model choice'), 'choice', 'medium', choices=(
            ('high', _('Most capable')), ('medium', _('Balanced')), ('low', _('Fastest and cheapest')))),
        Option('connect_timeout', _('Connection timeout (seconds)'), 'float', 30.0,
               minimum=SHORTEST_TIMEOUT, maximum=LONGEST_TIMEOUT),
        Option('read_timeout', _('Longest silence while answering (seconds)'), 'float', read_timeout,
               minimum=SHORTEST_TIMEOUT, maximum=LONGEST_TIMEOUT),
    )


@dataclass(frozen=True)
class Model:
    id: str
    name: str = ''
    created: float = 0          # when the service says it was published, seconds since 1970
    context_length: int = 0
    free: bool = False
    reasoning: bool = False
    prices: tuple = ()          # (input, output) per million tokens, when the service lists them

    @property
    def display_name(self):
        return self.name or self.id


def timestamp_of(stamp):
    """Seconds since 1970 for an ISO 8601 time ('2025-09-29T10:00:00.123456789Z'), 0 if unreadable."""
    if not stamp:
        return 0.0
    from datetime import datetime
    stamp = re.sub(r'(\.\d{6})\d+', r'\1', stamp).replace('Z', '+00:00')  # at most microseconds
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


@dataclass
class StreamState:
    """What a provider learns while reading a stream, besides the text."""
    model: str = ''
    finish_reason: str = ''
    usage: Usage = Usage()      # immutable: replaced, never changed
    web_links: list = field(default_factory=list)
    response_id: str = ''
    reasoning_details: list = field(default_factory=list)
    finished: bool = False      # the service said the answer is complete

    def checked(self):
        """Drop what a broken stream put here with the wrong type: a count that is not a
        whole number, a model that is not a name, a link that is not text."""
        if not isinstance(self.model, str):
            self.model = ''
        if not isinstance(self.response_id, str):
            self.response_id = ''
        if not isinstance(self.finish_reason, str):
            self.finish_reason = 'stop'
        u = self.usage
        counts = [n if type(n) is int else None for n in (u.input_tokens, u.output_tokens, u.reasoning_tokens,
                                                           u.cached_tokens)]
        cost = u.cost if u.cost is None or isinstance(u.cost.amount, float) else None
        self.usage = Usage(*counts, cost)
        self.web_links = [w for w in self.web_links if isinstance(w.url, str) and isinstance(w.title, str)]


def redacted_output(text_chat):
    """text_chat, its chunks passed through redacted_stream() with the provider's secrets."""
    @wraps(text_chat)
    def redacted_text_chat(self, *args, **kwargs):
        return redacted_stream(text_chat(self, *args, **kwargs), self.known_secrets)
    return redacted_text_chat


def redacted_errors(method):
    """method, with no secret of the provider's in an error it raises."""
    @wraps(method)
    def redacted_method(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ProviderError as e:
            raise self.known_secrets.redact_error(e) from None
    return redacted_method


class AIProviderPlugin:

    name = ''                   # the internal id: settings are stored under it
    display_name = ''
    description = ''
    capabilities = Capability.TEXT_TO_TEXT
    default_read_timeout = 120.0
    needs_key = True
    key_optional = False        # a key may be given, the service works without one
    default_base_url = ''
    remote_service = False      # a service on the internet: never local, at any address (a gateway passes it on)
    stream_format = 'sse'       # or 'ndjson'
    options = ()                # the provider's own, after common_options()
    tier_patterns = ()          # (tier, regular expression for the whole id) to choose from the live list
    default_embedding_model = ''  # with EMBEDDINGS: the model when none is set; '' for the chat model

    def __init__(self, settings=None, secrets=None, transport=None):
        """settings: option values (default: the user's saved ones); secrets: a store with
        get(provider, name) (default: the user's); transport: shared HTTP (default: one per process)."""
        self._settings = settings
        self._secrets = secrets
        self._transport = transport
        self._options_read = {}

    # settings {{{

    @classmethod
    def all_options(cls):
        if '_all_options' not in cls.__dict__:  # built once per class: option() is called per request
            cls._all_options = cls._build_options()
        return cls._all_options

    @classmethod
    def _build_options(cls):
        base = common_options(cls.default_read_timeout)
        url = (Option('base_url', _('Address (API root)'), 'url', cls.default_base_url,
                      help=_('A local server, a proxy or a gateway that speaks this API')),)
        key = (Option('api_key', _('API key'), 'secret', ''),) if cls.needs_key or cls.key_optional else ()
        fillers = tuple(o for o in cls.options if o.fills)  # shown before what they fill in
        return fillers + url + key + base + cls._embedding_options() + tuple(o for o in cls.options if not o.fills)

    @classmethod
    def _embedding_options(cls):
        if not cls.capabilities & Capability.EMBEDDINGS:
            return ()
        default = cls.default_embedding_model
        return (Option('embedding_model', _('Embedding model'), 'text', '', help=(
            _('Ranks book passages by meaning, when that is turned on. Empty: {model}').format(model=default)
            if default else _('Ranks book passages by meaning, when that is turned on. Empty: the chat model'))),)

    @classmethod
    def option_named(cls, name):
        if '_options_by_name' not in cls.__dict__:
            cls._options_by_name = {o.name: o for o in cls.all_options()}
        return cls._options_by_name[name]

    @property
    def settings(self):
        if self._settings is None:
            from calibre_plugins.bookai.settings.prefs import plugin_prefs
            saved = plugin_prefs()['providers'].get(self.name, {})
            self._settings = dict(saved) if isinstance(saved, dict) else {}
        return self._settings

    def option(self, name):
        """The value of an option: as set, else its default. Read once per instance: an
        instance's settings are fixed for its life."""
        try:
            return self._options_read[name]
        except KeyError:
            value = self._options_read[name] = self.read_option(name)
            return value

    def read_option(self, name):
        if name in self.settings and name != 'api_key':
            try:
                return self.option_named(name).check(self.settings[name])
            except KeyError:  # not an option of this provider's: as it is
                return self.settings[name]
            except ValueError:  # an edited or damaged settings file: missing_setup() says what is wrong
                return self.option_named(name).default
        if name == 'api_key':
            if 'api_key' in self.settings:  # given explicitly (tests, one-off use)
                return self.settings['api_key']
            return self.secrets.get(self.name, 'api_key')
        if name == 'reasoning_effort':
            return self.global_setting('reasoning_effort', 'auto')
        return self.option_named(name).default

    def global_setting(self, name, default):
        if self._settings is not None:
            return self._settings.get(name, default)
        from calibre_plugins.bookai.settings.prefs import plugin_prefs
        return plugin_prefs().get(name, default)

    @property
    def secrets(self):
        if self._secrets is None:
            from calibre_plugins.bookai.settings.secrets import secret_store
            self._secrets = secret_store()
        return self._secrets

    @property
    def transport(self):
        if self._transport is None:
            self._transport = shared_transport()
        return self._transport

    # An instance's settings are fixed for its life (the settings dialog makes new ones),
    # so what is derived from them is computed once, not for every request.

    @cached_property
    def api_key(self):
        return self.option('api_key') if (self.needs_key or self.key_optional) else ''

    @cached_property
    def base_url(self):
        return (self.option('base_url') or self.default_base_url).rstrip('/')

    @property
    def is_local(self) -> bool:
        """Runs on this machine, so nothing sent leaves it: decided from the address in use,
        for every provider alike. The address must be loopback (core.transport.is_local) and
        reached without calibre's proxy; a service on the internet reached through a local
        address (a gateway, a proxy) is not local: the text goes on to the service."""
        from urllib.parse import urlsplit
        from calibre_plugins.bookai.core.transport import is_local
        if self.remote_service:
            return False
        try:
            parts = urlsplit(self.base_url)
            host = parts.hostname
        except ValueError:  # an address that does not parse reaches nothing, and is not vouched for
            return False
        return is_local(host) and self.transport.proxy_for(parts.scheme, host) is None

    @cached_property
    def timeouts(self):
        return Timeouts(connect=float(self.option('connect_timeout')), read=float(self.option('read_timeout')))

    @property
    def is_ready_for_use(self):
        return not self.missing_setup()

    def missing_setup(self):
        """Why this provider cannot be used yet, in a sentence; '' when it can."""
        return self._missing_setup

    def wrong_setting(self):
        """What is wrong with a value saved for one of the options, in a sentence; '' when
        every value saved can be used (the file was edited, or written by an older version)."""
        for option in self.all_options():
            if option.name in self.settings and option.kind != 'secret':
                try:
                    option.check(self.settings[option.name])
                except ValueError as e:
                    return _('The setting "{option}" of {provider} cannot be used: {problem}. Change it in the '
                             'settings.').format(option=option.label, provider=self.display_name, problem=e)
        return ''

    @cached_property
    def _missing_setup(self):
        if problem := self.wrong_setting():
            return problem
        if not self.option('enabled'):
            return _('{provider} is disabled in the settings.').format(provider=self.display_name)
        if not self.base_url:
            return _('{provider} needs the address of its server.').format(provider=self.display_name)
        if self.needs_key and not self.api_key:
            return _('{provider} needs an API key: add it in the settings.').format(provider=self.display_name)
        return ''

    # }}}

    # what a provider implements {{{

    def auth_headers(self):
        return {'Authorization': f'Bearer {self.api_key}'} if self.api_key else {}

    def extra_headers(self):
        return {}

    @cached_property
    def _headers(self):
        h = {'Content-Type': 'application/json'}
        h.update(self.auth_headers())
        try:
            h.update(self.extra_headers())
        except ValueError as e:  # the user's extra headers
            raise NotConfigured(_('{provider}: {problem}').format(provider=self.display_name, problem=e)) from None
        return h

    def headers(self):
        return dict(self._headers)

    def request(self, path: str, payload: object = None, method: str | None = None) -> Request:
        """A request to base_url + path, with this provider's headers and its secrets marked."""
        body = None if payload is None else to_json(payload).encode('utf-8')
        return Request(self.base_url + path, method or ('GET' if payload is None else 'POST'), self.headers(), body,
                       secrets=self.secret_values)

    @cached_property
    def secret_values(self) -> tuple:
        """Every value of this provider's that must never be shown: its keys (every secret
        option), the credentials in its address, the values of the headers the user set, and the
        credentials of calibre's proxies."""
        values = []
        for o in self.all_options():
            if o.kind == 'secret':
                values.append(self.option(o.name))
            elif o.kind == 'headers':
                try:
                    headers = parse_headers(self.option(o.name) or ())
                except ValueError:
                    headers = ()
                for _name, value in headers:
                    values += secrets_in_header(value)
        values += secrets_in_url(self.base_url)
        for proxy in (getattr(self.transport, 'proxies', None) or {}).values():
            values += secrets_in_url(proxy if '://' in str(proxy) else f'http://{proxy}')
        return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))

    @cached_property
    def known_secrets(self) -> Secrets:
        """secret_values in every form a service may echo them in."""
        return Secrets(self.secret_values)

    def chat_request(self, messages, model, max_tokens=None):
        raise NotImplementedError()

    def read_stream(self, events, state):
        """Yield TextDelta/ReasoningDelta for the decoded events; fill state; raise ProviderError
        for an error the service reports inside the stream."""
        raise NotImplementedError()

    def models_request(self):
        raise NotImplementedError()

    def parse_models(self, data):
        raise NotImplementedError()

    def embed_request(self, texts, model):
        """One request for the vectors of texts. The default: the /embeddings route of OpenAI,
        which most services speak."""
        return self.request('/embeddings', {'model': model, 'input': list(texts)})

    def parse_embeddings(self, data):
        """The vectors in an embeddings answer, in the order of the texts."""
        return [item['embedding'] for item in sorted(data['data'], key=lambda item: item.get('index', 0))]

    def parse_error(self, status, body):
        """(message, code) from an error body; the generic reading knows the usual JSON shapes."""
        try:
            data = limits.load_json(body)
        except limits.TooDeep:  # nothing worth quoting
            return '', ''
        except ValueError:
            return text_of_html(body)[:300], ''
        err = data.get('error', data) if isinstance(data, dict) else data
        if isinstance(err, list) and err:
            err = err[0].get('error', err[0]) if isinstance(err[0], dict) else err[0]
        if isinstance(err, dict):
            message = err.get('message') or err.get('detail') or err.get('error') or ''
            code = ' '.join(str(err[k]) for k in ('code', 'type', 'status') if err.get(k))
            return str(message), code
        return str(err), ''

    # }}}

    # the conversation {{{

    @redacted_output
    def text_chat(self, messages, use_model='', cancel=None, max_tokens=None):
        """Send the conversation; yield TextDelta and ReasoningDelta chunks as the answer
        streams, then one Done (finish_reason 'cancelled' after Stop) or one Failed.
        Never raises."""
        cancel = cancel or CancelToken()
        state = StreamState()
        model = use_model
        try:
            self.check_setup()
            model = use_model or self.choose_model(cancel=cancel)
            state.model = model
            response = self.open(self.chat_request(list(messages), model, max_tokens), model, cancel)
            try:
                yield from self.progressing(self.answer_chunks(self.events(response), state), response)
                response.finish()  # read the stream's end, so that the connection can be kept
            finally:
                response.close()  # unless finish() kept it
            if not state.finished:
                raise ConnectionLost(_('{provider} stopped sending before the answer was complete.').format(
                    provider=self.display_name))
        except Cancelled:
            yield self.done(state, model, 'cancelled')
            return
        except ProviderError as e:
            yield Failed(e)
            return
        except Exception as e:  # a bug of ours must still reach the user as a message, not a crash
            import traceback
            yield Failed(ProtocolError(_('{provider}: unexpected problem: {error}').format(
                provider=self.display_name, error=self.scrub(f'{type(e).__name__}: {e}')),
                details=self.scrub(traceback.format_exc())))
            return
        yield self.done(state, model, state.finish_reason or 'stop')

    def check_setup(self):
        """Raises MissingKey or NotConfigured, with why in a sentence, unless the provider can be used."""
        if problem := self.missing_setup():
            raise (MissingKey if self.needs_key and not self.api_key else NotConfigured)(problem)

    def done(self, state, model, finish_reason):
        """The Done chunk for what the stream told, finished as finish_reason says."""
        return Done(model=state.model or model, finish_reason=finish_reason, usage=self.costed(state),
                    web_links=tuple(state.web_links), response_id=state.response_id,
                    reasoning_details=tuple(state.reasoning_details))

    def scrub(self, text: str) -> str:
        """text with none of this provider's secrets in it, in any of their forms."""
        return self.known_secrets.redact(text)

    def redacted_models(self, models) -> list:
        """The model list with no secret in an id or a name."""
        secrets = self.known_secrets
        if not secrets:
            return list(models)
        from dataclasses import replace
        return [replace(m, id=secrets.redact(m.id), name=secrets.redact(m.name)) for m in models]

    def open(self, request, model, cancel):
        try:
            return self.transport.open(request, self.timeouts, cancel, provider=self.display_name)
        except HTTPError as e:
            message, code = self.parse_error(e.status, e.body)
            raise http_error_to_provider_error(e, self.display_name, message, code, model) from None

    def json_answer(self, request: Request, model: str, cancel: CancelToken, unreadable: str) -> object:
        """The JSON the service answers to request; unreadable (with {provider}) says when it is not JSON.
        A body larger than limits.MAX_JSON_BYTES, or nested deeper than limits.MAX_JSON_DEPTH, is
        not read: TooLarge, ProtocolError."""
        response = self.open(request, model, cancel)
        body = response.read_all(limits.MAX_JSON_BYTES + 1)
        if len(body) > limits.MAX_JSON_BYTES:
            raise too_large(self.display_name, limits.MAX_JSON_BYTES)
        try:
            return limits.load_json(body)
        except limits.TooDeep:
            raise too_deep(self.display_name) from None
        except ValueError:
            raise ProtocolError(unreadable.format(provider=self.display_name)) from None

    def events(self, response: Response) -> Iterator:
        """The decoded events of a streamed answer. Bounded: limits.MAX_ANSWER_BYTES for the
        whole answer (TooLarge), limits.MAX_LINE_CHARS for a line, limits.MAX_JSON_DEPTH."""
        decoder = NDJSONDecoder() if self.stream_format == 'ndjson' else SSEDecoder()
        first_bytes, any_event, size, most = b'', False, 0, limits.MAX_ANSWER_BYTES
        try:
            for data in response.chunks():
                size += len(data)
                if size > most:
                    raise too_large(self.display_name, most)
                if len(first_bytes) < 300:
                    first_bytes += data[:300]
                for event in decoder.feed(data):
                    any_event = True
                    yield event
            for event in decoder.close():
                any_event = True
                yield event
        except limits.LineTooLong as e:
            raise TooLarge(_('{provider} sent a line longer than {megabytes:g} MB, the most Book AI accepts, '
                             'so the answer was stopped.').format(
                provider=self.display_name, megabytes=e.limit / 2 ** 20)) from None
        except limits.TooDeep:
            raise too_deep(self.display_name) from None
        except ValueError as e:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.display_name), details=str(e)) from None
        if first_bytes and not any_event:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.display_name), details=self.scrub(first_bytes.decode('utf-8', 'replace')))

    def answer_chunks(self, events, state):
        """read_stream(), for a service that may send JSON of any shape: each provider reads
        the shape its format documents, and anything else is the service breaking the format,
        told as such (a ProtocolError), not as a bug of ours."""
        try:
            for chunk in self.read_stream(events, state):
                if not isinstance(chunk.text, str):
                    raise TypeError(f'{type(chunk.text).__name__} where text was expected')
                yield chunk
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.display_name), details=self.scrub(f'{type(e).__name__}: {e}')) from None
        finally:
            state.checked()

    @staticmethod
    def progressing(chunks: Iterator, response: Response) -> Iterator:
        """chunks, with the response's deadline moved on by each one that carries answer text:
        keepalives, pings and empty deltas yield nothing here, so they do not count as the
        service answering (see transport.Deadline). Also after the reader took the chunk, so
        that a reader that was slow to take it is not counted as the service's silence."""
        deadline = response.deadline
        for chunk in chunks:
            if chunk.text:
                deadline.progress()
                yield chunk
                deadline.progress()
            else:
                yield chunk

    @staticmethod
    def json_of(event, provider):
        """The JSON object an SSE event carries."""
        try:
            data = limits.load_json(event.data)
        except limits.TooDeep:
            raise too_deep(provider) from None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=provider), details=event.data[:500])
        return data

    def costed(self, state):
        u = state.usage
        if u.cost is None:
            estimate = pricing.estimate(self.name, state.model, u)
            if estimate is not None:
                from dataclasses import replace
                return replace(u, cost=estimate)
        return u

    # }}}

    # embeddings {{{

    def embedding_model(self, cancel=None):
        """The model that makes embeddings: as set, else the provider's default, else the chat model."""
        return ((self.option('embedding_model') or '').strip() or self.default_embedding_model
                or self.choose_model(cancel=cancel))

    @redacted_errors
    def embed(self, texts, model='', cancel=None):
        """A vector (a list of floats) for each of texts, in order, asked EMBED_BATCH texts per
        request. Raises a ProviderError with what the service said, or Cancelled on Stop."""
        if not self.capabilities & Capability.EMBEDDINGS:
            raise NotConfigured(_('{provider} offers no embeddings to rank passages by meaning.').format(
                provider=self.display_name))
        self.check_setup()
        texts = list(texts)
        if not texts:
            return []
        cancel = cancel or CancelToken()
        model = model or self.embedding_model(cancel)
        unreadable = _('{provider} sent embeddings that could not be read.')
        vectors = []
        for start in range(0, len(texts), EMBED_BATCH):
            if cancel.cancelled:
                raise Cancelled()
            batch = texts[start:start + EMBED_BATCH]
            data = self.json_answer(self.embed_request(batch, model), model, cancel, unreadable)
            try:
                got = [[float(x) for x in v] for v in self.parse_embeddings(data)]
            except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                got = None
            if got is None or len(got) != len(batch):
                raise ProtocolError(unreadable.format(provider=self.display_name),
                                    details=self.scrub(json.dumps(data)[:500]))
            vectors.extend(got)
        return vectors

    # }}}

    # models {{{

    @redacted_errors
    def models(self, refresh=False, cancel=None):
        """The live model list, cached for a day in calibre's cache folder."""
        path = self.models_cache_path()
        if not refresh:
            cached = read_models_cache(path)
            if cached is not None:
                return self.redacted_models(cached)
        data = self.json_answer(self.models_request(), '', cancel or CancelToken(),
                                _('{provider} sent a model list that could not be read.'))
        models = self.redacted_models(kept_models(self.parse_models(first_items(data, limits.MAX_MODELS))))
        write_models_cache(path, {'fetched': time.time(), 'base_url': without_userinfo(self.base_url),
                                  'models': [m.__dict__ for m in models]})
        return models

    def models_cache_path(self):
        import hashlib
        from calibre.constants import cache_dir
        where = hashlib.sha256(self.base_url.encode('utf-8')).hexdigest()[:12]
        return os.path.join(cache_dir(), 'bookai', 'models', f'{self.name}-{where}.json')

    def choose_model(self, tier=None, cancel=None):
        """The configured model, or the newest live model of the tier."""
        configured = (self.option('model') or '').strip()
        if configured:
            return configured
        models = self.models(cancel=cancel)
        chosen = self.pick_for_tier(models, tier or self.option('model_tier'))
        if chosen is None:
            raise NotConfigured(_('{provider} lists no model to use: choose one in the settings.').format(
                provider=self.display_name))
        return chosen.id

    def pick_for_tier(self, models, tier):
        """The newest model whose id matches the tier's pattern; else the first listed."""
        for t, pattern in self.tier_patterns:
            if t == tier:
                matching = [m for m in models if re.fullmatch(pattern, m.id, flags=re.IGNORECASE)]
                if matching:
                    return max(matching, key=self.newness)
        return models[0] if models else None

    @staticmethod
    def newness(model):
        """Sorts models oldest to newest: by publication date, then by the version in the id."""
        return model.created, version_key(model.id)

    def human_readable_model_name(self, model_id):
        return model_id

    def test_connection(self) -> tuple[bool, str]:
        """(ok, sentence): a real, minimal request, told in words, with no secret in them."""
        ok, sentence = self._test_connection()
        return ok, self.scrub(sentence)

    def _test_connection(self):
        if problem := self.missing_setup():
            return False, problem
        try:
            models = self.models(refresh=True)
        except ProviderError as e:
            return False, str(e)
        from calibre_plugins.bookai.core.messages import Message, Role
        try:
            model = self.choose_model()
        except ProviderError as e:
            return False, str(e)
        answer = ''
        for chunk in self.text_chat([Message(Role.USER, 'Reply with the single word: ready')], model, max_tokens=16):
            if isinstance(chunk, Failed):
                return False, chunk.message
            if isinstance(chunk, TextDelta):
                answer += chunk.text
        return True, _('{provider} answered with model {model} ({count} models available).').format(
            provider=self.display_name, model=model, count=len(models))

    # }}}

    def config_widget(self):
        from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
        return ProviderConfigWidget(self)

    def save_settings(self, config_widget):
        config_widget.commit()


def redacted_stream(chunks, secrets: Secrets):
    """chunks, with every secret redacted from what they carry: the answer and the reasoning
    (a secret split across two pieces included), the model, the web links, an error. The
    shortest tail of a piece that could begin a secret waits for the next piece (or the end),
    so nothing is lost; with no secret, the chunks pass untouched, as soon as they come."""
    if not secrets:
        yield from chunks
        return
    held_kind, held = TextDelta, ''
    try:
        for chunk in chunks:
            kind = type(chunk)
            if kind is TextDelta or kind is ReasoningDelta:
                if kind is not held_kind:
                    if held:
                        yield held_kind(held)
                    held_kind, held = kind, ''
                text = secrets.redact(held + chunk.text)
                cut = secrets.unfinished_start(text)
                held = text[cut:]
                if cut:
                    yield kind(text[:cut])
                continue
            if held:
                yield held_kind(held)
                held = ''
            yield redacted_chunk(chunk, secrets)
        if held:
            yield held_kind(held)
    finally:
        if hasattr(chunks, 'close'):
            chunks.close()  # a reader that stops early (Stop, a closed window) ends the request at once


def redacted_chunk(chunk, secrets: Secrets):
    """A Done or Failed with no secret in it."""
    if isinstance(chunk, Failed):
        secrets.redact_error(chunk.error)
        return chunk
    if isinstance(chunk, Done):
        from dataclasses import replace
        kept = tuple(d for d in chunk.reasoning_details  # signed: dropped rather than changed
                     if secrets.redact(json.dumps(d, ensure_ascii=False)) == json.dumps(d, ensure_ascii=False))
        return replace(chunk, model=secrets.redact(chunk.model), response_id=secrets.redact(chunk.response_id),
                       web_links=tuple(WebLink(secrets.redact(w.title), secrets.redact(w.url))
                                       for w in chunk.web_links), reasoning_details=kept)
    return chunk


def first_items(data: object, count: int) -> object:
    """A model list as parsed JSON, with no list in it (at its top, or in its top object)
    longer than count: the rest is not looked at."""
    if isinstance(data, list):
        return data[:count]
    if isinstance(data, dict):
        return {k: v[:count] if isinstance(v, list) else v for k, v in data.items()}
    return data


def kept_models(models: list) -> list:
    """The models worth keeping from a list a service sent: at most limits.MAX_MODELS, none
    with an id longer than limits.MAX_MODEL_ID_CHARS, names shortened to that."""
    from dataclasses import replace
    most = limits.MAX_MODEL_ID_CHARS
    kept = [m if len(m.name) <= most else replace(m, name=m.name[:most]) for m in models
            if isinstance(m.id, str) and isinstance(m.name, str) and len(m.id) <= most]
    return kept[:limits.MAX_MODELS]


def read_models_cache(path: str) -> list | None:
    """The cached model list at path, if it is there and less than a day old. A file larger
    than limits.MAX_MODELS_CACHE_BYTES, or one that is not a model list, is set aside."""
    try:
        with open(path, 'rb') as f:
            raw = f.read(limits.MAX_MODELS_CACHE_BYTES + 1)
    except OSError:
        return None
    try:
        if len(raw) > limits.MAX_MODELS_CACHE_BYTES:
            raise ValueError('too large')
        cached = limits.load_json(raw)
        fetched = cached['fetched']
        models = [Model(**m) for m in cached['models']]
        if not isinstance(fetched, (int, float)) or not all(isinstance(m.id, str) for m in models):
            raise ValueError('not a model list')
    except (ValueError, KeyError, TypeError):
        from calibre_plugins.bookai.core.files import set_aside
        try:
            set_aside(path)  # never over a copy set aside before
        except OSError:
            pass
        return None
    return models if time.time() - fetched < MODELS_CACHE_SECONDS else None


def write_models_cache(path: str, cached: dict) -> None:
    """Cache a model list, unless it is larger than limits.MAX_MODELS_CACHE_BYTES (it is then
    asked for again next time)."""
    text = json.dumps(cached)
    if len(text.encode('utf-8')) > limits.MAX_MODELS_CACHE_BYTES:
        return
    from calibre_plugins.bookai.core.files import write_private
    try:
        write_private(path, text)
    except OSError:  # a cache: the list is asked for again next time
        pass


def version_key(model_id):
    """'gemini-2.5-flash' sorts after 'gemini-2.0-flash': the numbers in an id, compared as numbers."""
    return tuple(float(n) for n in re.findall(r'\d+(?:\.\d+)?', model_id))


def too_large(provider: str, limit: int) -> TooLarge:
    """The error for a service that sent more than limit bytes for one answer."""
    return TooLarge(_('{provider} sent more than {megabytes:g} MB, the most Book AI accepts for one answer, '
                      'so it was stopped.').format(provider=provider, megabytes=limit / 2 ** 20))


def too_deep(provider: str) -> ProtocolError:
    """The error for JSON nested deeper than limits.MAX_JSON_DEPTH."""
    return ProtocolError(_('{provider} sent JSON nested deeper than {depth} levels, the most Book AI reads, '
                           'so it was not read.').format(provider=provider, depth=limits.MAX_JSON_DEPTH))


def text_of_html(body):
    """Some servers answer errors with an HTML page: its visible text, briefly."""
    text = re.sub(r'(?is)<(script|style).*?</\1>', ' ', body)
    text = re.sub(r'<[^>]+>', ' ', text)
    return ' '.join(text.split())


_transport = None


def shared_transport():
    global _transport
    if _transport is None:
        _transport = Transport()
    return _transport

