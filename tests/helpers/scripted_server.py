# License: GPLv3 Copyright: the Book AI developers
"""A scripted HTTP server on loopback, for the edge cases no real peer produces on
demand: 429 with Retry-After, redirects, stalls, HTML error pages.

Each request gets the next scripted reply; the server records what it received.
"""

import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Reply:
    """One scripted reply: a status, headers and a body, or chunks sent one by one."""

    def __init__(self, status: int = 200, body: bytes = b'', headers: tuple | list = (),
                 chunks: list[bytes] | None = None, stall_after: int | None = None, chunk_delay: float = 0):
        self.status, self.body, self.headers = status, body, list(headers)
        self.chunks = chunks            # send these one by one (chunked), instead of body
        self.stall_after = stall_after  # stop sending after this many chunks, keep the connection open
        self.chunk_delay = chunk_delay


class ScriptedServer:
    """Serves the replies in order, one a request, in a thread; started and stopped by `with`.
    .received holds each request (path, headers, body, client)."""

    def __init__(self, replies: list[Reply], host: str = '127.0.0.1', tls: tuple[str, str] | None = None):
        """tls: (certificate file, key file) to serve HTTPS."""
        self.replies = list(replies)
        self.received = []
        self.connections = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # each chunk goes out when written, as real servers send theirs (no Nagle delay)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                server.connections.append(self.connection)

            def do_GET(self):
                self.answer()

            def do_POST(self):
                self.answer()

            def answer(self):
                try:
                    self.respond()
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: as it may
                    self.close_connection = True

            def respond(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else b''
                server.received.append({'path': self.path, 'headers': dict(self.headers), 'body': body,
                                        'client': self.client_address})
                reply = server.replies.pop(0) if server.replies else Reply(500, b'no more scripted replies')
                self.send_response(reply.status)
                for k, v in reply.headers:
                    self.send_header(k, v)
                if reply.chunks is None:
                    self.send_header('Content-Length', str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header('Transfer-Encoding', 'chunked')
                self.end_headers()
                for i, chunk in enumerate(reply.chunks):
                    if reply.stall_after is not None and i >= reply.stall_after:
                        server.release.wait(30)  # bounded: the test ends it sooner
                        return
                    self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                    self.wfile.flush()
                    time.sleep(reply.chunk_delay)
                self.wfile.write(b'0\r\n\r\n')

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        shown = self.httpd.handle_error

        def handle_error(request, client_address):
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a client may hang up
                shown(request, client_address)
        self.httpd.handle_error = handle_error
        scheme = 'http'
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = 'https'
        self.address = (host, self.httpd.server_address[1])
        self.url = f'{scheme}://{host}:{self.httpd.server_address[1]}'
        # shutdown() waits for serve_forever to look up: every 0.05 s, not the default 0.5 s per server
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)

    def __enter__(self) -> 'ScriptedServer':
        self.thread.start()
        return self

    def close_connections(self) -> None:
        """Close every client connection, as a server does with idle ones after a while."""
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __exit__(self, *a):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.close_connections()  # as a server process that stops


class LoopbackListener:
    """A raw TCP server on loopback: each connection goes to handle(client) in a thread of its
    own; closed when the with block ends."""

    def __init__(self):
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.url = f'http://127.0.0.1:{self.listener.getsockname()[1]}'
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def __enter__(self) -> 'LoopbackListener':
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.listener.close()

    def serve(self) -> None:
        while True:
            try:
                client, _addr = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        raise NotImplementedError


class TrickleServer(LoopbackListener):
    """A server on loopback that answers every request with the same bytes, one at a time,
    every `delay` seconds (at most `most` of them, then it closes the connection): headers or
    a body that trickle."""

    def __init__(self, answer: bytes, delay: float = 0.5, fast: int = 0, most: int = 60):
        super().__init__()
        self.answer, self.delay, self.fast, self.most = answer, delay, fast, most

    def handle(self, client: socket.socket) -> None:
        """The first `fast` bytes at once, then one byte every `delay` seconds."""
        try:
            head = b''
            while b'\r\n\r\n' not in head:
                data = client.recv(65536)
                if not data:
                    return
                head += data
            client.sendall(self.answer[:self.fast])
            for i in range(self.fast, min(len(self.answer), self.fast + self.most)):
                if self.stop.wait(self.delay):
                    return
                client.sendall(self.answer[i:i + 1])
        except OSError:
            pass
        finally:
            client.close()


def sse(*payloads: str) -> list[bytes]:
    """SSE bytes for JSON strings (or [DONE])."""
    return [f'data: {p}\n\n'.encode() for p in payloads]


class TunnelProxy(LoopbackListener):
    """An HTTP proxy that only tunnels (CONNECT), as proxies for HTTPS do. Whatever host is
    asked for, it connects to target (host, port); it records each CONNECT request and every
    byte it relays."""

    def __init__(self, target: tuple[str, int]):
        super().__init__()
        self.target = target
        self.requests = []      # (request line, {header: value})
        self.relayed = bytearray()

    def handle(self, client: socket.socket) -> None:
        head = b''
        while b'\r\n\r\n' not in head:
            data = client.recv(4096)
            if not data:
                client.close()
                return
            head += data
        lines = head.split(b'\r\n\r\n')[0].decode('latin-1').split('\r\n')
        self.requests.append((lines[0], dict(ln.split(': ', 1) for ln in lines[1:] if ': ' in ln)))
        if not lines[0].startswith('CONNECT '):
            client.sendall(b'HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n')
            client.close()
            return
        upstream = socket.create_connection(self.target)
        client.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')

        def pump(src, dst):
            try:
                while data := src.recv(65536):
                    self.relayed.extend(data)
                    dst.sendall(data)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream)
