# License: GPLv3 Copyright: the Book AI developers
"""HTTP for the providers.

- calibre's proxy settings (calibre.get_proxies()), never for this machine's own
  addresses;
- a connect timeout and a read timeout, separately. The read timeout bounds
  each wait: the status line and headers must all have come within it of
  sending, a body read whole (a model list, an error) within it of the
  headers, and a streamed answer must make progress within it (Deadline:
  bytes that carry no answer, such as keepalive comments, do not count; the
  provider says what progress is). A streamed answer also ends after
  limits.ANSWER_SECONDS however steadily it comes. Each read of the socket
  waits at most until the deadline (DeadlineReader): no thread is involved;
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
makes the two timeouts and an immediate Stop possible. It uses http.client's
public API only (putrequest, putheader, endheaders and send; a response class of
its own), so that it works the same on every Python calibre ships.
"""

import base64
import email.utils
import http.client
import io
import ipaddress
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import SplitResult, unquote, urljoin, urlsplit
from urllib.request import proxy_bypass

from calibre import get_proxies

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import (
    ConnectionLost, NotConfigured, ProviderError, RedirectRefused, TimedOut, TLSFailure, Unreachable,
    error_for_status, redact, without_userinfo,
)
from calibre_plugins.bookai.core.web_links import shown_address

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

load_translations()

READ_SIZE = 64 * 1024
MAX_DRAIN = 64 * 1024   # after the last event: more than this left unread and the connection is closed
IDLE_SECONDS = 30       # a kept connection idle longer than this is closed rather than reused
CLOSED_AT_ONCE = 2      # a server that closed a kept connection sooner than this closes them all
MAX_REDIRECTS = 3
RETRY_STATUSES = (429, 503, 529)
DEFAULT_PORTS = {'http': 80, 'https': 443}

# a request's header lines, checked and encoded (name, value): see header_lines()
HeaderLines = tuple[tuple[bytes, bytes], ...]


@dataclass
class Request:
    """One HTTP request, as a provider makes it."""
    url: str
    method: str = 'POST'
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    # values (API keys) that must never appear in an error, a log or a traceback
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Timeouts:
    """How long to wait, in seconds, for the connection, and then for each read (see Deadline)."""
    connect: float = 30
    read: float = 120


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a 429 or 503 is waited out before it is reported."""
    attempts: int = 2          # retries after the first try
    longest_wait: float = 8    # a longer Retry-After is reported, not waited for
    first_wait: float = 1      # when the server names no time


class Deadline:
    """When the reading of one response must end, and why: 'headers' (the status line and
    headers, from sending), 'body' (a body read whole), 'silence' (no answer progress for the
    read timeout) or 'duration' (limits.ANSWER_SECONDS since the answer began). Checked by the
    reader before every read of the socket, so setting it costs nothing but the assignment."""

    __slots__ = ('at', 'why', 'read', 'end')

    def __init__(self) -> None:
        self.at: float = float('inf')   # when, on time.monotonic()
        self.why: str = ''
        self.read: float = 0.0          # seconds of silence allowed in an answer
        self.end: float = float('inf')  # when the whole answer must have come

    def set(self, seconds: float, why: str) -> None:
        """The reading must end seconds from now, for the reason why."""
        self.at, self.why = time.monotonic() + seconds, why

    def answer(self, read: float, longest: float) -> None:
        """From now, a streamed answer: progress() due every read seconds, all of it within longest."""
        self.read, self.end = read, time.monotonic() + longest
        self.progress()

    def progress(self) -> None:
        """The answer moved on: the silence counts from now."""
        at = time.monotonic() + self.read
        if at < self.end:
            self.at, self.why = at, 'silence'
        else:
            self.at, self.why = self.end, 'duration'


class DeadlineReader(io.RawIOBase):
    """The socket, as http.client reads a response from it, each read waiting only until the
    deadline: a server that sends one byte a second cannot hold a request beyond it. It reads
    through the socket's own reader (socket.makefile), which keeps the socket open for the
    response when http.client hands it over (Connection: close)."""

    def __init__(self, sock: socket.socket, raw: io.RawIOBase, deadline: Deadline) -> None:
        super().__init__()
        self._sock, self._raw, self._deadline = sock, raw, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: 'WriteableBuffer') -> int | None:
        left = self._deadline.at - time.monotonic()
        if left <= 0:
            raise TimeoutError('the deadline passed')
        self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class DeadlineResponse(http.client.HTTPResponse):
    """http.client's response, read through a DeadlineReader."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: Deadline, **kw: Any) -> None:
        super().__init__(sock, *args, **kw)
        # fp is the socket's reader (sock.makefile('rb')), nothing read from it yet: the same on
        # Python 3.10 to 3.14
        raw = self.fp.detach()
        self.fp = io.BufferedReader(DeadlineReader(sock, raw, deadline), io.DEFAULT_BUFFER_SIZE)


