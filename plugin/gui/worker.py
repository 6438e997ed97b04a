# License: GPLv3 Copyright: the Book AI developers
"""Run slow work (anything that talks to a provider) off the GUI thread.

The result comes back on the GUI thread through a queued signal. If the widget
that asked is gone by then, the result is dropped: closing a window while
work runs is safe.
"""

import threading

from qt.core import QObject, pyqtSignal


class Relay(QObject):

    finished = pyqtSignal(object, object)  # result, exception


def run_in_thread(work, on_done, parent):
    """Call work() in a thread, then on_done(result, exception) on the GUI thread,
    unless parent (a QObject) was destroyed meanwhile."""
    relay = Relay(parent)
    relay.finished.connect(lambda result, exc: (on_done(result, exc), relay.deleteLater()))

    def target():
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
