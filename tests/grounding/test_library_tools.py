# License: GPLv3 Copyright: the Book AI developers
"""Ask my library with tools (grounding/library_tools.py) over a real calibre library made by calibre
(its full-text index made by calibre itself): the made-up books and the Quick Start Guides, and the
real novel with sentinel text right after the place the E-book viewer keeps for it. Search, chapters
and reads, on purpose past the place, never give the sentinel (which calibre's index holds); a book
with no place gives its text; a book whose place cannot be read gives none; the model's bad
arguments come back as refused results in words."""

import json
import os

import pytest

from calibre_plugins.bookai.core.messages import MAX_TOOL_ARGUMENTS_CHARS, ToolCall
from calibre_plugins.bookai.core.printable import CONTROL
from calibre_plugins.bookai.grounding import library_tools as lt
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.library_tools import LibraryTools
from calibre_plugins.bookai.grounding.reading_position import viewer_annotations_file
from helpers.library import GUIDE_ID, KURZ_ID, LIGHTHOUSE_ID, ORCHARD_ID, make_library
from helpers.sandbox import Sandbox
from helpers.sentinels import MARK, SENTINELS, epub_with_sentinel

NOVEL_ID = 6
PLACE = 0.25


def open_db(path):
    from calibre.library import db
    return db(str(path)).new_api


def call(tools, name, arguments, first=1):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return tools.run(ToolCall('c1', name, text), first)


@pytest.fixture(scope='module')
def library(tmp_path_factory):
    """(the library's new_api, the novel as read from it, the place: the character offset of the
    sentinel's paragraph, which the viewer's last-read place names)."""
    root = tmp_path_factory.mktemp('tools')
    novel, _before = epub_with_sentinel(root / 'pride-and-prejudice.epub', PLACE)
    db = open_db(make_library(Sandbox(root / 'sandbox'), more=(novel,)))
    db.set_field('tags', {LIGHTHOUSE_ID: ['seafaring', 'islands']})
    db.set_field('comments', {ORCHARD_ID: '<p>A story of <b>perry</b> pears &amp; quinces.</p>'})
    epub = db.format_abspath(NOVEL_ID, 'EPUB')
    book = read_epub(epub)
    at = next(p.start for p in book.paragraphs if p.text == SENTINELS[0])
    write_annotations(epub, [{'pos': book.cfi_at(at), 'pos_type': 'epubcfi', 'type': 'last-read',
                              'timestamp': '2026-12-01T10:00:00+00:00'}])
    # the German guide: opened in the viewer, but its file of places cannot be read
    write_annotations(db.format_abspath(KURZ_ID, 'EPUB'), None)
    yield db, book, at
    db.close()


