# License: GPLv3 Copyright: the Book AI developers
"""HTTP for the providers.

- calibre's proxy settings (calibre.get_proxies()), never for this machine's own
  addresses;
- a connect timeout and an idle-read timeout (the longest silence allowed while
  an answer streams), separately;
- Stop: CancelToken.cancel() shuts the socket down from any thread, so the
  server sees the disconnect at once and the reading thread returns;
- on 429 or 503 before any of the answer has arrived, a short, bounded wait
  that honours Retry-After, then the error;
- redirects only within the same scheme, host and port: a key is never sent to
  another host;
- connections kept for the next request once an answer was read to its end, as
  the SDKs' HTTP clients do (a follow-up question saves the TCP and TLS
  handshakes). A kept connection is checked before use (one the server closed
  is dropped, never written to). If a kept connection turns out closed anyway
  (the server dropped it just then, before answering a single byte), the
  request goes once more on a new connection, as the official SDKs do; any
  other failure after sending is reported, never sent again, so a question is
  not paid for twice. Stop and errors close connections. A server found to
  close its connections right after answering (llama.cpp's server does so
  after a streamed answer, though it says keep-alive) is not offered kept
  connections again: checking and closing a dead one would only delay the
  next question;
- every error is a typed ProviderError whose text holds no secret.

It uses http.client rather than urllib so that it owns the socket: that is what
makes the two timeouts and an immediate Stop possible.
"""

import email.utils
import http.client
import re
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import unquote, urljoin, urlsplit

from calibre_plugins.bookai.core.errors import (
    ConnectionLost, NotConfigured, RedirectRefused, TimedOut, TLSFailure, Unreachable, error_for_status, redact,
)

load_translations()

READ_SIZE = 64 * 1024
MAX_ERROR_BODY = 256 * 1024
MAX_DRAIN = 64 * 1024   # after the last event: more than this left unread and the connection is closed
IDLE_SECONDS = 30       # a kept connection idle longer than this is closed rather than reused
CLOSED_AT_ONCE = 2      # a server that closed a kept connection sooner than this closes them all
MAX_REDIRECTS = 3
RETRY_STATUSES = (429, 503, 529)
DEFAULT_PORTS = {'http': 80, 'https': 443}


@dataclass
class Request:
    url: str
    method: str = 'POST'
    headers: dict = field(default_factory=dict)
    body: bytes | None = None
    # values (API keys) that must never appear in an error, a log or a traceback
    secrets: tuple = ()


@dataclass(frozen=True)
class Timeouts:
    connect: float = 30
    read: float = 120


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 2          # retries after the first try
    longest_wait: float = 8    # a longer Retry-After is reported, not waited for
    first_wait: float = 1      # when the server names no time


class Cancelled(Exception):
    pass


class SendFailed(Exception):
    """A kept connection was found closed before any answer: the request may go again, once,
    on a new connection."""


# the server closed the connection without sending even a status line
NO_ANSWER_AT_ALL = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class CancelToken:
    """Stop for one request, from any thread. Made for every request, so it is light: the
    event a backoff waits on is made only when there is a wait."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cancelled = False
        self._sock = None
        self._event = None

    @property
    def cancelled(self):
        return self._cancelled

    def cancel(self):
        with self._lock:
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            if self._sock is not None:
                shutdown(self._sock)

    def wait(self, seconds):
        """Sleep, unless cancelled first; True if cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
        return self._event.wait(seconds)

    def attach(self, sock):
        with self._lock:
            self._sock = sock
            if self._cancelled:
                shutdown(sock)

    def detach(self):
        with self._lock:
            self._sock = None


def shutdown(sock):
    try:  # the plain socket's shutdown, also for TLS: SSLSocket's would disturb the reading thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class HTTPError(Exception):
    """An error status: the provider turns it into a typed error with what the service said."""

    def __init__(self, status, body, headers, url):
        super().__init__(f'HTTP {status}')
        self.status, self.body, self.headers, self.url = status, body, headers, url

    @property
    def retry_after(self):
        return parse_retry_after(self.headers.get('Retry-After'))


