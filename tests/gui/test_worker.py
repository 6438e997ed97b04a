# License: GPLv3 Copyright: the Book AI developers
"""gui/worker.py: where work runs. A thread's result reaches the GUI thread (and is dropped when
the window that asked is gone); Qt's work in steps on the GUI thread, stoppable; and once Book AI
has started a thread, Python's garbage is collected on the GUI thread only, so a window nobody
refers to any more is never destroyed in a worker thread."""

import gc
import threading
import time

from qt.core import QObject, QWidget, sip

from calibre_plugins.bookai.gui.worker import emitter, run_in_steps, run_in_thread, run_while
from helpers.calibre_gui import wait_until


def test_result_reaches_the_gui_thread_and_is_dropped_with_its_window(qapp):
    got = []
    owner = QWidget()
    run_in_thread(lambda: threading.current_thread() is threading.main_thread(),
                  lambda r, e: got.append((r, e, threading.current_thread() is threading.main_thread())), owner)
    wait_until(lambda: got, timeout=10)
    assert got == [(False, None, True)]  # worked in a thread, answered on the GUI thread
    gate, dropped = threading.Event(), []
    gone = QWidget()
    run_in_thread(gate.wait, lambda r, e: dropped.append(r), gone)
    sip.delete(gone)  # the window closed and destroyed while its work runs
    gate.set()
    end = []
    run_in_thread(lambda: None, lambda r, e: end.append(1), owner)  # a later result: the earlier one had its turn
    wait_until(lambda: end, timeout=10)
    assert dropped == []


def test_a_result_on_its_way_when_its_window_goes_is_dropped(qapp):
    """The result sent, then the window destroyed before the GUI thread takes it (closed while its
    work ended): dropped, and nothing raised, where an exception would abort calibre (calibre 6.13's
    PyQt still delivers it then)."""
    dropped, gone = [], QWidget()
    before = {t for t in threading.enumerate() if t.name == 'BookAI-worker'}
    run_in_thread(lambda: 1, lambda r, e: dropped.append(r), gone)
    for t in {t for t in threading.enumerate() if t.name == 'BookAI-worker'} - before:
        t.join(10)  # it has sent its result: on its way to the GUI thread
    sip.delete(gone)
    end, owner = [], QWidget()
    run_in_thread(lambda: None, lambda r, e: end.append(1), owner)  # a later result: the earlier one had its turn
    wait_until(lambda: end, timeout=10)
    assert dropped == []


def test_steps_run_on_the_gui_thread_one_a_turn_and_stop(qapp):
    done, where = [], []
    run_in_steps(range(5), lambda i: where.append(threading.current_thread() is threading.main_thread()) or i * i,
                 lambda results, exc: done.append((results, exc)), QObject())  # a parent nobody keeps: see below
    owner = QObject()
    run_in_steps(range(5), lambda i: where.append(threading.current_thread() is threading.main_thread()) or i * i,
                 lambda results, exc: done.append((results, exc)), owner)
    wait_until(lambda: done, timeout=10)
    for _ in range(20):
        qapp.processEvents()
    assert done == [([0, 1, 4, 9, 16], None)] and where == [True] * 5  # none for the parent that went

    def fails(i):
        if i == 2:
            raise ValueError('no')
        return i
    failed = []
    run_in_steps(range(5), fails, lambda results, exc: failed.append((results, str(exc))), owner)
    wait_until(lambda: failed, timeout=10)
    assert failed == [([0, 1], 'no')]
    taken, stopped = [], []
    steps = run_in_steps(range(1000), lambda i: taken.append(i) or time.sleep(0.002),
                         lambda r, e: stopped.append(1), owner)
    wait_until(lambda: len(taken) >= 3, timeout=10)
    steps.stop()
    steps.stop()  # twice: nothing
    n = len(taken)
    for _ in range(20):
        qapp.processEvents()
    assert len(taken) == n < 1000 and stopped == []


def test_garbage_is_collected_on_the_gui_thread_once_a_thread_starts(qapp):
    """A Qt object kept alive only by a reference cycle (a closed window with its own connections)
    is freed when Python collects garbage; a worker thread allocating must not be where that
    happens. calibre's viewer leaves collection automatic; Book AI's first thread changes that."""
    gc.enable()  # as in calibre's viewer (or a process where nothing has changed it yet)
    app_gc = getattr(qapp, 'bookai_garbage_collector', None)
    if app_gc is not None:  # another test started a thread first: start over, as in a fresh viewer
        app_gc.timer.stop()
        qapp.bookai_garbage_collector = None
    ready = []
    run_in_thread(lambda: None, lambda r, e: ready.append(1), qapp)
    wait_until(lambda: ready, timeout=10)
    assert not gc.isenabled() and qapp.bookai_garbage_collector is not None

    freed_on = []

    class Window(QObject):
        def __del__(self):  # in the thread that frees it (the Qt object goes with it)
            freed_on.append(threading.current_thread() is threading.main_thread())
    w = Window()
    w.me = w  # the cycle
    del w

    def allocate():  # far past the collector's thresholds, in a worker thread
        for _ in range(200_000):
            x = []
            x.append(x)
    finished = []
    run_in_thread(allocate, lambda r, e: finished.append(e), qapp)
    wait_until(lambda: finished, timeout=60)
    assert finished == [None]
    wait_until(lambda: freed_on, timeout=30)  # calibre's collector, every 5 s, on the GUI thread
    assert freed_on == [True]  # freed, and there, not in the worker thread


def test_a_result_is_delivered_only_while_its_wait_is_current(qapp):
    """run_while: the result of a wait that is over (a Stop, a newer request) is dropped."""
    from qt.core import pyqtSignal
    owner = QWidget()
    got = []
    current = {'a': True, 'b': False}
    for name in current:
        run_while(lambda name=name: current[name], lambda name=name: name, lambda r, exc: got.append((r, exc)), owner)
    wait_until(lambda: got)
    for _i in range(20):
        qapp.processEvents()
        time.sleep(0.01)
    assert got == [('a', None)]

    class Reporter(QObject):
        said = pyqtSignal(int, str)
    reporter = Reporter()
    heard = []
    reporter.said.connect(lambda n, text: heard.append((n, text)))
    say = emitter(reporter.said)
    say(1, 'one')
    assert heard == [(1, 'one')]
    owner.deleteLater()
