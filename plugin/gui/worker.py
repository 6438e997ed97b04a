# License: GPLv3 Copyright: the Book AI developers
"""Where work runs: slow work that touches no Qt (anything that talks to a provider, reads a book,
a file or the library's fields) in a thread; work that calls Qt on the GUI thread, in steps.

A thread's result comes back on the GUI thread through a queued signal. If the widget that asked
is gone by then, the result is dropped: closing a window while work runs is safe.

Why Qt stays on the GUI thread: in the PyQt that Linux distributions build (calibre 6.13's, 8.5's),
a Qt call keeps Python's lock while Qt runs; only a signal's emit lets it go. A thread decoding
an image (QImageReader, or calibre's db.set_cover, which decodes and re-encodes the cover with Qt)
that waits there for one of Qt's own locks keeps every other thread out of Python, the GUI thread
included; if the GUI thread holds that lock and needs Python (calibre prints Qt's messages in
Python), calibre hangs for good. So a thread never calls Qt except to emit, and work that needs
Qt is cut into steps (run_in_steps) short enough that the window never waits long.

An image from outside (a cover a service made, a cover staged or kept for Undo, a book's cover for a
thumbnail) is never decoded in calibre's process at all, on any thread: a decoder given a crafted
image can take minutes and gigabytes, however short the steps. A thread has it decoded by Book AI
in calibre's worker process (core.images.decode_images, through core.isolated.run: bounded in time
and memory, killed past them), which sends back Book AI's own small baseline JPEG and RGB rows;
the GUI thread makes a QImage of those rows (gui.image_decoding.qimage, a copy, no decoder) and
gives calibre the JPEG to store, one a step.

For the same reason Python's garbage is collected on the GUI thread only, once Book AI starts a
thread: left automatic, a collection runs in whichever thread happens to allocate, and a window
nobody refers to any more (a closed dialog, kept alive only by its own connections) is destroyed
there, in a worker thread, which crashes Qt. calibre's main window already collects so (its
GarbageCollector); its E-book viewer does not, so Book AI does it there with calibre's own class.
"""

import gc
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from qt.core import QApplication, QObject, QTimer, pyqtSignal

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Chunk

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.lookups import LookedUp, LookupNotice



def collect_garbage_on_gui_thread() -> None:
    """Before a thread of Book AI starts: if Python still collects garbage by itself (calibre's
    viewer, a test), have it collected on the GUI thread instead, as calibre's main window does.
    Once per process; nothing where calibre already does it."""
    app = QApplication.instance()
    if not gc.isenabled() or app is None or getattr(app, 'bookai_garbage_collector', None) is not None:
        return
    from calibre.gui2.main_window import GarbageCollector  # calibre's: every 5 s, on the GUI thread
    app.bookai_garbage_collector = GarbageCollector(app)


class Relay(QObject):
    """Carries the result of run_in_thread()'s work to the GUI thread."""

    finished = pyqtSignal(object, object)  # result, exception


def run_in_thread(work: Callable[[], Any], on_done: Callable[[Any, Exception | None], object],
                  parent: QObject) -> Relay:
    """Call work() in a thread, then on_done(result, exception) on the GUI thread,
    unless parent (a QObject) was destroyed meanwhile."""
    relay = Relay(parent)

    def deliver(result: Any, exc: Exception | None) -> None:
        try:
            relay.deleteLater()
        except RuntimeError:  # parent was destroyed while the result was on its way (the PyQt of calibre 6.13
            return            # still delivers it): nobody is waiting; an exception here would abort calibre
        on_done(result, exc)
    relay.finished.connect(deliver)

    def target() -> None:
        try:
            result, exc = work(), None
        except Exception as e:
            result, exc = None, e
        try:
            relay.finished.emit(result, exc)
        except RuntimeError:  # the relay died with its parent: nobody is waiting any more
            pass

    collect_garbage_on_gui_thread()
    threading.Thread(target=target, daemon=True, name='BookAI-worker').start()
    return relay