def parse_retry_after(value):
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def still_open(sock):
    """An idle HTTP connection has nothing to read: readable means the server closed it
    (or sent something it should not have). Either way it is not to be used."""
    if sock is None:
        return False
    try:
        readable, _w, _x = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def is_local(host):
    host = (host or '').strip('[]').lower()
    return host in ('localhost', '::1') or host.startswith('127.') or host.endswith('.localhost')


class Transport:
    """Opens requests. One is made per process and shared: settings are read once."""

    def __init__(self, proxies=None, user_agent='Book AI', tls_context=None):
        if proxies is None:
            try:
                from calibre import get_proxies
                proxies = get_proxies(debug=False)
            except Exception:
                proxies = {}
        self.proxies = dict(proxies or {})
        self.user_agent = user_agent
        self._tls = tls_context  # by default, the system's certificate authorities
        self._idle = {}  # (scheme, host, port, proxy): a connection, with kept_at, when it became idle
        self._closes_at_once = set()  # keys of servers that close every connection after answering
        self._routes = {}
        self._heads = {}
        self._idle_lock = threading.Lock()

    def take_kept(self, key):
        """A kept connection for key that is still usable, or None."""
        with self._idle_lock:
            conn = self._idle.pop(key, None)
        if conn is None:
            return None
        if time.monotonic() - conn.kept_at <= IDLE_SECONDS and still_open(conn.sock):
            return conn
        self.found_closed(key, conn)
        return None

    def found_closed(self, key, conn):
        """The server closed a kept connection: if it did so at once, it closes them all."""
        if time.monotonic() - conn.kept_at < CLOSED_AT_ONCE:
            self._closes_at_once.add(key)
        conn.close()

    def keep(self, key, conn):
        if key in self._closes_at_once:
            conn.close()
            return
        conn.kept_at = time.monotonic()
        with self._idle_lock:
            old = self._idle.pop(key, None)
            self._idle[key] = conn
        if old is not None:
            old.close()

    def keeps_connections_to(self, url):
        """False once the server at url was seen closing its connections right after answering."""
        return self.route(url).key not in self._closes_at_once

    def route(self, url):
        """How to reach url; worked out once per address, not for every request."""
        route = self._routes.get(url)
        if route is None:
            if len(self._routes) > 64:
                self._routes.clear()
            route = self._routes[url] = Route.to(url, self.proxy_for, self.user_agent)
        return route

    @property
    def tls_context(self):
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def proxy_for(self, scheme, host):
        if is_local(host):
            return None
        from urllib.request import proxy_bypass
        proxy = self.proxies.get(scheme)
        if not proxy or proxy_bypass(host):
            return None
        if '://' not in proxy:
            proxy = 'http://' + proxy
        return urlsplit(proxy)

    def open(self, request, timeouts=Timeouts(), cancel=None, provider='', retry=RetryPolicy()):
        """The response to request, once its status is 2xx. Raises HTTPError for an error
        status (after the retries allowed for 429 and 503), ProviderError for a network
        failure, Cancelled on Stop."""
        cancel = cancel or CancelToken()
        attempt = 0
        while True:
            try:
                return self._open_following_redirects(request, timeouts, cancel, provider)
            except HTTPError as e:
                if e.status not in RETRY_STATUSES or attempt >= retry.attempts:
                    raise
                wait = e.retry_after
                if wait is None:
                    wait = retry.first_wait * (2 ** attempt)
                if wait > retry.longest_wait:
                    raise
                attempt += 1
                if cancel.wait(wait):
                    raise Cancelled() from None

    def _open_following_redirects(self, request, timeouts, cancel, provider):
        url = request.url
        for hop in range(MAX_REDIRECTS + 1):
            response = self._open_once(request, url, timeouts, cancel, provider)
            if response.status not in (301, 302, 303, 307, 308):
                return response
            target = urljoin(url, response.headers.get('Location', ''))
            response.close()
            a, b = urlsplit(url), urlsplit(target)
            if (a.scheme, a.hostname, a.port) != (b.scheme, b.hostname, b.port):
                raise RedirectRefused(_('{provider} redirected the request to another address ({url}). '
                                        'It was not followed, so that your key goes nowhere else.').format(
                    provider=provider, url=redact(f'{b.scheme}://{b.netloc}', request.secrets)))
            url = target
        raise RedirectRefused(_('{provider} redirected the request too many times.').format(provider=provider))

    def _open_once(self, request, url, timeouts, cancel, provider):
        route = self.route(url)
        if route.unusable:
            raise Unreachable(_('"{url}" is not an http or https address.').format(
                url=redact(route.shown_url, request.secrets)))
        head = self.head(route, request)
        conn = self.take_kept(route.key)
        if conn is not None:
            try:
                return self._send(conn, request, route, head, timeouts, cancel, provider, reused=True)
            except SendFailed:  # the kept connection was closed before any answer: once more, on a new one
                self.found_closed(route.key, conn)
        conn = route.connection(timeouts.connect, self.tls_context if route.scheme == 'https' else None)
        if cancel.cancelled:
            raise Cancelled()
        try:
            conn.connect()
        except Exception as e:
            conn.close()
            if cancel.cancelled:
                raise Cancelled() from None
            raise network_error(e, provider, route, timeouts, request.secrets, False) from None
        return self._send(conn, request, route, head, timeouts, cancel, provider)

    def head(self, route, request):
        """The checked header lines for request on route, prepared once for each provider's headers."""
        key = (route, tuple(request.headers.items()))
        lines = self._heads.get(key)
        if lines is None:
            headers = dict(route.headers)
            headers.update(request.headers)
            try:
                lines = header_lines(route, headers)
            except ValueError as e:
                raise NotConfigured(_('The header "{name}" cannot be sent: a header name is letters, digits '
                                      'and dashes, and its value is one line of Latin-1 text.').format(
                    name=redact(str(e.args[0]), request.secrets))) from None
            if len(self._heads) > 64:
                self._heads.clear()
            self._heads[key] = lines
        return lines

    def _send(self, conn, request, route, head, timeouts, cancel, provider, reused=False):
        sent = False
        try:
            cancel.attach(conn.sock)
            conn.sock.settimeout(timeouts.read)
            conn.send_prepared(request.method, route.target, head, request.body)
            sent = True
            resp = conn.getresponse()
        except Exception as e:
            cancel.detach()
            conn.close()
            if cancel.cancelled:
                raise Cancelled() from None
            if reused and (not sent and isinstance(e, OSError) or isinstance(e, NO_ANSWER_AT_ALL)):
                raise SendFailed() from None
            raise network_error(e, provider, route, timeouts, request.secrets, True) from None
        response = Response(conn, resp, cancel, provider, timeouts, request.secrets,
                            keep=lambda c: self.keep(route.key, c))
        if resp.status >= 400:
            body = response.read_all(MAX_ERROR_BODY)
            raise HTTPError(resp.status, redact(body.decode('utf-8', 'replace'), request.secrets),
                            response.headers, redact(route.shown_url, request.secrets))
        return response


