# License: GPLv3 Copyright: the Book AI developers
"""A text cache file is read as bytes from outside (grounding.cache): a FIFO in its place is not
waited on; a file that names any class or function but the Book's is never run; one that unpacks
past its bound, or holds a Book of the wrong shape, is set aside and the book read again; never an
error, never a hang."""

import json
import os
import pickle
import threading
import zlib

import pytest

from calibre_plugins.bookai.grounding import cache as cache_module
from calibre_plugins.bookai.grounding.cache import MAGIC, TextCache, stamp, unpacked
from calibre_plugins.bookai.grounding.extract import Book, Chapter, Paragraph

LIBRARY = 'lib'


@pytest.fixture
def book_file(tmp_path):
    path = tmp_path / 'book.epub'
    path.write_bytes(b'a book')
    return path


@pytest.fixture
def cache(tmp_path):
    return TextCache(tmp_path / 'cache')


def a_book() -> Book:
    return Book([Chapter('One', 0)], [Paragraph(0, 0, 'The text.', (2, 4))])


def planted(cache, book_file, payload: bytes) -> str:
    """A cache file for book 1 whose header matches the book file, with payload after it."""
    entry = cache.file_of(LIBRARY, 1, 'EPUB')
    os.makedirs(os.path.dirname(entry), exist_ok=True)
    with open(entry, 'wb') as f:
        f.write(MAGIC + json.dumps(stamp(book_file)).encode('ascii') + b'\n' + payload)
    return entry


def read_within(cache, book_file, seconds=60):
    """cache.get() in a thread, so that a hang fails the test instead of stopping the run."""
    got = []
    t = threading.Thread(target=lambda: got.append(cache.get(LIBRARY, 1, 'EPUB', book_file)), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), 'the cache waited on its file'
    return got[0]


def set_aside_once(entry) -> bool:
    return not os.path.lexists(entry) and os.path.lexists(entry + '.damaged')


def test_a_sound_file_reads_back(cache, book_file):
    cache.put(LIBRARY, 1, 'EPUB', book_file, a_book())
    book, _index = read_within(cache, book_file)
    assert book == a_book()


def test_a_fifo_in_place_of_a_cache_file_is_not_waited_on(cache, book_file):
    entry = cache.file_of(LIBRARY, 1, 'EPUB')
    os.makedirs(os.path.dirname(entry))
    os.mkfifo(entry)
    assert read_within(cache, book_file) is None
    assert set_aside_once(entry)
    assert cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=lambda p: a_book())[0] == a_book()


class Runs:
    """Unpickled, it would run builtins.exec with code that leaves a file behind."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f'open({self.marker!r}, "w").write("ran")',))


def test_a_file_that_names_any_other_function_is_never_run(cache, book_file, tmp_path):
    marker = tmp_path / 'ran'
    book = a_book()
    book.skipped.append(Runs(str(marker)))  # inside a real Book, so that only the global gives it away
    entry = planted(cache, book_file, zlib.compress(pickle.dumps(book, protocol=pickle.HIGHEST_PROTOCOL)))
    assert read_within(cache, book_file) is None
    assert not marker.exists() and set_aside_once(entry)


@pytest.mark.parametrize('shape', ['not a book', 'paragraphs not a list', 'a paragraph of the wrong type',
                                   'text not text'])
def test_a_book_of_the_wrong_shape_is_set_aside(cache, book_file, shape):
    book = a_book()
    if shape == 'not a book':
        book = [a_book()]
    elif shape == 'paragraphs not a list':
        book.paragraphs = 5
    elif shape == 'a paragraph of the wrong type':
        book.paragraphs = [Chapter('x', 0)]
    else:
        book.paragraphs = [Paragraph(0, 0, b'bytes')]
    entry = planted(cache, book_file, zlib.compress(pickle.dumps(book)))
    assert read_within(cache, book_file) is None and set_aside_once(entry)


def test_a_file_that_unpacks_past_its_bound_is_set_aside(cache, book_file, monkeypatch):
    monkeypatch.setattr(cache_module, 'MAX_UNPACKED_BYTES', 1 << 20)
    entry = planted(cache, book_file, zlib.compress(bytes(8 << 20), 9))  # 8 MB of zeros in a few KB
    assert read_within(cache, book_file) is None and set_aside_once(entry)
    with pytest.raises(ValueError):
        unpacked(zlib.compress(bytes(100)), 99)
    with pytest.raises(ValueError):
        unpacked(zlib.compress(b'cut short')[:-3])
    assert unpacked(zlib.compress(bytes(100)), 100) == bytes(100)


def test_a_header_without_an_end_is_set_aside(cache, book_file):
    entry = cache.file_of(LIBRARY, 1, 'EPUB')
    os.makedirs(os.path.dirname(entry))
    with open(entry, 'wb') as f:
        f.write(MAGIC + b'{' + b' ' * 100_000)
    assert read_within(cache, book_file) is None and set_aside_once(entry)
