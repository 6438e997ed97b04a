# License: GPLv3 Copyright: the Book AI developers
"""Stop: one CancelToken for one request or one piece of work, cancelled from any thread.

The windows' Stop, closing a window, Ctrl-C on the command line and a new question all
end the work in hand through it. A request's connection attaches its socket, so that
cancel() shuts the socket down at once: the server sees the disconnect, and the thread
reading it returns. Work that waits (a backoff before a retry) waits on it.
"""

import socket
import threading


class Cancelled(Exception):
    pass


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