class Connection(http.client.HTTPConnection):
    """An HTTP connection that sends each request in one write.

    http.client's endheaders() sends the headers and then the body: two writes, so two TCP
    segments, and a server that wakes for the first only to wait for the second. That cost
    about 1 % of the time to the first token on llama-server (some 20 µs of 2.5 ms, with
    bench/first_token.py's request, on Python 3.11, 3.13 and 3.14 alike). send_request()
    holds what send() is given while endheaders() runs, and writes it at once. Only public
    API is used (send() is http.client's documented way to write to the connection): were
    endheaders() to write some other way, nothing would be held and the request would go out
    just as http.client sends it. (endheaders() writes through send() on Python 3.10 to 3.14.)
    """

    held: list[bytes] | None = None  # while send_request() runs endheaders(): what it sent
    kept_at: float  # when Transport.keep() kept it for the next request

    def send_request(self, method: str, target: str, head: HeaderLines, body: bytes | None) -> None:
        """Send one request: the request line, the header lines checked once for the provider
        (Transport.head; http.client then has only its own light checks to make), a
        Content-Length for a body, and the body, all in one write."""
        self.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        # http.client takes bytes for a header's name and value as well as str (it encodes a str);
        # typeshed says str only
        for name, value in head:
            self.putheader(name, value)  # type: ignore[arg-type]
        if body is not None:
            self.putheader(b'Content-Length', b'%d' % len(body))  # type: ignore[arg-type]
        self.held = []
        try:
            self.endheaders(body)
        finally:
            held, self.held = self.held, None
        self.send(b''.join(held))

    # only endheaders() and send_request() call it, with bytes (http.client's own takes more)
    def send(self, data: bytes) -> None:  # type: ignore[override]
        """Write data to the connection, or hold it while send_request() runs endheaders()."""
        if self.held is not None:
            self.held.append(data)
        else:
            super().send(data)


class TLSConnection(Connection, http.client.HTTPSConnection):
    """An HTTPS connection that sends each request in one write (see Connection)."""


class SendFailed(Exception):
    """A kept connection was found closed before any answer: the request may go again, once,
    on a new connection."""


# the server closed the connection without sending even a status line
NO_ANSWER_AT_ALL = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class HTTPError(Exception):
    """An error status: the provider turns it into a typed error with what the service said."""

    def __init__(self, status: int, body: str, headers: dict[str, str], url: str) -> None:
        super().__init__(f'HTTP {status}')
        self.status, self.body, self.headers, self.url = status, body, headers, url

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers.get('Retry-After'))


def parse_retry_after(value: str | None) -> float | None:
    """The seconds a Retry-After header asks to wait (a number of seconds or a date), or None."""
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


def usable(conn: Connection) -> bool:
    """A kept connection is used again if it has not been idle too long and its server has not closed it."""
    return time.monotonic() - conn.kept_at <= IDLE_SECONDS and still_open(conn.sock)