@dataclass(frozen=True)
class Route:
    """Where a request for one URL goes: straight to its server or through a proxy."""
    scheme: str
    host: str
    port: int
    proxy: object           # urlsplit() of the proxy, or None
    target: str             # what goes on the request line
    headers: tuple          # (name, value) sent with every request on this route
    shown_url: str          # the address as error messages show it (before redaction)
    key: tuple = ()         # connections are kept per key
    unusable: bool = False  # not an http or https URL

    @classmethod
    def to(cls, url, proxy_for, user_agent):
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
        shown_url = f'{scheme}://{parts.netloc}{parts.path}'
        if scheme not in ('http', 'https') or not host:
            return cls(scheme, host or '', 0, None, '', (), shown_url, unusable=True)
        port = parts.port or DEFAULT_PORTS[scheme]
        proxy = proxy_for(scheme, host)
        target = (parts.path or '/') + ('?' + parts.query if parts.query else '')
        headers = {'User-Agent': user_agent, 'Accept-Encoding': 'identity'}
        if proxy is not None and scheme == 'http':  # plain HTTP through a proxy: the full URL
            target = url
            headers.update(proxy_auth(proxy))
        key = (scheme, host, port, proxy.geturl() if proxy else '')
        return cls(scheme, host, port, proxy, target, tuple(headers.items()), shown_url, key)

    def connection(self, timeout, tls_context=None):
        """A new, unconnected connection for this route."""
        host, port = (self.host, self.port) if self.proxy is None else (self.proxy.hostname, self.proxy.port or 80)
        if self.scheme != 'https':
            return HTTPConnection(host, port, timeout=timeout)
        conn = HTTPSConnection(host, port, timeout=timeout, context=tls_context)
        if self.proxy is not None:
            conn.set_tunnel(self.host, self.port, headers=proxy_auth(self.proxy))
        return conn


class OneWrite:
    """http.client writes a request's headers and its body apart: two writes, so two TCP
    segments the server waits for. A JSON body is small: send it with the headers.
    And it checks and encodes every header of every request: send_prepared() takes
    header lines checked once (header_lines()), so a question goes out sooner."""

    def send_prepared(self, method, target, lines, body):
        self.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        self._buffer.extend(lines)
        if body is not None:
            self._buffer.append(b'Content-Length: %d' % len(body))
        self.endheaders(body)

    def _send_output(self, message_body=None, encode_chunked=False):
        if not isinstance(message_body, bytes) or encode_chunked:
            return super()._send_output(message_body, encode_chunked)
        self._buffer.extend((b'', b''))
        head = b'\r\n'.join(self._buffer)
        del self._buffer[:]
        self.send(head + message_body)


class HTTPConnection(OneWrite, http.client.HTTPConnection):
    pass


class HTTPSConnection(OneWrite, http.client.HTTPSConnection):
    pass


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
BAD_IN_VALUE = re.compile(r'[\r\n\0]|[^\x00-\xff]')  # a line break, or not Latin-1


def header_lines(route, headers):
    """The header lines of a request on route, encoded and checked as http.client would."""
    host = f'[{route.host}]' if ':' in route.host else route.host
    if route.port != DEFAULT_PORTS[route.scheme]:
        host += f':{route.port}'
    try:
        lines = [b'Host: ' + (host.encode('ascii') if host.isascii() else host.encode('idna'))]
    except UnicodeError:
        raise ValueError('Host') from None
    for name, value in headers.items():
        value = str(value)
        if not HEADER_NAME.fullmatch(name) or BAD_IN_VALUE.search(value):
            raise ValueError(name)  # the name only: a value may be a secret
        lines.append(f'{name}: {value}'.encode('latin-1'))
    return tuple(lines)


def proxy_auth(proxy):
    if not proxy.username:
        return {}
    import base64
    creds = f'{unquote(proxy.username)}:{unquote(proxy.password or "")}'.encode()
    return {'Proxy-Authorization': 'Basic ' + base64.b64encode(creds).decode('ascii')}


def plural_count(seconds):
    """The number a plural form is chosen by: 1 only for exactly one second (1.5 seconds are plural)."""
    return 1 if seconds == 1 else 2


