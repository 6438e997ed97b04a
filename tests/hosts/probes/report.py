# License: GPLv3 Copyright: the Book AI developers
"""What a probe tells its test: a JSON report at $BOOKAI_PROBE_OUT, written even when
the program under test hangs (a watchdog ends it and says so). If even the watchdog cannot run
(a thread holds Python's lock and waits), faulthandler, which needs no lock, writes every
thread's stack to $BOOKAI_PROBE_OUT.stacks a little later."""

import faulthandler
import json
import os
import threading


class Report(dict):

    def __init__(self, **initial):
        super().__init__(timeout=False, **initial)
        self.path = os.environ['BOOKAI_PROBE_OUT']
        self.screenshot = os.environ.get('BOOKAI_PROBE_SCREENSHOT')
        self.timeout = float(os.environ.get('BOOKAI_PROBE_TIMEOUT', '120'))
        self.watchdog = threading.Timer(self.timeout, self.on_timeout)
        self.watchdog.daemon = True
        self.stacks = None

    def write(self):
        with open(self.path, 'w') as f:
            json.dump(self, f, indent=2)

    def start(self):
        self.watchdog.start()
        self.stacks = open(self.path + '.stacks', 'w')
        faulthandler.dump_traceback_later(self.timeout + 10, file=self.stacks)

    def finish(self, exit_code):
        self['exit_code'] = exit_code
        self.write()
        self.watchdog.cancel()
        faulthandler.cancel_dump_traceback_later()

    def on_timeout(self):
        self['timeout'] = True
        self.write()
        os._exit(3)


def later(report, condition, then, timeout=120):
    """then() once condition() holds, checked on the GUI thread every 50 ms; after timeout
    seconds then() anyway, with the condition's name in report['waited_for']."""
    import time
    from qt.core import QTimer
    end = time.monotonic() + timeout

    def check():
        if condition():
            return then()
        if time.monotonic() > end:
            report['waited_for'] = getattr(condition, '__name__', '?')
            report.write()
            return then()
        QTimer.singleShot(50, check)
    check()


def modal(into, name, then, shot=None, record=lambda d: d.windowTitle()):
    """Once a modal dialog is up: into[name] = record(dialog) (its title), a screenshot of it
    at shot if given; then reject it and then()."""
    from qt.core import QApplication, QTimer
    d = QApplication.activeModalWidget()
    if d is None:
        return QTimer.singleShot(50, lambda: modal(into, name, then, shot, record))
    into[name] = record(d)
    if shot:
        d.grab().save(shot)
    d.reject()
    QTimer.singleShot(0, then)
