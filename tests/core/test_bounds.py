# License: GPLv3 Copyright: the Book AI developers
"""The bounds of core.limits where they are applied in core: the line splitter's length limit
and linear time, and the bounded JSON loader (issue 15, finding 2; its bound on values, issue 26,
finding 7, is in test_json_structure.py)."""

import json
import time

import pytest

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.streams import LineSplitter, NDJSONDecoder, SSEDecoder, SSEEvent

MB = 1024 * 1024


def split_one_line(size, read=64 * 1024):
    splitter = LineSplitter(max_chars=size + 10)
    piece = b'x' * read
    start = time.perf_counter()
    for _ in range(size // read):
        assert splitter.feed(piece) == []
    lines = splitter.feed(b'\n')
    elapsed = time.perf_counter() - start
    assert len(lines) == 1 and len(lines[0]) == size // read * read
    return elapsed


def test_a_long_line_takes_linear_time():
    small = min(split_one_line(10 * MB) for _ in range(2))
    large = split_one_line(40 * MB)
    # linear: about 4 times as long; the previous code took 12 times as long (quadratic)
    assert large < 8 * small + 0.5, (small, large)


def test_a_line_longer_than_the_limit_raises_in_words():
    splitter = LineSplitter(max_chars=1000)
    splitter.feed(b'data: ' + b'x' * 900)
    with pytest.raises(limits.LineTooLong) as e:
        splitter.feed(b'y' * 200)
    assert 'a line longer than 1000 characters' in str(e.value)
    with pytest.raises(limits.LineTooLong):  # in a single read too
        LineSplitter(max_chars=1000).feed(b'a\n' + b'z' * 2000 + b'\nb\n')
    assert LineSplitter(max_chars=1000).feed(b'a\n' + b'z' * 1000 + b'\nb\n') == ['a', 'z' * 1000, 'b']


def test_the_default_line_limit_is_the_named_one(monkeypatch):
    monkeypatch.setattr(limits, 'MAX_LINE_CHARS', 50)
    d = SSEDecoder()
    assert d.feed(b'data: short\n\n') == [SSEEvent('message', 'short')]
    with pytest.raises(limits.LineTooLong):
        d.feed(b'data: ' + b'x' * 60)


@pytest.mark.parametrize('size', [1, 2, 3, 7])
def test_line_ends_split_across_reads_in_every_way(size):
    stream = b'\xef\xbb\xbfa\r\nb\rc\n\r\n\rd\r\r\ne\xc3\xa9\r'
    splitter = LineSplitter()
    lines = []
    for i in range(0, len(stream), size):
        lines += splitter.feed(stream[i:i + size])
    lines += splitter.close()
    assert lines == ['a', 'b', 'c', '', '', 'd', '', 'e\xe9']


def test_deep_json_is_refused_in_linear_time_without_recursion():
    for depth in (limits.MAX_JSON_DEPTH + 1, 100_000, 1_000_000):
        for text in ('[' * depth + ']' * depth, '{"a":' * depth + '1' + '}' * depth):
            with pytest.raises(limits.TooDeep):
                limits.load_json(text)
            with pytest.raises(limits.TooDeep):
                limits.load_json(text.encode())
    with pytest.raises(limits.TooDeep):  # said as too deep, though it holds too many values too
        limits.load_json('[' * 10 * MB)
    with pytest.raises(limits.TooDeep):
        limits.load_json(b'{"a": "' + b']' * MB + b'", "b": ' + b'[' * 200 + b']' * 200 + b'}')


def test_json_within_the_limit_is_read_and_brackets_in_strings_do_not_count():
    depth = limits.MAX_JSON_DEPTH
    nested = '[' * depth + ']' * depth
    assert limits.load_json(nested) == json.loads(nested)
    brackets = json.dumps({'text': '[' * 10_000 + '{' * 10_000 + '\\"[' * 500, 'list': [[1], [2]] * 1000})
    assert limits.load_json(brackets) == json.loads(brackets)
    assert limits.load_json(brackets.encode()) == json.loads(brackets)
    with pytest.raises(ValueError):
        limits.load_json('{"a": [1, 2')


def test_ndjson_that_nests_too_deep_raises_too_deep():
    d = NDJSONDecoder()
    assert d.feed(b'{"a": 1}\n') == [{'a': 1}]
    with pytest.raises(limits.TooDeep):
        d.feed(b'[' * 100_000 + b']' * 100_000 + b'\n')
