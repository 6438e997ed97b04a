# License: GPLv3 Copyright: the Book AI developers
"""The text cache: a book is read once, read again when its file changes or the cache's
schema does; a removed book's text goes; a damaged cache file is set aside, never an
error."""

import os
import shutil

import pytest

from calibre_plugins.bookai.grounding import cache as cache_module
from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import Index, passages
from helpers.books import quick_start_epub

LIBRARY = 'c3a1d9e2-6f0b-4c1e-9a57-0d6f2f1b7e11'
QUESTION = 'How do I convert books to another format?'


class CountingReader:

    def __init__(self):
        self.calls = 0

    def __call__(self, path):
        self.calls += 1
        return read_epub(path)


@pytest.fixture
def book_file(tmp_path):
    path = tmp_path / 'library' / 'guide.epub'
    path.parent.mkdir()
    shutil.copy(quick_start_epub(), path)
    return path


@pytest.fixture
def cache(tmp_path):
    return TextCache(tmp_path / 'cache')


def test_a_book_is_read_once(cache, book_file):
    read = CountingReader()
    book, index = cache.text_of(LIBRARY, 7, 'EPUB', book_file, read=read)
    assert read.calls == 1 and os.path.exists(cache.file_of(LIBRARY, 7, 'EPUB'))
    again, again_index = cache.text_of(LIBRARY, 7, 'EPUB', book_file, read=read)
    assert read.calls == 1
    assert again.paragraphs == book.paragraphs and again.chapters == book.chapters
    assert again_index.search(QUESTION, k=5) == index.search(QUESTION, k=5) != []
    assert cache.get(LIBRARY, 7, 'EPUB', book_file)[0].paragraphs == book.paragraphs
    assert cache.get(LIBRARY, 7, 'AZW3', book_file) is None  # per format
    assert cache.get('another-library', 7, 'EPUB', book_file) is None  # per library


def test_the_cache_file_is_smaller_than_the_text(cache, book_file):
    book, index = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read_epub)
    size = os.path.getsize(cache.file_of(LIBRARY, 1, 'EPUB'))
    assert 0 < size < 0.8 * book.length, (size, book.length)


def test_a_changed_book_file_is_read_again(cache, book_file):
    read = CountingReader()
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    st = book_file.stat()
    os.utime(book_file, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # touched
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2
    with open(book_file, 'ab') as f:  # changed, the time put back: the size tells
        f.write(b'\0' * 10)
    os.utime(book_file, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 3


def test_books_no_longer_in_the_library_are_forgotten(cache, book_file):
    for book_id in (1, 2, 3):
        cache.text_of(LIBRARY, book_id, 'EPUB', book_file, read=read_epub)
    cache.text_of(LIBRARY, 2, 'TXT', book_file, read=read_epub)
    cache.text_of('other', 2, 'EPUB', book_file, read=read_epub)
    assert cache.prune(LIBRARY, {1, 3, 4}) == 2
    assert not any(os.path.exists(cache.file_of(LIBRARY, 2, fmt)) for fmt in ('EPUB', 'TXT'))
    assert os.path.exists(cache.file_of(LIBRARY, 1, 'EPUB')) and os.path.exists(cache.file_of(LIBRARY, 3, 'EPUB'))
    assert os.path.exists(cache.file_of('other', 2, 'EPUB'))  # another library's books are its own
    assert cache.drop(LIBRARY, 3) == 1 and not os.path.exists(cache.file_of(LIBRARY, 3, 'EPUB'))
    assert cache.prune('never-seen', set()) == 0


@pytest.mark.parametrize('damage', ['garbage', 'garbage after the header', 'cut short', 'empty'])
def test_a_damaged_cache_file_is_set_aside_and_the_book_read_again(cache, book_file, damage):
    read = CountingReader()
    book, _index = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    entry = cache.file_of(LIBRARY, 1, 'EPUB')
    with open(entry, 'rb') as f:
        header, data = f.readline(), f.read()
    damaged = {'garbage': os.urandom(3000), 'garbage after the header': header + os.urandom(3000),
               'cut short': header + data[:len(data) // 2], 'empty': b''}[damage]
    with open(entry, 'wb') as f:
        f.write(damaged)
    again, index = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2 and again.paragraphs == book.paragraphs and index.search(QUESTION)
    with open(entry + '.damaged', 'rb') as f:
        assert f.read() == damaged
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2  # the new copy is good


def test_a_pickle_of_something_else_is_damage_too(cache, book_file):
    import json
    import pickle
    import zlib
    entry = cache.file_of(LIBRARY, 1, 'EPUB')
    os.makedirs(os.path.dirname(entry))
    with open(entry, 'wb') as f:
        f.write(cache_module.MAGIC + json.dumps(cache_module.stamp(book_file)).encode() + b'\n' +
                zlib.compress(pickle.dumps({'not': 'a book'})))
    assert cache.get(LIBRARY, 1, 'EPUB', book_file) is None and os.path.exists(entry + '.damaged')


def test_another_cache_version_is_read_again(cache, book_file, monkeypatch):
    read = CountingReader()
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    monkeypatch.setattr(cache_module, 'CACHE_VERSION', cache_module.CACHE_VERSION + 1)
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert read.calls == 2
    assert not os.path.exists(cache.file_of(LIBRARY, 1, 'EPUB') + '.damaged')  # old, not damaged


def test_the_schema_follows_the_book_classes():
    """A field added to Paragraph (or Book, Chapter) changes the schema: old files are read again."""
    from dataclasses import fields

    from calibre_plugins.bookai.grounding.extract import Paragraph
    schema = cache_module.schema()
    assert schema.startswith(f'{cache_module.CACHE_VERSION}:')
    assert 'Paragraph(' + ','.join(f.name for f in fields(Paragraph)) + ')' in schema


def test_a_cache_that_cannot_be_written_still_gives_the_text(tmp_path, book_file):
    blocked = tmp_path / 'blocked'
    blocked.write_text('a file where the cache folder would be')
    cache = TextCache(blocked)
    read = CountingReader()
    book, index = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read)
    assert book.length > 20_000 and index.search(QUESTION) and read.calls == 1
    assert cache.get(LIBRARY, 1, 'EPUB', book_file) is None


def test_other_formats_are_converted_by_default(cache, tmp_path, sandbox):
    """With no reader given, text_of reads with formats.read_book: conversion for an AZW3."""
    azw3 = sandbox.convert(quick_start_epub(), tmp_path / 'guide.azw3')
    book, index = cache.text_of(LIBRARY, 5, 'AZW3', azw3)
    assert 'Task 2: Conversion' in [c.title for c in book.chapters]
    assert cache.get(LIBRARY, 5, 'AZW3', azw3)[0].paragraphs == book.paragraphs


def test_the_default_folder_is_in_calibres_cache():
    from calibre.constants import cache_dir
    assert default_folder() == os.path.join(cache_dir(), 'bookai', 'text')


def test_the_index_is_rebuilt_from_the_stored_book(cache, book_file):
    book, index = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read_epub)
    _book, loaded = cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read_epub)
    fresh = Index(passages(read_epub(book_file)))
    assert loaded.passages == fresh.passages and loaded.terms == fresh.terms and loaded.idf == fresh.idf