def still_open(sock: socket.socket | None) -> bool:
    """An idle HTTP connection has nothing to read: readable means the server closed it
    (or sent something it should not have). Either way it is not to be used."""
    if sock is None:
        return False
    try:
        if hasattr(select, 'poll'):  # not select(): it cannot watch a descriptor numbered past 1023,
            poller = select.poll()   # as a calibre with many files open gives out
            poller.register(sock, select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        readable, _w, _x = select.select([sock], [], [], 0)  # Windows: no poll, and no such limit
    except (OSError, ValueError):
        return False
    return not readable


def is_local(host: str | None) -> bool:
    """Whether host is this machine's loopback, as written in an address: an IP literal in
    127.0.0.0/8 or ::1 (also written ::ffff:127.x.y.z), or the name localhost or a name under
    .localhost, which RFC 6761 reserves to loopback. Nothing else: not a name that only starts
    with 127., not 0.0.0.0 or :: (the unspecified address: some systems connect it to this
    machine, others refuse it, and it names no machine in particular), not this machine's other
    addresses. What is not local asks before book text leaves, so doubt goes that way."""
    host = (host or '').strip().lower()
    if host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host[:-1] if host.endswith('.') else host
        return name == 'localhost' or (name.endswith('.localhost') and '..' not in name and name[0] != '.')
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class Transport:
    """Opens requests. One is made per process and shared: settings are read once."""

    def __init__(self, proxies: dict[str, str] | None = None, user_agent: str = 'Book AI',
                 tls_context: ssl.SSLContext | None = None) -> None:
        if proxies is None:
            try:
                proxies = get_proxies(debug=False)
            except Exception:
                proxies = {}
        self.proxies = dict(proxies or {})
        self.user_agent = user_agent
        self._tls = tls_context  # by default, the system's certificate authorities
        # (scheme, host, port, proxy): a connection, with kept_at, when it became idle
        self._idle: dict[tuple, Connection] = {}
        self._closes_at_once: set[tuple] = set()  # keys of servers that close every connection after answering
        self._routes: dict[str, Route] = {}
        self._heads: dict[tuple, HeaderLines] = {}
        self._idle_lock = threading.Lock()

    def take_kept(self, key: tuple) -> Connection | None:
        """A kept connection for key that is still usable, or None."""
        with self._idle_lock:
            conn = self._idle.pop(key, None)
        if conn is None:
            return None
        if usable(conn):
            return conn
        self.found_closed(key, conn)
        return None

    def found_closed(self, key: tuple, conn: Connection) -> None:
        """The server closed a kept connection: if it did so at once, it closes them all."""
        if time.monotonic() - conn.kept_at < CLOSED_AT_ONCE:
            self._closes_at_once.add(key)
        conn.close()

    def keep(self, key: tuple, conn: Connection) -> None:
        """Keep conn, whose answer was read to its end, for the next request to key; and close
        the other kept connections that can no longer be used (idle too long, or closed by their
        server): each holds a descriptor until its own address is asked again, which may be
        never (one a server asked once: a long test run passed a user's 1,024 open files)."""
        if key in self._closes_at_once:
            conn.close()
            return
        conn.kept_at = time.monotonic()
        with self._idle_lock:
            old = self._idle.pop(key, None)
            closed = [(k, self._idle.pop(k)) for k, c in list(self._idle.items()) if not usable(c)]
            self._idle[key] = conn
        if old is not None:
            old.close()
        for k, c in closed:  # as take_kept() would have found them: a server that closed at once is learned
            self.found_closed(k, c)

    def keeps_connections_to(self, url: str) -> bool:
        """False once the server at url was seen closing its connections right after answering."""
        return self.route(url).key not in self._closes_at_once

    def route(self, url: str) -> 'Route':
        """How to reach url; worked out once per address, not for every request."""
        route = self._routes.get(url)
        if route is None:
            if len(self._routes) > 64:
                self._routes.clear()
            route = self._routes[url] = Route.to(url, self.proxy_for, self.user_agent)
        return route

    @property
    def tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def proxy_for(self, scheme: str, host: str) -> SplitResult | None:
        """The proxy (urlsplit() of its address) a request to host goes through, or None: calibre's
        proxy for scheme, unless host is this machine or the system says to bypass it."""
        if is_local(host):
            return None
        proxy = self.proxies.get(scheme)
        if not proxy or proxy_bypass(host):
            return None
        if '://' not in proxy:
            proxy = 'http://' + proxy
        return urlsplit(proxy)

    def open(self, request: Request, timeouts: Timeouts = Timeouts(), cancel: CancelToken | None = None,
             provider: str = '', retry: RetryPolicy = RetryPolicy()) -> 'Response':
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

    def _open_following_redirects(self, request: Request, timeouts: Timeouts, cancel: CancelToken,
                                  provider: str) -> 'Response':
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
                    provider=provider, url=redact(shown_address(f'{b.scheme}://{b.netloc}'), request.secrets)))
            url = target
        raise RedirectRefused(_('{provider} redirected the request too many times.').format(provider=provider))

    def _open_once(self, request: Request, url: str, timeouts: Timeouts, cancel: CancelToken,
                   provider: str) -> 'Response':
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

    def head(self, route: 'Route', request: Request) -> HeaderLines:
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

    def _send(self, conn: Connection, request: Request, route: 'Route', head: HeaderLines,
              timeouts: Timeouts, cancel: CancelToken, provider: str, reused: bool = False) -> 'Response':
        sent = False
        deadline = Deadline()
        deadline.set(timeouts.read, 'headers')  # the status line and all headers within the read timeout
        # http.client calls response_class(sock, ...): a partial does as well as a class
        conn.response_class = partial(DeadlineResponse, deadline=deadline)  # type: ignore[assignment]
        try:
            cancel.attach(conn.sock)
            conn.sock.settimeout(timeouts.read)
            conn.send_request(request.method, route.target, head, request.body)
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
        deadline.answer(timeouts.read, limits.ANSWER_SECONDS)  # until the reader says what it reads
        response = Response(conn, resp, cancel, provider, timeouts, request.secrets,
                            keep=lambda c: self.keep(route.key, c), deadline=deadline,
                            url=redact(route.shown_url, request.secrets))
        if resp.status >= 400:
            body = response.read_all(limits.MAX_ERROR_BODY)
            raise HTTPError(resp.status, redact(body.decode('utf-8', 'replace'), request.secrets),
                            response.headers, response.url)
        return response