def run_while(current: Callable[[], bool], work: Callable[[], Any],
              on_done: Callable[[Any, Exception | None], object], parent: QObject) -> Relay:
    """run_in_thread(), with on_done(result, exception) called only if current() (called first, on
    the GUI thread: it may end the wait it checks) still says the wait the work belongs to is the
    one going on; else (a Stop, a newer request) the result is dropped."""
    def done(result: Any, exc: Exception | None) -> None:
        if current():
            on_done(result, exc)
    return run_in_thread(work, done, parent)


def emitter(signal: Any) -> Callable[..., None]:
    """A progress callback for work in a thread: it emits signal (a bound pyqtSignal) with its
    arguments, and does nothing once the signal's object is gone (nobody is waiting any more)."""
    def emit(*args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:
            pass
    return emit


class Steps(QObject):
    """run_in_steps()'s state: one item a turn of the GUI thread's event loop. A child of the
    object that asked: destroyed with it, it takes no more steps and calls nobody."""

    def __init__(self, items: Iterable[Any], step: Callable[[Any], Any],
                 on_done: Callable[[list[Any], Exception | None], object] | None, parent: QObject) -> None:
        super().__init__(parent)
        self.items, self.step, self.on_done = iter(items), step, on_done
        self.results: list[Any] = []
        self.over = False
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self.next)
        self.timer.start()

    def next(self) -> None:
        exc = None
        try:
            for item in self.items:  # one item, then back to the event loop
                self.results.append(self.step(item))
                self.timer.start()  # the next step after whatever else is waiting (paints, timers, input)
                return
        except Exception as e:
            exc = e
        self.over = True
        self.deleteLater()
        if self.on_done is not None:
            self.on_done(self.results, exc)

    def stop(self) -> None:
        """No more steps; on_done is not called. Safe when the steps are over, or their parent gone."""
        self.on_done = None
        if not self.over:
            self.over = True
            try:
                self.timer.stop()
                self.deleteLater()
            except RuntimeError:  # destroyed with its parent already
                pass


def run_in_steps(items: Iterable[Any], step: Callable[[Any], Any],
                 on_done: Callable[[list[Any], Exception | None], object] | None, parent: QObject) -> Steps:
    """step(item) for each item, on the GUI thread, one item each time the event loop comes round
    (so the window is painted and answers between two), then on_done(the steps' results, None),
    or on_done(the results so far, exception) when a step raised. Nothing more once parent is
    destroyed or the Steps returned is stopped. For work that calls Qt (see the module's note):
    each step should take a few tens of milliseconds at most."""
    return Steps(items, step, on_done, parent)


class StreamRelay(QObject):
    """Carries a provider's answer stream from its thread to the GUI thread.

    It belongs to the application, not to the window that asked, so it outlives a
    window closed mid-answer; the window's slots are disconnected with the window,
    and the relay deletes itself when the stream has ended."""

    chunk = pyqtSignal(object, object)  # the chunk, and the CancelToken of the request it belongs to
    ended = pyqtSignal()


def stream_in_thread(chunks: 'Callable[[], Iterable[Chunk | LookedUp | LookupNotice]]', cancel: CancelToken,
                     on_chunk: 'Callable[[Chunk | LookedUp | LookupNotice, CancelToken], object]') -> None:
    """Read chunks() (an answer's stream, conversation.exchange.Exchange.chunks: it never raises,
    its last chunk is a Done or a Failed, and between a provider's chunks come the lookups the
    model made, as LookedUp) in a thread; on_chunk(chunk, cancel) is called on
    the GUI thread for each. cancel is the stream's Stop: the stream then ends with a cancelled
    Done. Chunks already on their way still arrive after Stop: the token tells which request
    they are of."""
    relay = StreamRelay(QApplication.instance())
    relay.chunk.connect(on_chunk)
    relay.ended.connect(relay.deleteLater)

    def target() -> None:
        try:
            for chunk in chunks():
                relay.chunk.emit(chunk, cancel)
            relay.ended.emit()
        except RuntimeError:  # the application is gone (calibre quit mid-answer)
            cancel.cancel()

    collect_garbage_on_gui_thread()
    threading.Thread(target=target, daemon=True, name='BookAI-stream').start()
