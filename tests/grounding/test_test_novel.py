# License: GPLv3 Copyright: the Book AI developers
"""The tests' real novel (tests/books/, tests/helpers/novel.py): Pride and Prejudice as calibre made
it into an EPUB, read by Book AI's own reader, checked against its source text; and the questions
written from it, each answer's passages found where the question says they are."""

import hashlib
import json
import re
import zipfile

import pytest
from lxml import etree

from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.novel import (AUTHOR, BOOKS, CHAPTERS, EPUB, QUESTIONS, SOURCE, TITLE, plain,
                           source_parts)

KINDS = {'passage', 'relationship', 'so far', 'summary', 'spoiler probe'}


@pytest.fixture(scope='module')
def book():
    return read_epub(EPUB)


@pytest.fixture(scope='module')
def chapters(book):
    """The paragraphs of each chapter, as Book AI reads them."""
    out = [[] for _ in book.chapters]
    for p in book.paragraphs:
        out[p.chapter].append(p.text)
    return out


@pytest.fixture(scope='module')
def questions():
    return json.loads(QUESTIONS.read_text(encoding='utf-8'))['questions']


def test_the_source_is_the_one_named(book):
    sha = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert sha in (BOOKS / 'SOURCE.md').read_text(encoding='utf-8')
    assert 'gutenberg' not in SOURCE.read_text(encoding='ascii').lower()


def test_a_novel_of_more_than_80000_words(book):
    assert sum(len(p.text.split()) for p in book.paragraphs) >= 80_000
    assert not book.skipped


def test_one_chapter_per_chapter_of_the_novel(book, chapters):
    front, source = source_parts()
    assert len(source) == CHAPTERS
    assert [c.title for c in book.chapters] == [front[0]] + [f'Chapter {n}' for n in range(1, CHAPTERS + 1)]
    assert chapters[0] == front
    for n, (heading, paragraphs) in enumerate(source, 1):
        assert chapters[n] == [heading] + [plain(p) for p in paragraphs], heading


def test_title_author_and_table_of_contents():
    with zipfile.ZipFile(EPUB) as zf:
        opf = etree.fromstring(zf.read('content.opf'))
        nav = etree.fromstring(zf.read('nav.xhtml'))
        names = zf.namelist()
    dc = {'dc': 'http://purl.org/dc/elements/1.1/'}
    assert opf.xpath('//dc:title/text()', namespaces=dc) == [TITLE]
    assert opf.xpath('//dc:creator/text()', namespaces=dc) == [AUTHOR]
    entries = [''.join(a.itertext()) for a in nav.iter('{http://www.w3.org/1999/xhtml}a')]
    assert entries[:CHAPTERS] == [f'Chapter {n}' for n in range(1, CHAPTERS + 1)]
    assert not [n for n in names if re.search(r'\.(jpe?g|png|gif|svg|webp)$', n, re.I)]


def test_the_questions_are_well_formed(questions):
    assert len(questions) >= 30
    assert [q['id'] for q in questions] == list(range(1, len(questions) + 1))
    for q in questions:
        assert set(q) >= {'question', 'answer', 'position', 'evidence', 'kind', 'multi_passage', 'spoiler_probe'}, q
        assert q['question'].strip().endswith(('?', '.')) and q['answer'].strip(), q
        assert q['kind'] in KINDS and (q['kind'] == 'spoiler probe') == q['spoiler_probe'], q
        assert 1 <= q['position'] <= CHAPTERS and q['evidence'], q
        where = [e['chapter'] for e in q['evidence']]
        if q['spoiler_probe']:  # the answer lies after the reader's place, and what would tell it is named
            assert min(where) > q['position'] and q['must_not_say'] and q['safe_answer'], q
        else:  # answerable from what the reader has read
            assert max(where) <= q['position'], q
        if q['multi_passage']:
            assert len(q['evidence']) >= 2 or q['kind'] in ('so far', 'summary'), q
    assert sum(q['multi_passage'] for q in questions) * 2 >= len(questions)
    assert sum(q['spoiler_probe'] for q in questions) >= 5


def test_every_quote_is_in_its_chapter(questions, chapters):
    for q in questions:
        for e in q['evidence']:
            assert 1 <= e['chapter'] <= CHAPTERS and len(e['quote'].split()) >= 4, (q['id'], e)
            assert any(e['quote'] in p for p in chapters[e['chapter']]), (q['id'], e)