@dataclass(frozen=True)
class Route:
    """Where a request for one URL goes: straight to its server or through a proxy."""
    scheme: str
    host: str
    port: int
    proxy: SplitResult | None  # urlsplit() of the proxy, or None
    target: str                # what goes on the request line
    headers: tuple[tuple[str, str], ...]  # (name, value) sent with every request on this route
    shown_url: str             # the address as error messages show it: no user:password@ (before redaction)
    key: tuple = ()            # connections are kept per key
    unusable: bool = False     # not an http or https URL

    @classmethod
    def to(cls, url: str, proxy_for: Callable[[str, str], SplitResult | None], user_agent: str) -> 'Route':
        """The route to url; proxy_for(scheme, host) names the proxy, if any."""
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
        shown_url = shown_address(f'{scheme}://{parts.netloc}{parts.path}')  # no user:password@, no look-alike
        if scheme not in ('http', 'https') or not host:
            return cls(scheme, host or '', 0, None, '', (), shown_url, unusable=True)
        port = parts.port or DEFAULT_PORTS[scheme]
        proxy = proxy_for(scheme, host)
        target = (parts.path or '/') + ('?' + parts.query if parts.query else '')
        headers = {'User-Agent': user_agent, 'Accept-Encoding': 'identity'}
        if proxy is not None and scheme == 'http':  # plain HTTP through a proxy: the full URL
            target = without_userinfo(url)  # a user:password@ in base_url goes nowhere
            headers.update(proxy_auth(proxy))
        key = (scheme, host, port, proxy.geturl() if proxy else '')
        return cls(scheme, host, port, proxy, target, tuple(headers.items()), shown_url, key)

    def connection(self, timeout: float, tls_context: ssl.SSLContext | None = None) -> Connection:
        """A new, unconnected connection for this route."""
        host, port = (self.host, self.port) if self.proxy is None else (
            cast(str, self.proxy.hostname), self.proxy.port or 80)
        if self.scheme != 'https':
            return Connection(host, port, timeout=timeout)
        conn = TLSConnection(host, port, timeout=timeout, context=tls_context)
        if self.proxy is not None:
            conn.set_tunnel(self.host, self.port, headers=proxy_auth(self.proxy))
        return conn


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
BAD_IN_VALUE = re.compile(r'[\r\n\0]|[^\x00-\xff]')  # a line break, or not Latin-1


