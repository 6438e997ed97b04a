# License: GPLv3 Copyright: the Book AI developers
"""What the reader has read (grounding/so_far.py), on the real novel: nothing after the place,
the chapter the reader is inside cut there, and passages numbered as the whole book's index
numbers them."""

import pytest

from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import passages
from calibre_plugins.bookai.grounding.so_far import chapters_read, passages_read, read_until, tokens_of
from helpers.novel import EPUB


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def test_nothing_after_the_place(novel):
    until = read_until(novel, 0.5)
    read = passages_read(novel, until)
    assert read and all(p.end <= until for p in read)
    last = [p for p in novel.paragraphs if p.start + len(p.text) <= until][-1]
    assert read[-1].end == last.start + len(last.text)  # and everything before it
    after = next(p for p in novel.paragraphs if p.start + len(p.text) > until)
    assert all(after.text not in p.text for p in read)


def test_passages_read_are_the_books_own(novel):
    whole = passages(novel)
    until = read_until(novel, 0.3)
    read = passages_read(novel, until)
    assert read[:-1] == whole[:len(read) - 1]  # the same numbers, places and text
    assert read[-1].number == whole[len(read) - 1].number and read[-1].start == whole[len(read) - 1].start
    assert passages_read(novel, novel.length) == whole


def test_chapters_read_cut_the_current_one(novel):
    until = read_until(novel, 0.5)
    chapters = chapters_read(novel, until)
    assert [c.number for c in chapters] == sorted({c.number for c in chapters})
    assert all(c.complete for c in chapters[:-1])
    current = chapters[-1]
    whole_chapter = [p for p in novel.paragraphs if p.chapter == current.number]
    assert not current.complete and current.end <= until
    assert whole_chapter[-1].start + len(whole_chapter[-1].text) > until
    assert sum(c.tokens for c in chapters) == tokens_of(passages_read(novel, until))
    assert chapters_read(novel, 0) == []
    assert all(c.complete for c in chapters_read(novel, novel.length))
