# License: GPLv3 Copyright: the Book AI developers
"""The provider base class, shaped like calibre's AIProviderPlugin: the wire contract,
text_chat(), embed(), the model list and Test connection.

A provider is one small class that knows its wire format and nothing else:

- `options`: the settings it needs, declared (providers/options.py; the settings
  dialog and the command line are built from them);
- `chat_request()`: one HTTP request for a conversation;
- `stream_format` and `read_stream()`: the decoded events in, answer chunks out;
- `models_request()` and `parse_models()`: the live model list (providers/models.py
  keeps it, caches it and chooses from it);
- `parse_error()`: what the service said when it answered with an error status;
- with Capability.EMBEDDINGS: `embed_request()` and `parse_embeddings()` (the
  default is the /embeddings route most services copy from OpenAI);
- with Capability.IMAGE_GENERATION (and IMAGE_EDITING, when it can change an image it is
  given): `image_request()` and `parse_image_answer()`; generate_image() does the rest.

Everything else is here, the same for all: reading its settings and key, timeouts,
Stop, turning every failure into a Failed chunk, usage and cost, and keeping the
provider's secrets (secret_values) out of everything that leaves it: text_chat's chunks
go through redacted_stream() (providers/streaming.py), and errors, model lists and Test
connection are redacted too. The rest of the plugin only ever calls text_chat() (and
embed(), for ranking passages by meaning) and never knows which provider it holds.
"""

import json
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from enum import Flag, auto
from functools import cached_property, wraps
from typing import Any, cast
from urllib.parse import urlsplit

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import (
    ConnectionLost, MissingKey, NotConfigured, ProtocolError, ProviderError, Secrets, TooLarge, secrets_in_header,
    secrets_in_url, secrets_of,
)
from calibre_plugins.bookai.core.images import Image, ImageAddress, ImageResult, image_from_bytes
from calibre_plugins.bookai.core.messages import Chunk, Delta, Done, Failed, Message, Role, Usage
from calibre_plugins.bookai.core.multipart import encode_multipart
from calibre_plugins.bookai.core.streams import NDJSONDecoder, SSEDecoder
from calibre_plugins.bookai.core.transport import (
    HTTPError, Request, Response, Timeouts, Transport, http_error_to_provider_error, is_local as is_local_host,
)
from calibre_plugins.bookai.core.web_links import shown_address
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.models import (
    Model, cache_path, first_items, kept_models, model_for_tier, read_models_cache, write_models_cache,
)
from calibre_plugins.bookai.providers.options import Option, declared_options, parse_headers, unusable_values
from calibre_plugins.bookai.providers.streaming import (
    StreamState, progressing, redacted_stream, too_complex, too_large,
)
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import SecretStore, secret_store

load_translations()

to_json = json.JSONEncoder(ensure_ascii=False).encode  # made once: json.dumps makes one per call with options

EMBED_BATCH = 64  # texts per embeddings request


class Capability(Flag):
    """What a provider can do besides answering."""
    NONE = 0
    TEXT_TO_TEXT = auto()
    WEB_SEARCH = auto()
    REASONING = auto()
    EMBEDDINGS = auto()
    IMAGE_GENERATION = auto()  # makes an image from words (a cover)
    IMAGE_EDITING = auto()     # changes an image it is given, as words ask (Refine)


def redacted_output(text_chat: Callable[..., Iterator[Chunk]]) -> Callable[..., Iterator[Chunk]]:
    """text_chat, its chunks passed through redacted_stream() with the provider's secrets."""
    @wraps(text_chat)
    def redacted_text_chat(self, *args, **kwargs):
        return redacted_stream(text_chat(self, *args, **kwargs), self.known_secrets)
    return redacted_text_chat


