# License: GPLv3 Copyright: the Book AI developers
"""Run slow work (anything that talks to a provider) off the GUI thread.

The result comes back on the GUI thread through a queued signal. If the widget
that asked is gone by then, the result is dropped: closing a window while
work runs is safe.
"""

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from qt.core import QApplication, QObject, pyqtSignal

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Chunk, Message

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin


class Relay(QObject):
    """Carries the result of run_in_thread()'s work to the GUI thread."""

    finished = pyqtSignal(object, object)  # result, exception


def run_in_thread(work: Callable[[], Any], on_done: Callable[[Any, Exception | None], object],
                  parent: QObject) -> Relay:
    """Call work() in a thread, then on_done(result, exception) on the GUI thread,
    unless parent (a QObject) was destroyed meanwhile."""
    relay = Relay(parent)
    relay.finished.connect(lambda result, exc: (on_done(result, exc), relay.deleteLater()))

    def target() -> None:
        try:
            result, exc = work(), None
        except Exception as e:
            result, exc = None, e
        try:
            relay.finished.emit(result, exc)
        except RuntimeError:  # the relay died with its parent: nobody is waiting any more
            pass

    threading.Thread(target=target, daemon=True, name='BookAI-worker').start()
    return relay


class StreamRelay(QObject):
    """Carries a provider's answer stream from its thread to the GUI thread.

    It belongs to the application, not to the window that asked, so it outlives a
    window closed mid-answer; the window's slots are disconnected with the window,
    and the relay deletes itself when the stream has ended."""

    chunk = pyqtSignal(object, object)  # the chunk, and the CancelToken of the request it belongs to
    ended = pyqtSignal()


def stream_in_thread(provider: 'AIProviderPlugin', messages: Sequence[Message],
                     on_chunk: Callable[[Chunk, CancelToken], object], use_model: str = '',
                     cancel: CancelToken | None = None) -> CancelToken:
    """Read provider.text_chat(messages) in a thread; on_chunk(chunk, cancel) is called on the
    GUI thread for each chunk (the last one is a Done or a Failed). The CancelToken
    given (or made) stops it: the stream then ends with a cancelled Done. Chunks already
    on their way still arrive after Stop: the token tells which request they are of."""
    cancel = cancel or CancelToken()
    relay = StreamRelay(QApplication.instance())
    relay.chunk.connect(on_chunk)
    relay.ended.connect(relay.deleteLater)

    def target() -> None:
        try:  # text_chat never raises: errors arrive as a Failed chunk
            for chunk in provider.text_chat(messages, use_model=use_model, cancel=cancel):
                relay.chunk.emit(chunk, cancel)
            relay.ended.emit()
        except RuntimeError:  # the application is gone (calibre quit mid-answer)
            cancel.cancel()

    threading.Thread(target=target, daemon=True, name='BookAI-stream').start()
    return cancel