def header_lines(route: Route, headers: dict[str, str]) -> HeaderLines:
    """The header lines of a request on route, Host first, encoded and checked: a name is a token
    (letters, digits and a few marks), a value one line of Latin-1 text. Stricter than http.client,
    whose putheader() then never refuses one (and never shows a value, which may be a secret, in
    an error). Raises ValueError with the name of the first header that cannot be sent."""
    host = f'[{route.host}]' if ':' in route.host else route.host
    if route.port != DEFAULT_PORTS[route.scheme]:
        host += f':{route.port}'
    try:
        lines = [(b'Host', host.encode('ascii') if host.isascii() else host.encode('idna'))]
    except UnicodeError:
        raise ValueError('Host') from None
    for name, value in headers.items():
        value = str(value)
        if not HEADER_NAME.fullmatch(name) or BAD_IN_VALUE.search(value):
            raise ValueError(name)  # the name only: a value may be a secret
        lines.append((name.encode('ascii'), value.encode('latin-1')))
    return tuple(lines)


def proxy_auth(proxy: SplitResult) -> dict[str, str]:
    """The Proxy-Authorization header for the user and password in the proxy's address, if any."""
    if not proxy.username:
        return {}
    creds = f'{unquote(proxy.username)}:{unquote(proxy.password or "")}'.encode()
    return {'Proxy-Authorization': 'Basic ' + base64.b64encode(creds).decode('ascii')}


def plural_count(seconds: float) -> int:
    """The number a plural form is chosen by: 1 only for exactly one second (1.5 seconds are plural)."""
    return 1 if seconds == 1 else 2


def network_error(e: Exception, provider: str, route: Route, timeouts: Timeouts, secrets: tuple[str, ...],
                  connected: bool) -> ProviderError:
    """The typed error, in words and with no secret, for e, which failed a request on route before
    its response began (connected: after the connection was made)."""
    reason = redact(str(e) or type(e).__name__, secrets)
    url = redact(route.shown_url, secrets)
    if isinstance(e, ssl.SSLError):
        return TLSFailure(_('The secure connection to {url} failed: {reason}').format(url=url, reason=reason),
                          details=reason)
    if isinstance(e, (socket.timeout, TimeoutError)):
        if connected:
            return timed_out('headers', provider, url, timeouts.read, reason)
        return TimedOut(ngettext('Could not connect to {provider} at {url} within {seconds:g} second.',
                                 'Could not connect to {provider} at {url} within {seconds:g} seconds.',
                                 plural_count(timeouts.connect)).format(
            provider=provider, url=url, seconds=timeouts.connect), details=reason)
    if isinstance(e, (http.client.HTTPException, ConnectionResetError, BrokenPipeError)) and connected:
        return ConnectionLost(_('The connection to {provider} at {url} was lost: {reason}').format(
            provider=provider, url=url, reason=reason), details=reason)
    return Unreachable(_('Could not reach {provider} at {url}: {reason}').format(
        provider=provider, url=url, reason=reason), details=reason)


