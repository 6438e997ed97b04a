# License: GPLv3 Copyright: the Book AI developers
"""When a recap is offered after a break (conversation/last_read.py): after the reader's days,
never with 0, not for a book never seen, not when the clock went back; since which place (none
when it is not before the place now); the record kept bounded, a damaged one set aside."""

import json
import os

from calibre_plugins.bookai.conversation.last_read import (
    DAY, MAX_BOOKS, MAX_FILE_BYTES, LastRead, LastReadRecord, book_key, recap_offer, since_place,
)

NOW = 1_800_000_000.0
PLACE = 'epubcfi(/6/4!/4/2/1:0)'


def test_a_recap_is_offered_after_the_days_set():
    assert recap_offer(LastRead(NOW - 7 * DAY, PLACE), NOW, 7).days == 7
    assert recap_offer(LastRead(NOW - 7 * DAY, PLACE), NOW, 7).cfi == PLACE
    assert recap_offer(LastRead(NOW - 7 * DAY + 60, PLACE), NOW, 7) is None  # a minute short of a week
    assert recap_offer(LastRead(NOW - 2 * DAY, PLACE), NOW, 1).days == 2
    assert recap_offer(LastRead(NOW - 400 * DAY, PLACE), NOW, 365).days == 400


def test_never_with_0_nor_for_a_book_never_seen_nor_when_the_clock_went_back():
    assert recap_offer(LastRead(NOW - 100 * DAY, PLACE), NOW, 0) is None
    assert recap_offer(None, NOW, 7) is None
    assert recap_offer(LastRead(NOW + 30 * DAY, PLACE), NOW, 7) is None  # last read "in the future"


def test_the_recap_offered_starts_where_the_last_reading_began():
    began = 'epubcfi(/6/2!/4/2/1:0)'
    assert recap_offer(LastRead(NOW - 9 * DAY, PLACE, began), NOW, 7).cfi == began
    assert recap_offer(LastRead(NOW - 9 * DAY, PLACE), NOW, 7).cfi == PLACE  # an older record: where it ended


def test_since_the_earlier_place_only_when_it_is_before_the_place_now():
    assert since_place(0.2, 0.5) == 0.2
    assert since_place(None, 0.5) is None  # no earlier place: the story so far
    assert since_place(0.5, 0.5) is None and since_place(0.4995, 0.5) is None  # the same place
    assert since_place(0.7, 0.5) is None  # further on than now (the reader went back)
    assert since_place(-0.1, 0.5) is None


def test_the_record_keeps_a_book_and_names_none(tmp_path):
    record = LastReadRecord(str(tmp_path / 'last-read.json'))
    key = book_key('lib', 3, 'epub', '')
    assert record.get(key) is None
    record.put(key, PLACE, NOW)
    assert record.get(key) == LastRead(NOW, PLACE)
    assert key == book_key('lib', 3, 'EPUB', '') != book_key('lib', 3, 'PDF', '') != book_key('', 0, '', '/b.epub')
    raw = (tmp_path / 'last-read.json').read_text()
    assert 'lib' not in raw and '/b.epub' not in raw
    assert os.stat(tmp_path / 'last-read.json').st_mode & 0o077 == 0
    record.put(key, 'epubcfi(' + 'x' * 3000 + ')')  # no CFI is that long: not kept
    assert record.get(key) == LastRead(NOW, PLACE)
    record.put(key, PLACE, NOW, began='epubcfi(/2/2)')
    assert record.get(key) == LastRead(NOW, PLACE, 'epubcfi(/2/2)')
    record.put(key, PLACE, NOW, began='javascript:alert(1)')  # not a place: not kept
    assert record.get(key) == LastRead(NOW, PLACE)


def test_the_record_is_bounded_the_longest_unseen_dropped(tmp_path):
    path = tmp_path / 'last-read.json'
    path.write_text(json.dumps({'kind': 'bookai-last-read', 'version': 1, 'books': {
        book_key('lib', i, 'EPUB', ''): {'seen': NOW + i, 'cfi': PLACE} for i in range(MAX_BOOKS)}}))
    record = LastReadRecord(str(path))
    record.put(book_key('lib', 9999, 'EPUB', ''), PLACE, NOW + 10_000)
    books = record.read()
    assert len(books) == MAX_BOOKS and book_key('lib', 0, 'EPUB', '') not in books
    assert path.stat().st_size < MAX_FILE_BYTES


def test_a_damaged_record_is_set_aside_and_a_new_one_begun(tmp_path):
    path = tmp_path / 'last-read.json'
    for damaged in (b'{"kind": "bookai-last-read", "version": 1, "books": {', b'[1, 2]', b'\xff\xfe',
                    json.dumps({'kind': 'bookai-last-read', 'version': 1, 'books': {
                        'k': {'seen': 'yesterday', 'cfi': PLACE}, 'j': {'seen': NOW, 'cfi': 'javascript:'},
                        'n': {'seen': float('inf'), 'cfi': PLACE}}}).encode()):
        path.write_bytes(damaged)
        record = LastReadRecord(str(path))
        assert record.get('k') is None and record.get('j') is None and record.get('n') is None
        record.put('k', PLACE, NOW)
        assert record.get('k') == LastRead(NOW, PLACE)
        if record.set_aside_as:  # what could not be read at all is kept beside it, never overwritten
            assert open(record.set_aside_as[0], 'rb').read() == damaged
        path.unlink()
    assert len(list(tmp_path.glob('*.damaged'))) == 3
