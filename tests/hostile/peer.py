# License: GPLv3 Copyright: the Book AI developers
"""A loopback HTTP server the battery scripts case by case, one per test module.

A case's provider is given the address PEER/cN (plus its API's own path): every request of case N
goes to that case's routes, so one server serves every case, each its own bytes, also the many
requests of one case (one for each value changed to the wrong type: PEER/cN/kI/...). A route is a
method, a regular expression for the rest of the path and a Reply (helpers.scripted_server's:
a status, headers and a body, or chunks sent one by one, any number of them, each after a
delay); a function of the request's (path, body) may stand for the Reply. What no route matches
gets a 404 in JSON.
"""

import re
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from helpers.scripted_server import Reply

Route = tuple[str | None, str, Reply | Callable[[str, bytes], Reply]]
NOT_SCRIPTED = Reply(404, b'{"error": {"message": "not scripted", "type": "not_found"}}',
                     [('Content-Type', 'application/json')])
CASE = re.compile(r'/c(\d+)(/.*)?$')


class HostilePeer:
    """Serves each case its routes; `with` starts and stops it."""

    def __init__(self) -> None:
        self.cases: dict[int, list[Route]] = {}
        self.received: list[tuple[str, str]] = []
        self.next_case = 0
        self.stop = threading.Event()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self):
                self.answer()

            def do_POST(self):
                self.answer()

            def answer(self):
                try:
                    self.respond()
                except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
                    self.close_connection = True

            def respond(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else b''
                peer.received.append((self.command, self.path))
                reply = peer.reply_for(self.command, self.path, body)
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
                for chunk in reply.chunks:
                    if peer.stop.is_set():
                        return
                    if chunk:
                        self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                        self.wfile.flush()
                    if reply.chunk_delay and peer.stop.wait(reply.chunk_delay):
                        return
                self.wfile.write(b'0\r\n\r\n')

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, client_address: None  # a client that hangs up is no news
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}'
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)

    def __enter__(self) -> 'HostilePeer':
        self.thread.start()
        return self

    def __exit__(self, *a) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def case(self, routes: list[Route]) -> str:
        """A new case served these routes: its address (PEER/cN)."""
        n = self.next_case
        self.next_case += 1
        self.cases[n] = list(routes)
        return f'{self.url}/c{n}'

    def reply_for(self, method: str, path: str, body: bytes) -> Reply:
        m = CASE.match(path)
        if not m:
            return NOT_SCRIPTED
        rest = m.group(2) or '/'
        for want, pattern, reply in self.cases.get(int(m.group(1)), ()):
            if (want is None or want == method) and re.search(pattern, rest):
                return reply(rest, body) if callable(reply) else reply
        return NOT_SCRIPTED
