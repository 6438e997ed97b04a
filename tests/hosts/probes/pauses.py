# License: GPLv3 Copyright: the Book AI developers
"""How long the GUI thread's event loop of a probe's calibre ever waited (the covers' and AI
metadata's probes), and where it was in a long wait."""

import sys
import time


class Pauses:
    """The longest wait of the GUI thread's event loop: a timer every 5 ms, and the largest gap
    between two of its ticks beyond those 5 ms."""

    def __init__(self):
        import threading
        from qt.core import QTimer
        self.last, self.longest, self.where = None, 0.0, ''
        self.phase = ''
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self.tick)
        self.stacks = []  # where the GUI thread was, in a wait of more than 40 ms (sampled by a thread)
        self.gui_thread = threading.get_ident()
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        import traceback
        while True:
            time.sleep(0.02)
            last = self.last
            if last is not None and time.monotonic() - last > 0.04 and len(self.stacks) < 30:
                frame = sys._current_frames().get(self.gui_thread)
                if frame is not None:
                    self.stacks.append([self.phase, round(time.monotonic() - last, 3)] + [
                        f'{f.filename.rpartition("/")[2]}:{f.lineno} {f.name}'
                        for f in traceback.extract_stack(frame)[-8:]])

    def start(self, phase):
        self.phase = phase
        self.last = time.monotonic()
        if not self.timer.isActive():
            self.timer.start()

    def tick(self):
        now = time.monotonic()
        if self.last is not None:
            gap = now - self.last - 0.005
            if gap > self.longest:
                self.longest, self.where = gap, self.phase
        self.last = now

    def stop(self):
        self.timer.stop()
        self.last = None
