# License: GPLv3 Copyright: the Book AI developers
"""The SSE and NDJSON decoders, against the rules of the event-stream format."""

import pytest

from calibre_plugins.bookai.core.streams import NDJSONDecoder, SSEDecoder, SSEEvent


def decode(data, sizes=None):
    """All events of data, fed whole or in pieces of the given sizes (repeating)."""
    d = SSEDecoder()
    events, i, k = [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)] if sizes else len(data)
        events += d.feed(data[i:i + n])
        i, k = i + n, k + 1
    return events + d.close()


def test_a_simple_event():
    assert decode(b'data: hello\n\n') == [SSEEvent('message', 'hello')]


def test_event_name_multiline_data_and_id():
    stream = b'event: delta\nid: 7\ndata: one\ndata:two\ndata\n\n'
    assert decode(stream) == [SSEEvent('delta', 'one\ntwo\n', '7')]


def test_id_is_kept_for_later_events_and_nul_ids_are_ignored():
    events = decode(b'id: a\ndata: 1\n\ndata: 2\n\nid: b\x00c\ndata: 3\n\nid\ndata: 4\n\n')
    assert [e.id for e in events] == ['a', 'a', 'a', '']


def test_retry_takes_digits_only():
    events = decode(b'retry: 1500\ndata: x\n\nretry: 15s\ndata: y\n\n')
    assert [e.retry for e in events] == [1500, 1500]


def test_comments_and_unknown_fields_are_ignored():
    assert decode(b': keep-alive\nfoo: bar\ndata: x\n:another\n\n') == [SSEEvent('message', 'x')]


def test_an_event_without_data_is_not_dispatched():
    assert decode(b'event: ping\n\n: comment\n\ndata: x\n\n') == [SSEEvent('message', 'x')]


@pytest.mark.parametrize('eol', [b'\n', b'\r\n', b'\r'])
def test_every_line_ending(eol):
    stream = eol.join([b'event: e', b'data: a', b'data: b', b'', b'data: c', b'', b''])
    assert decode(stream) == [SSEEvent('e', 'a\nb'), SSEEvent('message', 'c')]


def test_cr_and_lf_in_different_reads_are_one_line_end():
    stream = b'data: a\r\n\r\ndata: b\r\n\r\n'
    whole = decode(stream)
    assert whole == [SSEEvent('message', 'a'), SSEEvent('message', 'b')]
    for size in range(1, len(stream) + 1):
        assert decode(stream, [size]) == whole


def test_a_character_split_across_reads():
    stream = 'data: Grüße, 世界 🙂\n\n'.encode('utf-8')
    for size in (1, 2, 3):
        assert decode(stream, [size]) == [SSEEvent('message', 'Grüße, 世界 🙂')]


def test_a_leading_bom_is_dropped_once():
    assert decode(b'\xef\xbb\xbfdata: x\n\n') == [SSEEvent('message', 'x')]
    assert decode(b'\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n') == []  # the second BOM makes an unknown field


def test_an_unfinished_event_at_the_end_is_dropped():
    assert decode(b'data: complete\n\ndata: cut off') == [SSEEvent('message', 'complete')]
    assert decode(b'data: cut off\n') == []


def test_only_one_space_after_the_colon_is_removed():
    assert decode(b'data:  two spaces\n\n') == [SSEEvent('message', ' two spaces')]


def test_other_unicode_line_breaks_are_data():
    # str.splitlines() would split on these; the event-stream format does not
    assert decode('data: a\u2028b\x0bc\x1cd\n\n'.encode()) == [SSEEvent('message', 'a\u2028b\x0bc\x1cd')]


def test_invalid_utf8_becomes_replacement_characters():
    assert decode(b'data: \xff\xfe ok\n\n') == [SSEEvent('message', '\ufffd\ufffd ok')]


def test_pieces_of_any_size_give_the_same_events():
    stream = (b'event: message_start\ndata: {"a": 1}\n\n: ping\r\n\r\nid: 9\r\ndata: {"b":\r\ndata: 2}\r\n\r\n'
              + 'data: é\n\n'.encode())
    whole = decode(stream)
    assert len(whole) == 3
    for sizes in ([1], [2], [3, 5], [7, 1, 2]):
        assert decode(stream, sizes) == whole


def ndjson(data, size=None):
    d = NDJSONDecoder()
    out = []
    for i in range(0, len(data), size or len(data)):
        out += d.feed(data[i:i + (size or len(data))])
    return out + d.close()


def test_ndjson_lines_in_any_pieces():
    data = b'{"a": 1}\n\n{"b": "\xc3\xa9"}\r\n{"c": [1, 2]}'
    expected = [{'a': 1}, {'b': 'é'}, {'c': [1, 2]}]
    for size in (None, 1, 2, 5):
        assert ndjson(data, size) == expected


def test_ndjson_rejects_a_line_that_is_not_json():
    with pytest.raises(ValueError, match='not a JSON line'):
        ndjson(b'{"a": 1}\n<html>oops</html>\n')
