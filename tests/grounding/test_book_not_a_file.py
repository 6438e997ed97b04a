# License: GPLv3 Copyright: the Book AI developers
"""A book's path with a FIFO, a device or a folder in its place (issue 26, found by the hostile
battery): said in a sentence at once, never opened (a FIFO would wait for a writer for ever), for
the formats read directly and for those calibre converts."""

import os

import pytest

from calibre_plugins.bookai.grounding.extract import UnreadableBook, read_epub
from calibre_plugins.bookai.grounding.formats import read_book


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / 'book.epub'
    os.mkfifo(path)
    return path


@pytest.mark.parametrize('fmt', ['EPUB', 'KEPUB', 'HTMLZ', 'MOBI'])
def test_a_fifo_in_a_books_place_is_said_and_never_opened(fifo, fmt):
    with pytest.raises(UnreadableBook) as e:
        read_book(str(fifo), fmt)
    assert 'not a regular file' in str(e.value) and str(fifo) in str(e.value)


def test_a_link_to_a_fifo_and_a_folder_and_a_device_are_said(fifo, tmp_path):
    link = tmp_path / 'link.epub'
    link.symlink_to(fifo)
    for path in (link, tmp_path, '/dev/zero'):
        with pytest.raises(UnreadableBook, match='not a regular file'):
            read_epub(path)
