# License: GPLv3 Copyright: the Book AI developers
"""This process's resident memory (Linux: /proc/self/statm), for bounds on what reading a
hostile book may cost."""

import os
import threading
import time
from typing import Callable

MB = 1 << 20


def resident() -> int:
    """This process's resident memory now, in bytes."""
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def peak_growth(fn: Callable[[], object]) -> tuple[object, int]:
    """(what fn raised or returned, the most resident memory grew while it ran), sampled."""
    base, peak, done = resident(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], resident() - base)
            time.sleep(0.005)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        outcome = fn()
    except Exception as e:
        outcome = e
    finally:
        done.set()
        t.join()
    return outcome, peak[0]