def timed_out(why: str, provider: str, url: str, read_seconds: float, details: str = '') -> TimedOut:
    """The TimedOut error for a deadline that passed (Deadline.why)."""
    if why == 'duration':
        minutes = limits.ANSWER_SECONDS / 60
        return TimedOut(ngettext(
            '{provider} was still answering after {minutes:g} minute, the longest an answer may take, '
            'so it was stopped.',
            '{provider} was still answering after {minutes:g} minutes, the longest an answer may take, '
            'so it was stopped.', plural_count(minutes)).format(provider=provider, minutes=minutes), details=details)
    if why == 'silence':
        return TimedOut(ngettext(
            '{provider} sent no answer for {seconds:g} second, so the answer was stopped. A slow '
            'server may need a longer timeout in the settings.',
            '{provider} sent no answer for {seconds:g} seconds, so the answer was stopped. A slow '
            'server may need a longer timeout in the settings.', plural_count(read_seconds)).format(
            provider=provider, seconds=read_seconds), details=details)
    return TimedOut(ngettext(  # headers or a body that did not all come in time
        '{provider} at {url} did not answer for {seconds:g} second. A slow or busy server '
        'may need a longer timeout in the settings.',
        '{provider} at {url} did not answer for {seconds:g} seconds. A slow or busy server '
        'may need a longer timeout in the settings.', plural_count(read_seconds)).format(
        provider=provider, url=url, seconds=read_seconds), details=details)


class Response:
    """A response whose status was read: its headers, and its body as it arrives (chunks())."""

    def __init__(self, conn: Connection, resp: http.client.HTTPResponse, cancel: CancelToken,
                 provider: str, timeouts: Timeouts, secrets: tuple[str, ...],
                 keep: Callable[[Connection], None] | None = None, deadline: Deadline | None = None,
                 url: str = '') -> None:
        self.conn: Connection | None = conn
        self.resp, self.cancel = resp, cancel
        self.provider, self.timeouts, self.secrets = provider, timeouts, secrets
        self.keep = keep  # takes the connection for the next request, once the body was read
        self.status = resp.status
        self.deadline = deadline or Deadline()  # the reader moves it on: see Deadline
        self.url = url  # redacted

    @cached_property
    def headers(self) -> dict[str, str]:
        return dict(self.resp.getheaders())

    def chunks(self) -> Iterator[bytes]:
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

    def _read_to_the_end(self) -> None:
        """The whole body was read: the connection can serve the next request."""
        conn, self.conn = self.conn, None
        self.cancel.detach()
        if conn is None:
            return
        will_close = self.resp.will_close
        self.resp.close()  # the response, not the socket: http.client sends nothing new before this
        # Stopped before it was detached, the socket was shut down (Stop does it under the token's lock),
        # even though the rest of the answer could still be read from what was buffered: never kept then
        if self.keep is not None and not will_close and conn.sock is not None and not self.cancel.cancelled:
            self.keep(conn)
        else:
            conn.close()

    def finish(self) -> None:
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

    def _lost(self, e: Exception) -> ProviderError:
        if isinstance(e, (socket.timeout, TimeoutError)):
            return timed_out(self.deadline.why or 'silence', self.provider, self.url, self.timeouts.read)
        return ConnectionLost(_('The connection to {provider} was lost before the answer was complete.').format(
            provider=self.provider), details=redact(str(e) or type(e).__name__, self.secrets))

    def read_all(self, limit: int | None = None) -> bytes:
        """The whole body, or its first limit bytes (and a little more): it must all come within
        the read timeout."""
        self.deadline.set(self.timeouts.read, 'body')
        parts, size = [], 0
        for data in self.chunks():
            parts.append(data)
            size += len(data)
            if limit is not None and size >= limit:
                break
        self.close()
        return b''.join(parts)

    def close(self) -> None:
        """Close the connection: the rest of the body is not read."""
        conn, self.conn = self.conn, None
        self.cancel.detach()
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


def http_error_to_provider_error(e: HTTPError, provider: str, message: str = '', code: str = '',
                                 model: str = '') -> ProviderError:
    """The typed error for an HTTPError, with what the service said (parsed by the provider)."""
    return error_for_status(e.status, provider, message=message or e.body[:500].strip(), code=code, model=model,
                            url=e.url, details=e.body, retry_after=e.retry_after)
