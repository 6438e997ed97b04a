# License: GPLv3 Copyright: the Book AI developers
"""How one provider reaches its service (a provider's `connection`): its requests and headers,
the answer's bytes read bounded and decoded, errors told as what they mean, and the provider's
secrets kept out of everything that comes back.

Whether the provider is local is decided here, from the address in use: nothing else decides it.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import (
    NotConfigured, ProtocolError, ProviderError, Secrets, TooLarge, secrets_in_header, secrets_in_url, secrets_of,
)
from calibre_plugins.bookai.core.images import Image, image_from_bytes
from calibre_plugins.bookai.core.multipart import encode_multipart
from calibre_plugins.bookai.core.streams import NDJSONDecoder, SSEDecoder
from calibre_plugins.bookai.core.transport import (
    HTTPError, Request, Response, Timeouts, Transport, http_error_to_provider_error, is_local as is_local_host,
)
from calibre_plugins.bookai.core.web_links import shown_address
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.options import parse_headers
from calibre_plugins.bookai.providers.streaming import too_complex, too_large

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

to_json = json.JSONEncoder(ensure_ascii=False).encode  # made once: json.dumps makes one per call with options

T = TypeVar('T')


class Connection:
    """The HTTP side of one provider: what its wire format (the provider) says, sent and read back."""

    def __init__(self, provider: 'type[AIProviderPlugin]', config: ProviderConfig, transport: Transport | None = None):
        """provider: the class of the provider (its instance holds this connection: no cycle, so that
        a provider no longer used is freed at once, with its transport's connections)."""
        self.provider = provider
        self.config = config
        self._transport = transport
        self.name = provider.display_name

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = shared_transport()
        return self._transport

    @property
    def is_local(self) -> bool:
        """Runs on this machine, so nothing sent leaves it: decided from the address in use,
        for every provider alike. The address must be loopback (core.transport.is_local) and
        reached without calibre's proxy; a service on the internet reached through a local
        address (a gateway, a proxy) is not local: the text goes on to the service."""
        if self.provider.remote_service:
            return False
        try:
            parts = urlsplit(self.config.base_url)
            host = parts.hostname
        except ValueError:  # an address that does not parse reaches nothing, and is not vouched for
            return False
        return host is not None and is_local_host(host) and self.transport.proxy_for(parts.scheme, host) is None

    # requests {{{

    @cached_property
    def _headers(self) -> dict[str, str]:
        h = {'Content-Type': 'application/json'}
        h.update(self.provider.auth_headers(self.config))
        try:
            h.update(self.provider.extra_headers(self.config))
        except ValueError as e:  # the user's extra headers
            raise NotConfigured(_('{provider}: {problem}').format(provider=self.name, problem=e)) from None
        return h

    def headers(self) -> dict[str, str]:
        """The headers of every request."""
        return dict(self._headers)

    def request(self, path: str, payload: object = None, method: str | None = None) -> Request:
        """A request to base_url + path, with this provider's headers and its secrets marked."""
        body = None if payload is None else to_json(payload).encode('utf-8')
        return Request(self.config.base_url + path, method or ('GET' if payload is None else 'POST'), self.headers(),
                       body, secrets=self.secret_values)

    def request_at_root(self, path: str, payload: object = None) -> Request:
        """A request to path on the server itself, beside its OpenAI-compatible API: base_url
        without a final /v1 (llama.cpp's /props, LM Studio's /api/v0/models)."""
        req = self.request(path, payload)
        base = self.config.base_url
        req.url = base.removesuffix('/v1') + path
        return req

    def multipart_request(self, path: str, fields: Iterable[tuple[str, str]],
                          files: Iterable[tuple[str, str, str, bytes]]) -> Request:
        """A multipart/form-data POST to base_url + path (core/multipart.py), with this provider's
        headers and its secrets marked."""
        body, content_type = encode_multipart(fields, files)
        headers = self.headers()
        headers['Content-Type'] = content_type
        return Request(self.config.base_url + path, 'POST', headers, body, secrets=self.secret_values)

    # }}}

    # secrets {{{

    @cached_property
    def secret_values(self) -> tuple[str, ...]:
        """Every value of this provider's that must never be shown: its keys (every secret
        option), the credentials in its address, the values of the headers the user set, and the
        credentials of calibre's proxies."""
        values = []
        for o in self.provider.all_options():
            if o.kind == 'secret':
                values.append(self.config.option(o.name))
            elif o.kind == 'headers':
                try:
                    headers = parse_headers(self.config.option(o.name) or ())
                except ValueError:
                    headers = []
                for _name, value in headers:
                    values += secrets_in_header(value)
        values += secrets_in_url(self.config.base_url)
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

    def redacted(self, answer: Callable[[], T]) -> T:
        """What answer() gives back with no secret of the provider's in any string of it (through
        Secrets.redacted: an ImageResult's model, revised prompt and text, a model list's every
        field), nor in an error it raises."""
        try:
            return cast(T, self.known_secrets.redacted(answer()))
        except ProviderError as e:
            raise self.known_secrets.redact_error(e) from None

    def read_json(self, body: bytes | str, memory_per_byte: float | None = None) -> Any:
        """The JSON of an answer (limits.load_json: ValueError, limits.TooComplex), every string in it
        up to errors.LONGEST_FIELD characters redacted as it is read (Secrets.redacted), before
        anything is taken from it, cut or put in a sentence. memory_per_byte: as load_json's."""
        return self.known_secrets.redacted(limits.load_json(body, memory_per_byte=memory_per_byte))

    # }}}

    # answers {{{

    def open(self, request: Request, model: str, cancel: CancelToken, quick: bool = False) -> Response:
        """The response to request; an error status raised as the ProviderError it means. quick:
        waited for at most limits.CONTEXT_LOOKUP_SECONDS (to connect, then for each read), for
        what a question only looks up on the way."""
        timeouts = self.config.timeouts
        if quick:
            most = limits.CONTEXT_LOOKUP_SECONDS
            timeouts = Timeouts(min(timeouts.connect, most), min(timeouts.read, most))
        try:
            return self.transport.open(request, timeouts, cancel, provider=self.name)
        except HTTPError as e:
            message, code = self.provider.parse_error(e.status, e.body)
            raise http_error_to_provider_error(e, self.name, message, code, model) from None

    def json_answer(self, request: Request, model: str, cancel: CancelToken, unreadable: str,
                    quick: bool = False) -> Any:
        """The JSON the service answers to request; unreadable (with {provider}) says when it is not JSON;
        quick: as open() says.
        A body larger than limits.MAX_JSON_BYTES, nested deeper than limits.MAX_JSON_DEPTH or
        holding more values than its size allows (limits.JSON_MEMORY_PER_BYTE) is not read:
        TooLarge, ProtocolError."""
        response = self.open(request, model, cancel, quick)
        body = response.read_all(limits.MAX_JSON_BYTES + 1)
        if len(body) > limits.MAX_JSON_BYTES:
            raise too_large(self.name, limits.MAX_JSON_BYTES)
        try:
            return self.read_json(body)
        except limits.TooComplex as e:
            raise too_complex(self.name, e) from None
        except ValueError:
            raise ProtocolError(unreadable.format(provider=self.name)) from None

    def events(self, response: Response) -> Iterator:
        """The decoded events of a streamed answer. Bounded: limits.MAX_ANSWER_BYTES for the
        whole answer (TooLarge), limits.MAX_LINE_CHARS for a line, limits.MAX_JSON_DEPTH."""
        decoder: NDJSONDecoder | SSEDecoder = (NDJSONDecoder() if self.provider.stream_format == 'ndjson'
                                               else SSEDecoder())
        first_bytes, any_event, size, most = b'', False, 0, limits.MAX_ANSWER_BYTES
        try:
            for data in response.chunks():
                size += len(data)
                if size > most:
                    raise too_large(self.name, most)
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
                provider=self.name, megabytes=e.limit / 2 ** 20)) from None
        except limits.TooComplex as e:
            raise too_complex(self.name, e) from None
        except ValueError as e:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.name), details=str(e)) from None
        if first_bytes and not any_event:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.name), details=self.scrub(first_bytes.decode('utf-8', 'replace')))

    def image_at(self, url: object, model: str, cancel: CancelToken) -> Image:
        """The image at url, an address the service sent instead of the image: fetched (bounded,
        with the provider's headers) only when it is on the provider's own server (same scheme,
        host and port as its address), so that neither the key nor the reader's address goes
        anywhere else; otherwise a ProtocolError says what happened."""
        try:
            own, there = urlsplit(self.config.base_url), urlsplit(url if isinstance(url, str) else '')
            same = bool(there.hostname) and (own.scheme, own.hostname, own.port) == (
                there.scheme, there.hostname, there.port)
        except ValueError:
            same = False
        if not same:
            raise ProtocolError(_('{provider} sent the address of the image on another server instead of the image '
                                  'itself. Book AI fetches images only from the server it asked.').format(
                provider=self.name), details=self.scrub(shown_address(str(url)[:300])))
        headers = {k: v for k, v in self.headers().items() if k.lower() != 'content-type'}
        response = self.open(Request(cast(str, url), 'GET', headers, None, secrets=self.secret_values), model, cancel)
        data = response.read_all(limits.MAX_IMAGE_BYTES + 1)
        return image_from_bytes(data, self.name)

    # }}}


_transport = None


def shared_transport() -> Transport:
    """The Transport every provider made without one shares: one per process."""
    global _transport
    if _transport is None:
        _transport = Transport()
    return _transport
