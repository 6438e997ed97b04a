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
  not paid for twice. Stop and errors close connections;
- every error is a typed ProviderError whose text holds no secret.

It uses http.client rather than urllib so that it owns the socket: that is what
makes the two timeouts and an immediate Stop possible.
"""

import email.utils
import http.client
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit

from calibre_plugins.bookai.core.errors import (
    ConnectionLost, RedirectRefused, TimedOut, TLSFailure, Unreachable, error_for_status, redact,
)

load_translations()

READ_SIZE = 64 * 1024
MAX_ERROR_BODY = 256 * 1024
MAX_DRAIN = 64 * 1024   # after the last event: more than this left unread and the connection is closed
IDLE_SECONDS = 30       # a kept connection idle longer than this is closed rather than reused
MAX_REDIRECTS = 3
RETRY_STATUSES = (429, 503, 529)


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
    """Stop for one request, from any thread."""

    def __init__(self):
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._sock = None

    @property
    def cancelled(self):
        return self._event.is_set()

    def cancel(self):
        with self._lock:
            self._event.set()
            if self._sock is not None:
                shutdown(self._sock)

    def wait(self, seconds):
        """Sleep, unless cancelled first; True if cancelled."""
        return self._event.wait(seconds)

    def attach(self, sock):
        with self._lock:
            self._sock = sock
            if self._event.is_set():
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

    def __init__(self, proxies=None, user_agent='Book AI'):
        if proxies is None:
            try:
                from calibre import get_proxies
                proxies = get_proxies(debug=False)
            except Exception:
                proxies = {}
        self.proxies = dict(proxies or {})
        self.user_agent = user_agent
        self._tls = None
        self._idle = {}  # (scheme, host, port, proxy): (connection, when it became idle)
        self._idle_lock = threading.Lock()

    def take_kept(self, key):
        """A kept connection for key that is still usable, or None."""
        with self._idle_lock:
            conn, since = self._idle.pop(key, (None, 0))
        if conn is None:
            return None
        if time.monotonic() - since > IDLE_SECONDS or not still_open(conn.sock):
            conn.close()
            return None
        return conn

    def keep(self, key, conn):
        with self._idle_lock:
            old, _since = self._idle.pop(key, (None, 0))
            self._idle[key] = (conn, time.monotonic())
        if old is not None:
            old.close()

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
        parts = urlsplit(url)
        shown_url = redact(f'{parts.scheme}://{parts.netloc}{parts.path}', request.secrets)
        if parts.scheme not in ('http', 'https') or not parts.hostname:
            raise Unreachable(_('"{url}" is not an http or https address.').format(url=shown_url))
        port = parts.port or (443 if parts.scheme == 'https' else 80)
        proxy = self.proxy_for(parts.scheme, parts.hostname)
        target = parts.path or '/'
        if parts.query:
            target += '?' + parts.query
        headers = {'User-Agent': self.user_agent, 'Accept-Encoding': 'identity'}
        headers.update(request.headers)
        if proxy is not None and parts.scheme == 'http':  # plain HTTP through a proxy: the full URL
            target = url
            headers.update(proxy_auth(proxy))
        key = (parts.scheme, parts.hostname, port, proxy.geturl() if proxy else '')
        conn = self.take_kept(key)
        if conn is not None:
            try:
                return self._send(conn, request, target, headers, key, timeouts, cancel, provider, shown_url,
                                  reused=True)
            except SendFailed:
                pass  # the kept connection was closed before any answer: once more, on a new one
        host, host_port = (parts.hostname, port) if proxy is None else (proxy.hostname, proxy.port or 80)
        if parts.scheme == 'https':
            conn = HTTPSConnection(host, host_port, timeout=timeouts.connect, context=self.tls_context)
            if proxy is not None:
                conn.set_tunnel(parts.hostname, port, headers=proxy_auth(proxy))
        else:
            conn = HTTPConnection(host, host_port, timeout=timeouts.connect)
        if cancel.cancelled:
            raise Cancelled()
        try:
            conn.connect()
        except Exception as e:
            conn.close()
            if cancel.cancelled:
                raise Cancelled() from None
            raise network_error(e, provider, shown_url, timeouts, request.secrets, False) from None
        return self._send(conn, request, target, headers, key, timeouts, cancel, provider, shown_url)

    def _send(self, conn, request, target, headers, key, timeouts, cancel, provider, shown_url, reused=False):
        sent = False
        try:
            cancel.attach(conn.sock)
            conn.sock.settimeout(timeouts.read)
            conn.request(request.method, target, body=request.body, headers=headers)
            sent = True
            resp = conn.getresponse()
        except Exception as e:
            cancel.detach()
            conn.close()
            if cancel.cancelled:
                raise Cancelled() from None
            if reused and (not sent and isinstance(e, OSError) or isinstance(e, NO_ANSWER_AT_ALL)):
                raise SendFailed() from None
            raise network_error(e, provider, shown_url, timeouts, request.secrets, True) from None
        response = Response(conn, resp, cancel, provider, timeouts, request.secrets,
                            keep=lambda c: self.keep(key, c))
        if resp.status >= 400:
            body = response.read_all(MAX_ERROR_BODY)
            raise HTTPError(resp.status, redact(body.decode('utf-8', 'replace'), request.secrets),
                            response.headers, shown_url)
        return response


class OneWrite:
    """http.client writes a request's headers and its body apart: two writes, so two TCP
    segments the server waits for. A JSON body is small: send it with the headers."""

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


def proxy_auth(proxy):
    if not proxy.username:
        return {}
    import base64
    creds = f'{unquote(proxy.username)}:{unquote(proxy.password or "")}'.encode()
    return {'Proxy-Authorization': 'Basic ' + base64.b64encode(creds).decode('ascii')}


def network_error(e, provider, url, timeouts, secrets, connected):
    reason = redact(str(e) or type(e).__name__, secrets)
    if isinstance(e, ssl.SSLError):
        return TLSFailure(_('The secure connection to {url} failed: {reason}').format(url=url, reason=reason),
                          details=reason)
    if isinstance(e, (socket.timeout, TimeoutError)):
        if connected:
            return TimedOut(_('{provider} at {url} did not answer for {seconds:g} seconds. A slow or busy server '
                              'may need a longer timeout in the settings.').format(
                provider=provider, url=url, seconds=timeouts.read), details=reason)
        return TimedOut(_('Could not connect to {provider} at {url} within {seconds:g} seconds.').format(
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
        self.headers = {k: v for k, v in resp.getheaders()}

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
            return TimedOut(_('{provider} sent nothing for {seconds:g} seconds, so the answer was stopped. A slow '
                              'server may need a longer timeout in the settings.').format(
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
