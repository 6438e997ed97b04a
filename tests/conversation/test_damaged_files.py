# License: GPLv3 Copyright: the Book AI developers
"""Damaged files: a saved conversation or a text cache file that cannot be read is set aside
(renamed *.damaged, its bytes intact), never deleted, never a crash; the History window says so
in words; the good files beside it are still listed; a damaged cache file means the book is
read again. (Permissions are no way to damage a file here: the tests run as root.)"""

import json
import os
import shutil

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.core.messages import Usage
from calibre_plugins.bookai.grounding.cache import TextCache
from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.books import quick_start_epub

LIBRARY = 'c3a1d9e2-6f0b-4c1e-9a57-0d6f2f1b7e11'


def saved(history, conv_id, question='How do I convert a book?', asked=1000.0):
    conv = Conversation([], LIBRARY, 'openai_compatible', 'tiny', conversation_id=conv_id)
    conv.turns.append(Turn(question, 'Like this.', model='tiny', finish_reason='stop', asked=asked,
                           usage=Usage(12, 3)))
    history.save(conv)
    return history.path(LIBRARY, conv_id)


def good_dict():
    d = Conversation([], LIBRARY, 'p', 'm', conversation_id='x').as_dict()
    d['turns'] = [{'question': 'q', 'answer': 'a', 'asked': 5.0, 'usage': {'input_tokens': 1}}]
    return d


def changed(**what):
    d = good_dict()
    for path, value in what.items():
        target = d
        *parents, last = path.split('__')
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        target[last] = value
    return json.dumps(d).encode()


DAMAGES = {
    'not JSON': b'{"id": "x", "books": [], "turns": [{"question": ',
    'empty': b'',
    'binary garbage': bytes(range(256)) * 8,
    'not UTF-8': json.dumps(good_dict()).encode().replace(b'"q"', b'"\xff\xfe"'),
    'a list': b'[1, 2, 3]',
    'null': b'null',
    'turns: 5': changed(turns=5),
    'books: "abc"': changed(books='abc'),
    'an answer that is a number': changed(turns__0__answer=5),
    'a model that is a dict': changed(model={'name': 'm'}),
    'tokens that are text': changed(turns__0__usage__input_tokens='many'),
    'a date that is text': changed(turns__0__asked='yesterday'),
    'no id': json.dumps({k: v for k, v in good_dict().items() if k != 'id'}).encode(),
}


@pytest.fixture
def history(tmp_path):
    return History(str(tmp_path / 'history'))


def test_the_damages_are_real_and_a_good_file_reads(history):
    path = saved(history, 'good')
    assert [s.id for s in history.summaries(LIBRARY)] == ['good'] and history.damaged == []
    with open(path, 'wb') as f:
        f.write(json.dumps(good_dict()).encode())
    assert Conversation.from_dict(good_dict()).turns[0].answer == 'a'
    assert history.load(LIBRARY, 'good').turns[0].answer == 'a'


@pytest.mark.parametrize('damage', DAMAGES)
def test_a_damaged_file_among_good_ones_is_set_aside_and_reported(history, damage):
    saved(history, 'first', asked=1000.0)
    saved(history, 'second', asked=2000.0)
    path = saved(history, 'damaged')
    with open(path, 'wb') as f:
        f.write(DAMAGES[damage])
    assert [s.id for s in history.summaries(LIBRARY)] == ['second', 'first']  # the good ones, still listed
    assert history.damaged == [path + '.damaged'] and not os.path.exists(path)
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == DAMAGES[damage]  # kept as it was
    history.damaged.clear()
    assert len(history.summaries(LIBRARY)) == 2 and history.damaged == []  # set aside once


@pytest.mark.parametrize('damage', DAMAGES)
def test_opening_a_damaged_file_says_so_and_keeps_it(history, damage):
    path = saved(history, 'conv')
    with open(path, 'wb') as f:
        f.write(DAMAGES[damage])
    with pytest.raises(ValueError) as e:
        history.load(LIBRARY, 'conv')
    assert str(e.value) == (f'The saved conversation in {path} could not be read. It was kept as '
                            f'{path}.damaged.')
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == DAMAGES[damage]
    assert history.load(LIBRARY, 'conv') is None  # gone from the list, not from the disk