def write_annotations(book_path, annotations):
    path = viewer_annotations_file(book_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write('{"damaged' if annotations is None else json.dumps(annotations))


@pytest.fixture
def tools(library):
    return LibraryTools(library[0], None)


def test_calibres_index_holds_the_sentinel_so_the_clamp_is_what_keeps_it_out(library):
    db, book, at = library
    assert {r['book_id'] for r in db.fts_search('"zqx"', return_text=False)} == {NOVEL_ID}
    assert book.fraction(at) == pytest.approx(PLACE, abs=0.01)


def test_the_tools_and_what_will_be_sent_says(tools):
    assert [t.name for t in tools.tools()] == ['search_library', 'book_chapters', 'read_book']
    assert all(t.parameters['type'] == 'object' for t in tools.tools())
    assert tools.description() == ("The model may search your library's books and read their passages, up to "
                                   'where you are in the books you have begun.')


def test_a_search_finds_books_by_their_details_and_passages_numbered_with_places(tools):
    r = call(tools, 'search_library', {'query': 'Who kept the lighthouse on Vesterholm?'}, first=7)
    assert not r.refused and r.places
    assert 'book_id 1: The Keeper of the Lighthouse, by Ada Brine' in r.text
    assert '[7] (The Keeper of the Lighthouse, by Ada Brine; book_id 1)' in r.text
    assert 'Marguerite Falkenrath kept the lighthouse' in r.text
    first = r.places[0]
    assert (first.chapter, first.book_id, first.fmt) == ('The Keeper of the Lighthouse', LIGHTHOUSE_ID, 'TXT')
    assert f'[{6 + len(r.places)}]' in r.text and f'[{7 + len(r.places)}]' not in r.text
    assert r.summary.startswith('searched "Who kept the lighthouse on Vesterholm?": ')


def test_the_fields_searched_are_those_the_reader_lets_book_ai_send(library):
    db = library[0]
    plain = call(LibraryTools(db, None), 'search_library', {'query': 'seafaring perry'})
    assert 'tags:' not in plain.text and 'description:' not in plain.text and 'book_id' not in plain.text
    more = call(LibraryTools(db, None, fields={'tags', 'comments'}), 'search_library', {'query': 'seafaring perry'})
    (line,) = [line for line in more.text.splitlines() if line.startswith('- book_id 1: ')]
    assert line.startswith('- book_id 1: The Keeper of the Lighthouse, by Ada Brine; tags: ')
    assert 'seafaring' in line and 'islands' in line
    assert 'description: A story of perry pears & quinces.' in more.text and '<b>' not in more.text


def test_k_and_the_size_of_a_result_are_bounded(tools):
    r = call(tools, 'search_library', {'query': 'convert books EPUB calibre library format', 'k': 50})
    assert 0 < len(r.places) <= lt.MAX_K and len(r.text) <= lt.RESULT_CHARS
    one = call(tools, 'search_library', {'query': 'convert books EPUB calibre library format', 'k': 1})
    assert len(one.places) == 1


def test_a_book_with_no_place_gives_its_text(tools, library):
    db = library[0]
    r = call(tools, 'read_book', {'book_id': GUIDE_ID})
    assert not r.refused and r.places and all(p.book_id == GUIDE_ID and p.fmt == 'EPUB' for p in r.places)
    assert 'read_book with position' in r.text  # it goes on
    chapters = call(tools, 'book_chapters', {'book_id': GUIDE_ID})
    assert not chapters.refused and 'the reader is in this chapter' not in chapters.text
    last = read_epub(db.format_abspath(GUIDE_ID, 'EPUB')).chapters[-1].title
    assert last.split()[0] in chapters.text
    # a TXT book: converted by calibre, then read
    txt = call(tools, 'read_book', {'book_id': LIGHTHOUSE_ID, 'query': 'cartographer reefs'})
    assert 'Tobias Wendelin' in txt.text and txt.places[0].fmt == 'TXT'


def test_search_never_gives_what_is_after_the_place(tools, library):
    db, book, at = library
    for query in ('zqx sentinel vicar eloped housekeeper', 'Netherfield', 'Netherfield housekeeper eloped zqx',
                  'Pemberley Wickham Lydia married'):
        r = call(tools, 'search_library', {'query': query, 'k': 8})
        assert MARK not in r.text and SENTINELS[0][12:40] not in r.text, query
        for p in r.places:
            if p.book_id == NOVEL_ID:
                assert p.position < at / book.length and p.cfi, (query, p)
    found = call(tools, 'search_library', {'query': 'Netherfield Park is let at last'})
    assert any(p.book_id == NOVEL_ID for p in found.places), found.text


def test_chapters_stop_at_the_place(tools, library):
    db, book, at = library
    r = call(tools, 'book_chapters', {'book_id': NOVEL_ID})
    assert not r.refused and MARK not in r.text
    begun = [c for c in book.chapters if c.start < at]
    assert f'{len(begun)}. {begun[-1].title}' in r.text and r.text.rstrip().endswith('(the reader is in this chapter)')
    assert f'\n{len(begun) + 1}. ' not in r.text and book.chapters[len(begun)].title not in r.text


def test_reads_stop_at_the_place_and_past_it_are_refused(tools, library):
    db, book, at = library
    inside = next(i for i, c in enumerate(book.chapters) if c.start < at and (
        i + 1 == len(book.chapters) or book.chapters[i + 1].start >= at)) + 1
    for args in ({'chapter': inside + 1}, {'chapter': len(book.chapters)}, {'position': 0.9},
                 {'position': at / book.length + 0.0001}, {'position': 1}):
        r = call(tools, 'read_book', {'book_id': NOVEL_ID, **args})
        assert r.refused and r.text == 'The reader has not reached that part.' and not r.places, args
    r = call(tools, 'read_book', {'book_id': NOVEL_ID, 'chapter': inside})
    assert not r.refused and MARK not in r.text
    r = call(tools, 'read_book', {'book_id': NOVEL_ID, 'query': 'zqx sentinel eloped vicar housekeeper'})
    assert MARK not in r.text
    # paging on from the start of the book, as the results say, reaches the place and no further
    seen, position, pages = '', 0.0, 0
    while True:
        r = call(tools, 'read_book', {'book_id': NOVEL_ID, 'position': position})
        assert not r.refused and MARK not in r.text and len(r.text) <= lt.RESULT_CHARS
        seen += r.text
        pages += 1
        if 'read_book with position ' not in r.text:
            break
        position = float(r.text.rpartition('read_book with position ')[2].split()[0])
        assert pages < 200
    assert r.text.endswith('The reader has read no further than this.')
    before = book.paragraphs[next(i for i, p in enumerate(book.paragraphs) if p.start == at) - 1].text
    assert before[-30:] in seen  # the last paragraph before the place was read


def test_a_book_whose_place_cannot_be_read_gives_none_of_its_text(tools):
    r = call(tools, 'read_book', {'book_id': KURZ_ID})
    assert r.refused and 'cannot tell where the reader is' in r.text
    found = call(tools, 'search_library', {'query': 'Konvertieren Sie Bücher in das EPUB Format'})
    assert all(p.book_id != KURZ_ID for p in found.places)


def test_the_books_asked_about_only(library):
    tools = LibraryTools(library[0], [ORCHARD_ID, NOVEL_ID])
    r = call(tools, 'read_book', {'book_id': LIGHTHOUSE_ID})
    assert r.refused and 'not among the books this question is about' in r.text
    found = call(tools, 'search_library', {'query': 'lighthouse quince'})
    assert {p.book_id for p in found.places} == {ORCHARD_ID}


@pytest.mark.parametrize('name, arguments, words', [
    ('read_book', '{"book_id": ', 'not JSON'),
    ('read_book', '[1, 2]', 'must be a JSON object'),
    ('read_book', '"6"', 'must be a JSON object'),
    ('read_book', '[' * 5000, 'not JSON'),
    ('search_library', '{"query": 5}', 'query must be a string'),
    ('search_library', '{"query": ""}', 'query must be a string'),
    ('search_library', '{}', 'query must be a string'),
    ('search_library', json.dumps({'query': 'lighthouse ' * 40}), 'too long'),
    ('search_library', '{"query": "the of and"}', 'no word to search for'),
    ('search_library', '{"query": "lighthouse", "k": "many"}', 'k must be a whole number'),
    ('search_library', '{"query": "lighthouse", "k": -3}', 'k must be a whole number'),
    ('book_chapters', '{"book_id": -1}', 'no book with book_id -1'),
    ('book_chapters', '{"book_id": 0}', 'no book with book_id 0'),
    ('book_chapters', '{"book_id": 99999}', 'no book with book_id 99999'),
    ('book_chapters', '{"book_id": 123456789012345678901234567890}', 'no book with book_id that large'),
    ('book_chapters', '{"book_id": 1e400}', 'book_id must be a whole number'),
    ('book_chapters', '{"book_id": "six"}', 'book_id must be a whole number'),
    ('book_chapters', '{"book_id": true}', 'book_id must be a whole number'),
    ('book_chapters', '{"book_id": [6]}', 'book_id must be a whole number'),
    ('book_chapters', '{}', 'book_id must be a whole number'),
    ('read_book', '{"book_id": 6, "chapter": 0}', 'chapter must be a whole number'),
    ('read_book', '{"book_id": 4, "chapter": 1000000000000000000000}', 'there is no chapter'),
    ('read_book', '{"book_id": 6, "position": -0.5}', 'position must be a number from 0'),
    ('read_book', '{"book_id": 6, "position": 2}', 'position must be a number from 0'),
    ('read_book', '{"book_id": 6, "position": NaN}', 'position must be a number from 0'),
    ('read_book', '{"book_id": 6, "position": Infinity}', 'position must be a number from 0'),
    ('read_book', '{"book_id": 6, "query": {"$gt": ""}}', 'query must be a string'),
    ('look_everywhere', '{}', 'There is no tool named'),
])
def test_bad_arguments_are_refused_in_words(tools, name, arguments, words):
    r = tools.run(ToolCall('c1', name, arguments), 1)
    assert r.refused and words in r.text and not r.places, r
    assert len(r.text.split()) >= 4 and r.summary and not CONTROL.search(r.summary + r.text)


def test_arguments_longer_than_a_call_holds_and_escapes_are_refused_inert(tools):
    r = tools.run(ToolCall('c1', 'search_library', json.dumps({'query': 'x' * MAX_TOOL_ARGUMENTS_CHARS})), 1)
    assert r.refused and 'too long' in r.text
    r = call(tools, 'search_library', {'query': '\x1b[31mlighthouse\x07 \x9b2J keeper'})
    assert not CONTROL.search(r.summary) and not CONTROL.search(r.text)


def test_the_toolbox_of_ask_my_library(library, prefs):
    from calibre_plugins.bookai.conversation.books import set_allowed_fields
    from calibre_plugins.bookai.conversation.library import library_toolbox
    from calibre_plugins.bookai.conversation.prompts import CLOSE, OPEN, passage_texts
    db = library[0]
    set_allowed_fields(db.library_id, ['tags'])
    box = library_toolbox(db, None)
    assert box.fields == {'tags'} and box.book_ids is None
    r = call(box, 'search_library', {'query': 'seafaring Vesterholm'}, first=3)
    assert OPEN in r.text and CLOSE in r.text and 'tags: seafaring' in r.text
    assert 3 in passage_texts(r.text) and len(passage_texts(r.text)) == len(r.places)
    assert library_toolbox(db, [ORCHARD_ID]).book_ids == {ORCHARD_ID}
