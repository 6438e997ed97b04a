# License: GPLv3 Copyright: the Book AI developers
"""What to read next from the reader's own library (library_search/read_next.py), on a real calibre
library made through calibre's API and its index by meaning made by the real embedding model
(all-MiniLM-L6-v2 in llama-server): the books started from left out, the ones not read yet first (by a
field the reader chose, else by the viewer's record), the seeds when none is selected, only the fields
the reader lets go in the question, and the books offered kept with the turn (a saved one read back
bounded, its damage refused)."""

import io
import json
import time

import pytest

from calibre_plugins.bookai.conversation.books import set_allowed_fields
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.last_read import DAY, LastRead, book_key
from calibre_plugins.bookai.library_search import building, read_next
from calibre_plugins.bookai.library_search.vectors import VectorFiles
from helpers.book_fields import open_library
from helpers.meaning_library import BOOKS, make_meaning_library

KEEPER, HARROW, GREENS, ROME, VINEYARD, RETURN, TIDES = range(7)


@pytest.fixture
def lib(tmp_path, e):
    """The meaning library with a yes/no column #read and a TXT file for two books, indexed."""
    path, ids = make_meaning_library(tmp_path)
    db = open_library(path)
    db.create_custom_column('read', 'Read', 'bool', False)
    db.close()
    db = open_library(path)
    for i in (KEEPER, RETURN):
        db.add_format(ids[i], 'TXT', io.BytesIO(b'A book.'), run_hooks=False)
    files = VectorFiles(str(tmp_path / 'vectors'))
    building.update_index(db, str(db.library_id), e, files, custom=())
    yield db, ids, files.read(str(db.library_id), model=e.key)
    db.close()


def test_the_books_not_read_come_first_and_the_seeds_are_left_out(lib):
    db, ids, index = lib
    lid = str(db.library_id)
    nearest = read_next.candidates(db, lid, index, [ids[KEEPER]], seen={})
    assert ids[KEEPER] not in [c.book_id for c in nearest]
    assert nearest[0].book_id == ids[RETURN] and all(c.unread for c in nearest)  # nothing read: by meaning
    assert len(nearest) == len(BOOKS) - 1
    db.set_field('#read', {ids[RETURN]: True, ids[TIDES]: False})
    by_field = read_next.candidates(db, lid, index, [ids[KEEPER]], '#read', seen={})
    assert by_field[-1].book_id == ids[RETURN] and not by_field[-1].unread
    assert all(c.unread for c in by_field[:-1]) and ids[TIDES] in [c.book_id for c in by_field[:-1]]
    # no field chosen: a book the viewer opened is read
    seen = {book_key(lid, ids[RETURN], 'txt', ''): LastRead(time.time(), 'epubcfi(/6/2)')}
    by_viewer = read_next.candidates(db, lid, index, [ids[KEEPER]], seen=seen)
    assert by_viewer[-1].book_id == ids[RETURN] and not by_viewer[-1].unread
    # a field the library does not have: the viewer's record, as with none
    assert read_next.candidates(db, lid, index, [ids[KEEPER]], '#nothing', seen=seen) == by_viewer
    assert len(read_next.candidates(db, lid, index, [ids[KEEPER]], seen={}, most=3)) == 3


def test_a_date_or_a_number_says_read_and_the_choices_offered(lib):
    db, ids, index = lib
    for label, kind in (('finished', 'datetime'), ('times', 'int')):
        db.create_custom_column(label, label.title(), kind, False)
    path = db.backend.library_path
    db.close()
    db = open_library(path)
    try:
        from datetime import datetime, timezone
        db.set_field('#finished', {ids[GREENS]: datetime(2024, 1, 1, tzinfo=timezone.utc)})
        db.set_field('#times', {ids[ROME]: 2, ids[VINEYARD]: 0})
        lid = str(db.library_id)
        assert read_next.read_books(db, lid, ids, '#finished', {}) == {ids[GREENS]}
        assert read_next.read_books(db, lid, ids, '#times', {}) == {ids[ROME]}
        assert [k for k, _name in read_next.read_field_choices(db)] == ['#finished', '#read', '#times']
    finally:
        db.close()


def test_with_none_selected_the_books_read_lately_and_rated_highly(lib):
    db, ids, index = lib
    lid, now = str(db.library_id), time.time()
    db.set_field('rating', {ids[ROME]: 8, ids[GREENS]: 10, ids[HARROW]: 6})
    seen = {book_key(lid, ids[KEEPER], 'TXT', ''): LastRead(now - 2 * DAY, 'epubcfi(/6/2)'),
            book_key(lid, ids[RETURN], 'TXT', ''): LastRead(now - 400 * DAY, 'epubcfi(/6/2)')}
    assert read_next.seed_books(db, lid, (), seen, now) == [ids[KEEPER], ids[GREENS], ids[ROME]]
    assert read_next.seed_books(db, lid, [ids[TIDES], ids[TIDES]], seen, now) == [ids[TIDES]]
    ready = read_next.prepare(db, lid, index, (), seen=seen)
    assert ready.seeds == [ids[KEEPER], ids[GREENS], ids[ROME]]
    assert not set(ready.seeds) & {c.book_id for c in ready.candidates}
    assert read_next.prepare(db, lid, index, (), seen={}).seeds == [ids[GREENS], ids[ROME]]
    db.set_field('rating', {ids[ROME]: 0, ids[GREENS]: 0})
    assert read_next.prepare(db, lid, index, (), seen={}) == read_next.Prepared([], [])


def test_the_question_holds_only_the_fields_let_go(lib, prefs):
    db, ids, index = lib
    lid = str(db.library_id)
    db.set_field('publisher', {ids[RETURN]: 'Secret Press'})
    db.set_field('#read', {ids[RETURN]: True})
    set_allowed_fields(lid, ['tags'])
    ready = read_next.prepare(db, lid, index, [ids[KEEPER]], '#read', seen={})
    q = ready.question
    assert [b for b, _t in ready.suggested] == [c.book_id for c in ready.candidates]
    assert ready.suggested[-1] == (ids[RETURN], 'Return to Vesterholm')
    n = len(ready.suggested)
    assert f'[{n}] Return to Vesterholm by Ada Brine\nTags: Sea' in q
    assert 'Secret Press' not in q and 'apprentice' not in q and 'Read:' not in q and 'True' not in q
    assert 'Vesterholm\nSeries' not in q  # the series is not let go
    set_allowed_fields(lid, ['tags', 'comments', 'publisher', 'series'])
    q = read_next.prepare(db, lid, index, [ids[KEEPER]], '#read', seen={}).question
    assert 'Secret Press' in q and 'About: The keeper of the island light takes an apprentice' in q
    assert 'Series: Vesterholm (number 1)' in q


def test_the_books_offered_are_kept_with_the_turn_and_read_back_bounded():
    conv = Conversation([], 'L')
    conv.ask('Which next?', suggested=[(6, 'Return to Vesterholm')])
    saved = json.loads(json.dumps(conv.as_dict()))
    assert Conversation.from_dict(saved).turns[0].suggested == ((6, 'Return to Vesterholm'),)
    for bad in ([['7', 'x']], [[0, 'x']], [[7]], 'x', [[True, 'x']]):
        saved['turns'][0]['suggested'] = bad
        with pytest.raises(ValueError):
            Conversation.from_dict(saved)
    saved['turns'][0]['suggested'] = [[7, 'a\x1b[2Jb']] * 80
    turn = Conversation.from_dict(saved).turns[0]
    assert len(turn.suggested) == 50 and '\x1b' not in turn.suggested[0][1]