def test_a_second_damage_never_overwrites_the_first(history):
    path = saved(history, 'conv')
    for garbage in (b'first damage', b'second damage', b'third damage'):
        with open(path, 'wb') as f:
            f.write(garbage)
        assert history.summaries(LIBRARY) == []
    assert history.damaged == [path + '.damaged', path + '.2.damaged', path + '.3.damaged']
    for kept, garbage in zip(history.damaged, (b'first damage', b'second damage', b'third damage')):
        with open(kept, 'rb') as f:
            assert f.read() == garbage


class Library:
    """What the History window uses of a library (conversation.library.BookLibrary)."""

    def __init__(self, history):
        self.history, self.library_id = history, LIBRARY


def test_the_history_window_says_in_words_what_was_set_aside(qapp, history, artifacts):
    from calibre_plugins.bookai.main_window.history_window import HistoryWindow
    saved(history, 'good')
    path = saved(history, 'damaged')
    with open(path, 'wb') as f:
        f.write(DAMAGES['binary garbage'])
    opened = []
    w = HistoryWindow(Library(history), opened.append)
    assert w.list.topLevelItemCount() == 1
    assert w.notice.text() == ('Some saved conversations could not be read. They were kept, set aside, as: '
                               f'{path}.damaged')
    assert w.grab().save(str(artifacts / 'history-damaged.png'))
    w.close()


def test_a_file_damaged_after_listing_says_so_when_opened(qapp, history):
    from calibre_plugins.bookai.main_window.history_window import HistoryWindow
    saved(history, 'good', asked=1000.0)
    path = saved(history, 'later', asked=2000.0)
    opened = []
    w = HistoryWindow(Library(history), opened.append)
    assert w.list.topLevelItemCount() == 2 and w.notice.text() == ''
    with open(path, 'wb') as f:
        f.write(b'{"turns": 5')  # damaged while the window is open
    w.list.topLevelItem(0).setSelected(True)  # the newest: 'later'
    w.open_button.click()
    assert opened == [] and w.list.topLevelItemCount() == 1
    assert w.notice.text() == (f'The saved conversation in {path} could not be read. It was kept as '
                               f'{path}.damaged.')
    w.list.topLevelItem(0).setSelected(True)
    w.open_button.click()
    assert [c.id for c in opened] == ['good']
    w.close()


# the text cache (tests/grounding/test_cache.py has garbage, a cut-short file and a pickle of
# something else; here: the header, a flipped bit, and one damaged file among good ones)

@pytest.fixture
def book_files(tmp_path):
    paths = []
    for n in (1, 2):
        path = tmp_path / 'library' / f'book{n}.epub'
        path.parent.mkdir(exist_ok=True)
        shutil.copy(quick_start_epub(), path)
        paths.append(path)
    return paths


class CountingReader:

    def __init__(self):
        self.read = []

    def __call__(self, path):
        self.read.append(os.path.basename(path))
        return read_epub(path)


def damage_header(data):
    header, _, rest = data.partition(b'\n')
    return header[:len(header) // 2] + b'\n' + rest


def flip_a_bit(data):
    header, _, rest = data.partition(b'\n')
    rest = bytearray(rest)
    rest[len(rest) // 2] ^= 0x10
    return header + b'\n' + bytes(rest)


@pytest.mark.parametrize('damage', [damage_header, flip_a_bit, lambda data: data.partition(b'\n')[0]],
                         ids=['header cut', 'a bit flipped', 'header only'])
def test_a_damaged_cache_file_among_good_ones(tmp_path, book_files, damage):
    cache, read = TextCache(tmp_path / 'cache'), CountingReader()
    first = [cache.text_of(LIBRARY, n, 'EPUB', p, read=read)[0] for n, p in enumerate(book_files, 1)]
    entry = cache.file_of(LIBRARY, 2, 'EPUB')
    with open(entry, 'rb') as f:
        bad = damage(f.read())
    with open(entry, 'wb') as f:
        f.write(bad)
    again = [cache.text_of(LIBRARY, n, 'EPUB', p, read=read)[0] for n, p in enumerate(book_files, 1)]
    assert read.read == ['book1.epub', 'book2.epub', 'book2.epub']  # only the damaged one is read again
    assert [b.paragraphs for b in again] == [b.paragraphs for b in first]
    with open(entry + '.damaged', 'rb') as f:
        assert f.read() == bad
    assert cache.get(LIBRARY, 2, 'EPUB', book_files[1]) is not None  # a good copy again
