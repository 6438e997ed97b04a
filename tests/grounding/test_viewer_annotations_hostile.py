# License: GPLv3 Copyright: the Book AI developers
"""The E-book viewer's annotations file (calibre's, read for the reader's place) read as hostile:
a FIFO, a device or a folder in its place, or a file too large, gives no place at once: never a
hang, never gigabytes. (The place read from a good file: tests/main_window/test_grounded_discussion.py.)"""

import os
import threading

import pytest

WATCHDOG = 120


def place_of(tmp_path, monkeypatch, make):
    from calibre_plugins.bookai.grounding import reading_position
    book_file = str(tmp_path / 'book.epub')
    target = tmp_path / 'annots.json'
    make(target)
    monkeypatch.setattr(reading_position, 'viewer_annotations_file', lambda path: str(target))
    out = {}
    t = threading.Thread(target=lambda: out.setdefault('place', reading_position.saved_position(book_file, None)),
                         daemon=True)
    t.start()
    t.join(WATCHDOG)
    assert not t.is_alive(), 'reading the annotations file hangs'
    return out['place']


def too_large(path):
    from calibre_plugins.bookai.grounding.reading_position import MAX_ANNOTATIONS_BYTES
    with open(path, 'wb') as f:
        f.write(b'[' + b' ' * MAX_ANNOTATIONS_BYTES + b']')


MAKERS = {
    'a FIFO': os.mkfifo,
    'a link to a device': lambda p: p.symlink_to('/dev/zero'),
    'a folder': lambda p: p.mkdir(),
    'too large': too_large,
    'nested too deep': lambda p: p.write_bytes(b'[' * 100_000 + b']' * 100_000),
    'not a list': lambda p: p.write_bytes(b'{"type": "last-read"}'),
}


@pytest.mark.parametrize('case', list(MAKERS))
def test_a_hostile_annotations_file_gives_no_place_at_once(tmp_path, monkeypatch, case):
    assert place_of(tmp_path, monkeypatch, MAKERS[case]) is None
