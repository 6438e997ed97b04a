# License: GPLv3 Copyright: the Book AI developers
"""A guard against a hang, for tests of what must never wait for ever (a FIFO where a file
should be): not a measure of speed."""

import threading
from typing import Any, Callable


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn() in a thread; an AssertionError if it has not returned after seconds (a hang guard, not
    a measure of speed)."""
    box = {}
    t = threading.Thread(target=lambda: box.update(result=fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), 'it hangs'
    return box.get('result')