def redacted_errors(method: Callable) -> Callable:
    """method, with no secret of the provider's in an error it raises."""
    @wraps(method)
    def redacted_method(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ProviderError as e:
            raise self.known_secrets.redact_error(e) from None
    return redacted_method


def redacted_answer(method: Callable) -> Callable:
    """method, with no secret of the provider's in what it gives back (every string of it, through
    Secrets.redacted: an ImageResult's model, revised prompt and text, a model list's every field)
    nor in an error it raises."""
    @wraps(method)
    def redacted_method(self, *args, **kwargs):
        try:
            return self.known_secrets.redacted(method(self, *args, **kwargs))
        except ProviderError as e:
            raise self.known_secrets.redact_error(e) from None
    return redacted_method


# The largest number an embedding may hold: real ones are a few units at most (most are normalized to
# length 1); a larger one (1e308) would overflow the similarities, and NaN compares as nothing.
MOST_EMBEDDING_VALUE = 1e6


class AIProviderPlugin:
    """One AI service: a subclass says where it is and how its wire format reads (see above)."""

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
    options: tuple[Option, ...] = ()  # the provider's own; all_options() adds those every provider has
    tier_patterns: tuple[tuple[str, str], ...] = ()  # (tier, regular expression for the whole id)
    default_embedding_model = ''  # with EMBEDDINGS: the model when none is set; '' for the chat model
    has_model_chooser = False   # its settings offer a chooser over the model list's details (gui/model_chooser.py)
    default_image_model = ''    # with IMAGE_GENERATION: the model that makes images when none is set

    def __init__(self, settings: dict | None = None, secrets: SecretStore | None = None,
                 transport: Transport | None = None):
        """settings: option values (default: the user's saved ones); secrets: a store with
        get(provider, name) (default: the user's); transport: shared HTTP (default: one per process)."""
        self._settings = settings
        self._secrets = secrets
        self._transport = transport
        self._options_read: dict[str, Any] = {}

    # settings {{{

    # made by all_options() and option_named(), once per class
    _all_options: tuple[Option, ...]
    _options_by_name: dict[str, Option]

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        """Every option of this provider, in the order the settings show them."""
        if '_all_options' not in cls.__dict__:  # built once per class: option() is called per request
            cls._all_options = declared_options(
                cls.options, default_base_url=cls.default_base_url, takes_key=cls.needs_key or cls.key_optional,
                read_timeout=cls.default_read_timeout, embeddings=bool(cls.capabilities & Capability.EMBEDDINGS),
                default_embedding_model=cls.default_embedding_model,
                images=bool(cls.capabilities & Capability.IMAGE_GENERATION), default_image_model=cls.default_image_model)
        return cls._all_options

    @classmethod
    def option_named(cls, name: str) -> Option:
        """The option called name; KeyError when this provider has none."""
        if '_options_by_name' not in cls.__dict__:
            cls._options_by_name = {o.name: o for o in cls.all_options()}
        return cls._options_by_name[name]

    @property
    def settings(self) -> dict:
        """The option values as saved (or as given when made)."""
        if self._settings is None:
            saved = plugin_prefs()['providers'].get(self.name, {})
            self._settings = dict(saved) if isinstance(saved, dict) else {}
        return self._settings

    # an option's value is of its kind (Option.kind: text, a number, a flag...), which its name alone
    # does not tell a type checker: Any
    def option(self, name: str) -> Any:
        """The value of an option: as set, else its default. Read once per instance: an
        instance's settings are fixed for its life."""
        try:
            return self._options_read[name]
        except KeyError:
            value = self._options_read[name] = self.read_option(name)
            return value

    def read_option(self, name: str) -> Any:
        """The value of an option as the settings hold it, checked; its default when it cannot be used."""
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

    def global_setting(self, name: str, default: object) -> Any:
        """A setting of the plugin's, not of one provider's (from the settings given, when given)."""
        if self._settings is not None:
            return self._settings.get(name, default)
        return plugin_prefs().get(name, default)

    @property
    def secrets(self) -> SecretStore:
        """The store the API key is kept in."""
        if self._secrets is None:
            self._secrets = secret_store()
        return self._secrets

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = shared_transport()
        return self._transport

    # An instance's settings are fixed for its life (the settings dialog makes new ones),
    # so what is derived from them is computed once, not for every request.

    @cached_property
    def api_key(self) -> str:
        return self.option('api_key') if (self.needs_key or self.key_optional) else ''

    @cached_property
    def base_url(self) -> str:
        return (self.option('base_url') or self.default_base_url).rstrip('/')

    @property
    def is_local(self) -> bool:
        """Runs on this machine, so nothing sent leaves it: decided from the address in use,
        for every provider alike. The address must be loopback (core.transport.is_local) and
        reached without calibre's proxy; a service on the internet reached through a local
        address (a gateway, a proxy) is not local: the text goes on to the service."""
        if self.remote_service:
            return False
        try:
            parts = urlsplit(self.base_url)
            host = parts.hostname
        except ValueError:  # an address that does not parse reaches nothing, and is not vouched for
            return False
        return host is not None and is_local_host(host) and self.transport.proxy_for(parts.scheme, host) is None

    @cached_property
    def timeouts(self) -> Timeouts:
        return Timeouts(connect=float(self.option('connect_timeout')), read=float(self.option('read_timeout')))

    def missing_setup(self) -> str:
        """Why this provider cannot be used yet, in a sentence; '' when it can."""
        return self._missing_setup

    def wrong_setting(self) -> str:
        """What is wrong with a value saved for one of the options, in a sentence; '' when
        every value saved can be used (the file was edited, or written by an older version)."""
        for option, problem in unusable_values(self.all_options(), self.settings):
            return _('The setting "{option}" of {provider} cannot be used: {problem}. Change it in the '
                     'settings.').format(option=option.label, provider=self.display_name, problem=problem)
        return ''

    @cached_property
    def _missing_setup(self) -> str:
        if problem := self.wrong_setting():
            return problem
        if not self.option('enabled'):
            return _('{provider} is disabled in the settings.').format(provider=self.display_name)
        if not self.base_url:
            return _('{provider} needs the address of its server.').format(provider=self.display_name)
        if self.needs_key and not self.api_key:
            return _('{provider} needs an API key: add it in the settings.').format(provider=self.display_name)
        return ''

    def check_setup(self) -> None:
        """Raises MissingKey or NotConfigured, with why in a sentence, unless the provider can be used."""
        if problem := self.missing_setup():
            raise (MissingKey if self.needs_key and not self.api_key else NotConfigured)(problem)

    # }}}

    # headers, requests and secrets {{{

    def auth_headers(self) -> dict[str, str]:
        """The headers that carry the key (a provider may send it its own way)."""
        return {'Authorization': f'Bearer {self.api_key}'} if self.api_key else {}

    def extra_headers(self) -> dict[str, str]:
        """Headers a provider sends with every request besides the key; ValueError for ones the user set wrong."""
        return {}

    @cached_property
    def _headers(self) -> dict[str, str]:
        h = {'Content-Type': 'application/json'}
        h.update(self.auth_headers())
        try:
            h.update(self.extra_headers())
        except ValueError as e:  # the user's extra headers
            raise NotConfigured(_('{provider}: {problem}').format(provider=self.display_name, problem=e)) from None
        return h

    def headers(self) -> dict[str, str]:
        """The headers of every request."""
        return dict(self._headers)

    def request(self, path: str, payload: object = None, method: str | None = None) -> Request:
        """A request to base_url + path, with this provider's headers and its secrets marked."""
        body = None if payload is None else to_json(payload).encode('utf-8')
        return Request(self.base_url + path, method or ('GET' if payload is None else 'POST'), self.headers(), body,
                       secrets=self.secret_values)

    @cached_property
    def secret_values(self) -> tuple[str, ...]:
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
                    headers = []
                for _name, value in headers:
                    values += secrets_in_header(value)
        values += secrets_in_url(self.base_url)
        for proxy in (getattr(self.transport, 'proxies', None) or {}).values():
            values += secrets_in_url(proxy if '://' in str(proxy) else f'http://{proxy}')
        return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))

    @cached_property
    def known_secrets(self) -> Secrets:
        """secret_values in every form a service may echo them in (made once for the same values)."""
        return secrets_of(self.secret_values)

    def scrub(self, text: str) -> str:
        """text with none of this provider's secrets in it, in any of their forms, nor the
        beginning of one at its end (it may have been cut there)."""
        return self.known_secrets.redact_field(text)

    def read_json(self, body: bytes | str, memory_per_byte: float | None = None) -> Any:
        """The JSON of an answer (limits.load_json: ValueError, limits.TooComplex), every string in it
        up to errors.LONGEST_FIELD characters redacted as it is read (Secrets.redacted), before
        anything is taken from it, cut or put in a sentence. memory_per_byte: as load_json's."""
        return self.known_secrets.redacted(limits.load_json(body, memory_per_byte=memory_per_byte))

    # }}}

    # what a provider implements {{{

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        """One request for the conversation messages, answered by model as a stream."""
        raise NotImplementedError()

    def read_stream(self, events: Iterator, state: StreamState) -> Iterator[Delta]:
        """Yield TextDelta/ReasoningDelta for the decoded events; fill state; raise ProviderError
        for an error the service reports inside the stream."""
        raise NotImplementedError()

    def models_request(self) -> Request:
        """One request for the live model list."""
        raise NotImplementedError()

    def parse_models(self, data: Any) -> list[Model]:
        """The models in the service's answer to models_request()."""
        raise NotImplementedError()

    def embed_request(self, texts: list[str], model: str) -> Request:
        """One request for the vectors of texts. The default: the /embeddings route of OpenAI,
        which most services speak."""
        return self.request('/embeddings', {'model': model, 'input': list(texts)})

    def parse_embeddings(self, data: Any) -> list[list[float]]:
        """The vectors in an embeddings answer, in the order of the texts."""
        return [item['embedding'] for item in sorted(data['data'], key=lambda item: item.get('index', 0))]

    def parse_error(self, status: int, body: str) -> tuple[str, str]:
        """(message, code) from an error body; the generic reading knows the usual JSON shapes."""
        try:
            data = limits.load_json(body)
        except limits.TooComplex:  # nothing worth quoting
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
    def text_chat(self, messages: Iterable[Message], use_model: str = '', cancel: CancelToken | None = None,
                  max_tokens: int | None = None) -> Iterator[Chunk]:
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
                yield from progressing(self.answer_chunks(self.events(response), state), response)
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
            yield Failed(ProtocolError(_('{provider}: unexpected problem: {error}').format(
                provider=self.display_name, error=self.scrub(f'{type(e).__name__}: {e}')),
                details=self.scrub(traceback.format_exc())))
            return
        yield self.done(state, model, state.finish_reason or 'stop')

    def done(self, state: StreamState, model: str, finish_reason: str) -> Done:
        """The Done chunk for what the stream told, finished as finish_reason says."""
        return Done(model=state.model or model, finish_reason=finish_reason, usage=self.costed(state),
                    web_links=tuple(state.web_links), response_id=state.response_id,
                    reasoning_details=tuple(state.reasoning_details))

    def costed(self, state: StreamState) -> Usage:
        """The usage the stream told, with its estimated cost when the service told none."""
        u = state.usage
        if u.cost is None:
            estimate = pricing.estimate(self.name, state.model, u)
            if estimate is not None:
                return replace(u, cost=estimate)
        return u

    def open(self, request: Request, model: str, cancel: CancelToken) -> Response:
        """The response to request; an error status raised as the ProviderError it means."""
        try:
            return self.transport.open(request, self.timeouts, cancel, provider=self.display_name)
        except HTTPError as e:
            message, code = self.parse_error(e.status, e.body)
            raise http_error_to_provider_error(e, self.display_name, message, code, model) from None

    def json_answer(self, request: Request, model: str, cancel: CancelToken, unreadable: str) -> Any:
        """The JSON the service answers to request; unreadable (with {provider}) says when it is not JSON.
        A body larger than limits.MAX_JSON_BYTES, nested deeper than limits.MAX_JSON_DEPTH or
        holding more values than its size allows (limits.JSON_MEMORY_PER_BYTE) is not read:
        TooLarge, ProtocolError."""
        response = self.open(request, model, cancel)
        body = response.read_all(limits.MAX_JSON_BYTES + 1)
        if len(body) > limits.MAX_JSON_BYTES:
            raise too_large(self.display_name, limits.MAX_JSON_BYTES)
        try:
            return self.read_json(body)
        except limits.TooComplex as e:
            raise too_complex(self.display_name, e) from None
        except ValueError:
            raise ProtocolError(unreadable.format(provider=self.display_name)) from None

    def events(self, response: Response) -> Iterator:
        """The decoded events of a streamed answer. Bounded: limits.MAX_ANSWER_BYTES for the
        whole answer (TooLarge), limits.MAX_LINE_CHARS for a line, limits.MAX_JSON_DEPTH."""
        decoder: NDJSONDecoder | SSEDecoder = NDJSONDecoder() if self.stream_format == 'ndjson' else SSEDecoder()
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
        except limits.TooComplex as e:
            raise too_complex(self.display_name, e) from None
        except ValueError as e:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.display_name), details=str(e)) from None
        if first_bytes and not any_event:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.display_name), details=self.scrub(first_bytes.decode('utf-8', 'replace')))

    def answer_chunks(self, events: Iterator, state: StreamState) -> Iterator[Delta]:
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

    # }}}

    # embeddings {{{

    def embedding_model(self, cancel: CancelToken | None = None) -> str:
        """The model that makes embeddings: as set, else the provider's default, else the chat model."""
        return ((self.option('embedding_model') or '').strip() or self.default_embedding_model
                or self.choose_model(cancel=cancel))

    @redacted_errors
    def embed(self, texts: Iterable[str], model: str = '', cancel: CancelToken | None = None,
              progress: Callable[[int, int], None] | None = None) -> list[list[float]]:
        """A vector (a list of floats) for each of texts, in order, asked EMBED_BATCH texts per
        request; progress(done, total), when given, after each request. Raises a ProviderError
        with what the service said, or Cancelled on Stop (looked at before each request)."""
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
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            if cancel.cancelled:
                raise Cancelled()
            batch = texts[start:start + EMBED_BATCH]
            data = self.json_answer(self.embed_request(batch, model), model, cancel, unreadable)
            got: list[list[float]] | None
            try:
                got = [[float(x) for x in v] for v in self.parse_embeddings(data)]
                if not all(abs(x) <= MOST_EMBEDDING_VALUE for v in got for x in v):  # NaN, infinity, 1e308:
                    got = None                                                        # nothing to rank by
            except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError):
                got = None
            if got is None or len(got) != len(batch):
                raise ProtocolError(unreadable.format(provider=self.display_name),
                                    details=self.scrub(json.dumps(data)[:500]))
            vectors.extend(got)
            if progress is not None:
                progress(len(vectors), len(texts))
        return vectors

    # }}}

    # images {{{

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        """One request for an image of the given aspect (width:height, one of core.images.ASPECTS)
        made from prompt by model; with source, the change prompt asks for, made to that image
        (only with Capability.IMAGE_EDITING)."""
        raise NotImplementedError()

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        """The image in the service's JSON answer to image_request(), with its usage: each image
        through core.images (image_from_base64/image_from_bytes). Raises PromptBlocked or
        ResultBlocked, with the service's reason, when it refused for safety, ProtocolError (or
        KeyError, TypeError...: told as the service breaking its format) when there is no image."""
        raise NotImplementedError()

    def image_model(self, cancel: CancelToken | None = None) -> str:
        """The model that makes images: as set, else the provider's default."""
        model = (self.option('image_model') or '').strip() or self.default_image_model
        if not model:
            raise NotConfigured(_('{provider} has no image model set: choose one in the settings.').format(
                provider=self.display_name))
        return model

    @redacted_answer
    def generate_image(self, prompt: str, aspect: str = '2:3', source: Image | None = None, model: str = '',
                       cancel: CancelToken | None = None) -> ImageResult:
        """An image made from prompt (with source: source changed as prompt asks), its usage and
        estimated cost. One request, read whole and bounded (limits.MAX_IMAGE_JSON_BYTES). Raises
        a ProviderError in words (PromptBlocked/ResultBlocked for a safety refusal, NoCredit,
        ModelNotFound, RateLimited, TimedOut...), or Cancelled on Stop."""
        wanted = Capability.IMAGE_EDITING if source is not None else Capability.IMAGE_GENERATION
        if not self.capabilities & wanted:
            raise NotConfigured((_('{provider} cannot change an image it is given.') if source is not None else
                                 _('{provider} cannot make images.')).format(provider=self.display_name))
        self.check_setup()
        cancel = cancel or CancelToken()
        model = model or self.image_model(cancel)
        request = self.image_request(prompt, model, aspect, source)
        response = self.open(request, model, cancel)
        body = response.read_all(limits.MAX_IMAGE_JSON_BYTES + 1)
        if len(body) > limits.MAX_IMAGE_JSON_BYTES:
            raise too_large(self.display_name, limits.MAX_IMAGE_JSON_BYTES)
        unreadable = _('{provider} sent an answer with no image Book AI can read.')
        try:
            data = self.read_json(body, limits.IMAGE_JSON_MEMORY_PER_BYTE)
        except limits.TooComplex as e:
            raise too_complex(self.display_name, e) from None
        except ValueError:
            raise ProtocolError(unreadable.format(provider=self.display_name),
                                details=self.scrub(body[:300].decode('utf-8', 'replace'))) from None
        try:
            result = self.parse_image_answer(data, model)
        except ProviderError:
            raise
        except ImageAddress as e:
            result = ImageResult(self.image_at(e.url, model, cancel), model, e.usage, e.revised_prompt, e.text)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise ProtocolError(unreadable.format(provider=self.display_name),
                                details=self.scrub(f'{type(e).__name__}: {e}')) from None
        usage = result.usage
        if usage.cost is None:
            estimate = pricing.estimate_image(self.name, result.model or model, usage, aspect)
            if estimate is not None:
                result = replace(result, usage=replace(usage, cost=estimate))
        return result

    def image_at(self, url: object, model: str, cancel: CancelToken) -> Image:
        """The image at url, an address the service sent instead of the image: fetched (bounded,
        with the provider's headers) only when it is on the provider's own server (same scheme,
        host and port as its address), so that neither the key nor the reader's address goes
        anywhere else; otherwise a ProtocolError says what happened."""
        try:
            own, there = urlsplit(self.base_url), urlsplit(url if isinstance(url, str) else '')
            same = bool(there.hostname) and (own.scheme, own.hostname, own.port) == (
                there.scheme, there.hostname, there.port)
        except ValueError:
            same = False
        if not same:
            raise ProtocolError(_('{provider} sent the address of the image on another server instead of the image '
                                  'itself. Book AI fetches images only from the server it asked.').format(
                provider=self.display_name), details=self.scrub(shown_address(str(url)[:300])))
        headers = {k: v for k, v in self.headers().items() if k.lower() != 'content-type'}
        response = self.open(Request(cast(str, url), 'GET', headers, None, secrets=self.secret_values), model, cancel)
        data = response.read_all(limits.MAX_IMAGE_BYTES + 1)
        return image_from_bytes(data, self.display_name)

    def multipart_request(self, path: str, fields: Iterable[tuple[str, str]],
                          files: Iterable[tuple[str, str, str, bytes]]) -> Request:
        """A multipart/form-data POST to base_url + path (core/multipart.py), with this provider's
        headers and its secrets marked."""
        body, content_type = encode_multipart(fields, files)
        headers = self.headers()
        headers['Content-Type'] = content_type
        return Request(self.base_url + path, 'POST', headers, body, secrets=self.secret_values)

    # }}}

    # models {{{

    @redacted_answer
    def models(self, refresh: bool = False, cancel: CancelToken | None = None) -> list[Model]:
        """The live model list, cached for a day in calibre's cache folder (providers/models.py).
        Redacted as it is read (json_answer) and as it is kept, for what cutting it to the limits
        left of a secret; the cached one as it is given back."""
        path = self.models_cache_path()
        if not refresh:
            cached = read_models_cache(path)
            if cached is not None:
                return cached
        unreadable = _('{provider} sent a model list that could not be read.')
        data = self.json_answer(self.models_request(), '', cancel or CancelToken(), unreadable)
        try:  # a list of the wrong shape (a number where an object was, NaN or 1e400 as a date) is said in words
            models = cast('list[Model]', self.known_secrets.redacted(
                kept_models(self.parse_models(first_items(data, limits.MAX_MODELS)))))
        except (AttributeError, TypeError, ValueError, OverflowError, KeyError, IndexError):
            raise ProtocolError(unreadable.format(provider=self.display_name),
                                details=self.scrub(json.dumps(data)[:500])) from None
        write_models_cache(path, models, self.base_url)
        return models

    def models_cache_path(self) -> str:
        """Where this provider's model list is cached: one file per provider and address."""
        return cache_path(self.name, self.base_url)

    def choose_model(self, tier: str | None = None, cancel: CancelToken | None = None) -> str:
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

    def pick_for_tier(self, models: list[Model], tier: str) -> Model | None:
        """The newest model whose id matches the tier's pattern; else the first listed."""
        return model_for_tier(models, self.tier_patterns, tier)

    # }}}

    # Test connection {{{

    def test_connection(self) -> tuple[bool, str]:
        """(ok, sentence): a real, minimal request, told in words, with no secret in them."""
        ok, sentence = self._test_connection()
        return ok, self.scrub(sentence)

    def _test_connection(self) -> tuple[bool, str]:
        if problem := self.missing_setup():
            return False, problem
        try:
            models = self.models(refresh=True)
        except ProviderError as e:
            return False, str(e)
        try:
            model = self.choose_model()
        except ProviderError as e:
            return False, str(e)
        for chunk in self.text_chat([Message(Role.USER, 'Reply with the single word: ready')], model, max_tokens=16):
            if isinstance(chunk, Failed):
                return False, chunk.message
        return True, _('{provider} answered with model {model} ({count} models available).').format(
            provider=self.display_name, model=model, count=len(models))

    # }}}


def text_of_html(body: str) -> str:
    """Some servers answer errors with an HTML page: its visible text, briefly."""
    text = re.sub(r'(?is)<(script|style).*?</\1>', ' ', body)
    text = re.sub(r'<[^>]+>', ' ', text)
    return ' '.join(text.split())


_transport = None


def shared_transport() -> Transport:
    """The Transport every provider made without one shares: one per process."""
    global _transport
    if _transport is None:
        _transport = Transport()
    return _transport