def network_error(e, provider, route, timeouts, secrets, connected):
    reason = redact(str(e) or type(e).__name__, secrets)
    url = redact(route.shown_url, secrets)
    if isinstance(e, ssl.SSLError):
        return TLSFailure(_('The secure connection to {url} failed: {reason}').format(url=url, reason=reason),
                          details=reason)
    if isinstance(e, (socket.timeout, TimeoutError)):
        if connected:
            return TimedOut(ngettext(
                '{provider} at {url} did not answer for {seconds:g} second. A slow or busy server '
                'may need a longer timeout in the settings.',
                '{provider} at {url} did not answer for {seconds:g} seconds. A slow or busy server '
                'may need a longer timeout in the settings.', plural_count(timeouts.read)).format(
                provider=provider, url=url, seconds=timeouts.read), details=reason)
        return TimedOut(ngettext('Could not connect to {provider} at {url} within {seconds:g} second.',
                                 'Could not connect to {provider} at {url} within {seconds:g} seconds.',
                                 plural_count(timeouts.connect)).format(
            provider=provider, url=url, seconds=timeouts.connect), details=reason)
    if isinstance(e, (http.client.HTTPException, ConnectionResetError, BrokenPipeError)) and connected:
        return ConnectionLost(_('The connection to {provider} at {url} was lost: {reason}').format(
            provider=provider, url=url, reason=reason), details=reason)
    return Unreachable(_('Could not reach {provider} at {url}: {reason}').format(
        provider=provider, url=url, reason=reason), details=reason)


class Response:

    def __init__(self, conn, resp, cancel, provider, timeouts, secrets, keep=None):
        self.conn, self.resp, self.cancel = conn, resp, cancel
        self.provider, self.timeouts, self.secrets = provider, timeouts, secrets
        self.keep = keep  # takes the connection for the next request, once the body was read
        self.status = resp.status

    @cached_property
    def headers(self):
        return dict(self.resp.getheaders())

    def chunks(self):
        """The body as it arrives. Raises Cancelled on Stop, TimedOut when the server falls
        silent for longer than the read timeout, ConnectionLost when it drops the connection.
        Read to its end, the connection is kept for the next request; a reader that stops
        early leaves the response to whoever holds it (finish() or close())."""
        try:
            while True:
                try:
                    data = self.resp.read1(READ_SIZE)
                except (OSError, http.client.HTTPException, ValueError) as e:
                    if self.cancel.cancelled:
                        raise Cancelled() from None
                    raise self._lost(e) from None
                if not data:
                    break
                try:
                    yield data
                except GeneratorExit:
                    return
            if self.cancel.cancelled:
                raise Cancelled()
            self._read_to_the_end()
        except BaseException:
            self.close()
            raise

    def _read_to_the_end(self):
        """The whole body was read: the connection can serve the next request."""
        conn, self.conn = self.conn, None
        self.cancel.detach()
        if conn is None:
            return
        will_close = self.resp.will_close
        self.resp.close()  # the response, not the socket: http.client sends nothing new before this
        if self.keep is not None and not will_close and conn.sock is not None:
            self.keep(conn)
        else:
            conn.close()

    def finish(self):
        """After the last event: read what little is left (the stream's end) so that the
        connection can be kept; a stream that goes on is closed instead."""
        if self.conn is None:
            return
        size = 0
        try:
            for data in self.chunks():
                size += len(data)
                if size > MAX_DRAIN:
                    break
        except Exception:
            pass
        self.close()

    def _lost(self, e):
        if isinstance(e, (socket.timeout, TimeoutError)):
            return TimedOut(ngettext(
                '{provider} sent nothing for {seconds:g} second, so the answer was stopped. A slow '
                'server may need a longer timeout in the settings.',
                '{provider} sent nothing for {seconds:g} seconds, so the answer was stopped. A slow '
                'server may need a longer timeout in the settings.', plural_count(self.timeouts.read)).format(
                provider=self.provider, seconds=self.timeouts.read))
        return ConnectionLost(_('The connection to {provider} was lost before the answer was complete.').format(
            provider=self.provider), details=redact(str(e) or type(e).__name__, self.secrets))

    def read_all(self, limit=None):
        parts, size = [], 0
        for data in self.chunks():
            parts.append(data)
            size += len(data)
            if limit is not None and size >= limit:
                break
        self.close()
        return b''.join(parts)

    def close(self):
        conn, self.conn = self.conn, None
        self.cancel.detach()
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


def http_error_to_provider_error(e, provider, message='', code='', model=''):
    """The typed error for an HTTPError, with what the service said (parsed by the provider)."""
    return error_for_status(e.status, provider, message=message or e.body[:500].strip(), code=code, model=model,
                            url=e.url, details=e.body, retry_after=e.retry_after)
