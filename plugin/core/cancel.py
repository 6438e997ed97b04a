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
    """The work was stopped (CancelToken.cancel())."""


class CancelToken:
    """Stop for one request, from any thread. Made for every request, so it is light: the
    event a backoff waits on is made only when there is a wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._sock: socket.socket | None = None
        self._event: threading.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def is_set(self) -> bool:
        """cancelled, as a threading.Event says it: a CancelToken stops calibre's worker
        (core.isolated.run's abort) as an Event would."""
        return self._cancelled

    def cancel(self) -> None:
        """Stop: from now on cancelled is True, a wait() returns, an attached socket is shut down."""
        with self._lock:
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            if self._sock is not None:
                shutdown(self._sock)

    def wait(self, seconds: float) -> bool:
        """Sleep, unless cancelled first; True if cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
        return self._event.wait(seconds)

    def attach(self, sock: socket.socket) -> None:
        """The socket a request is using: cancel() shuts it down (at once, if already cancelled)."""
        with self._lock:
            self._sock = sock
            if self._cancelled:
                shutdown(sock)

    def detach(self) -> None:
        """The request is done with its socket: cancel() leaves it alone."""
        with self._lock:
            self._sock = None


def shutdown(sock: socket.socket) -> None:
    """Shut sock down for reading and writing; one already closed is left as it is."""
    try:  # the plain socket's shutdown, also for TLS: SSLSocket's would disturb the reading thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass
