# License: GPLv3 Copyright: the Book AI developers
"""Undo for covers, kept in Book AI's cache: several per book, newest last, at most five; pruned
by age and by total size; a damaged entry set aside (never overwritten) and skipped; a library
id from a hostile settings value never leads out of the folder."""

import os
import stat
import time

import pytest

from helpers.hang import within

LIB = '4f1c0c1e-8e43-4bd6-9b39-4a1e0c6a9d01'


@pytest.fixture
def undo(tmp_path):
    from calibre_plugins.bookai.covers.undo import CoverUndo
    return CoverUndo(str(tmp_path / 'undo'))


def files_under(root) -> list[str]:
    out = []
    for folder, _dirs, names in os.walk(root):
        out += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return sorted(out)


def test_kept_covers_come_back_newest_first(undo):
    assert undo.last(LIB, 7) is None and undo.books(LIB) == []
    before = time.time()
    undo.keep(LIB, 7, b'\xff\xd8first')
    undo.keep(LIB, 7, None)  # the book had no cover then
    undo.keep(LIB, 7, b'\xff\xd8third')
    undo.keep(LIB, 9, b'other book')
    kept = undo.last(LIB, 7)
    assert kept.data == b'\xff\xd8third' and before <= kept.when <= time.time()
    assert undo.books(LIB) == [7, 9] and undo.books('another-library') == []
    undo.pop(LIB, 7)
    assert undo.last(LIB, 7).data is None
    undo.pop(LIB, 7)
    assert undo.last(LIB, 7).data == b'\xff\xd8first'
    undo.pop(LIB, 7)
    assert undo.last(LIB, 7) is None and undo.books(LIB) == [9]
    undo.pop(LIB, 7)  # nothing left: nothing happens
    assert undo.last(LIB, 9).data == b'other book'


def test_entries_are_private_and_whole(undo):
    undo.keep(LIB, 1, b'cover bytes')
    (path,) = [os.path.join(undo.root, f) for f in files_under(undo.root)]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert path.startswith(os.path.join(undo.root, LIB, '1') + os.sep) and path.endswith('.cover')


def test_at_most_five_per_book(undo):
    for i in range(8):
        undo.keep(LIB, 3, b'cover %d' % i)
    assert len(undo.entries(LIB, 3)) == 5
    got = []
    while (kept := undo.last(LIB, 3)) is not None:
        got.append(kept.data)
        undo.pop(LIB, 3)
    assert got == [b'cover %d' % i for i in (7, 6, 5, 4, 3)]


def test_forget_takes_out_one_entry_by_name(undo):
    first = undo.keep(LIB, 2, b'one')
    second = undo.keep(LIB, 2, b'two')
    undo.forget(LIB, 2, second)
    assert undo.last(LIB, 2).data == b'one' and undo.last(LIB, 2).entry == first
    undo.forget(LIB, 2, '../../escape')  # not an entry's name: nothing happens
    assert undo.last(LIB, 2).data == b'one'


def test_prune_by_age(undo):
    undo.keep(LIB, 1, b'old')
    undo.keep(LIB, 2, b'new')
    (old_name,) = undo.entries(LIB, 1)
    folder = os.path.join(undo.root, LIB, '1')
    aged = f'{int((time.time() - 40 * 86400) * 1e9)}.cover'  # kept 40 days ago
    os.rename(os.path.join(folder, old_name), os.path.join(folder, aged))
    assert undo.last(LIB, 1).data == b'old'
    assert undo.prune(30) == 1
    assert undo.last(LIB, 1) is None and undo.books(LIB) == [2]
    assert not os.path.exists(folder)  # the empty folder goes too
    assert undo.prune(30) == 0 and undo.last(LIB, 2).data == b'new'
    assert undo.prune(0) == 1 and files_under(undo.root) == []


def test_prune_keeps_the_total_size_bound_oldest_first(undo, monkeypatch):
    from calibre_plugins.bookai.covers import undo as undo_module
    monkeypatch.setattr(undo_module, 'MAX_TOTAL_BYTES', 3500)
    for book in (1, 2, 3, 4):
        undo.keep(LIB, book, bytes([book]) * 1000)
    assert undo.prune(30) == 1  # four entries of ~1,100 bytes: the oldest goes
    assert undo.books(LIB) == [2, 3, 4]


def test_a_damaged_entry_is_set_aside_and_skipped(undo):
    undo.keep(LIB, 5, b'good old cover')
    name = undo.keep(LIB, 5, b'newer cover')
    path = os.path.join(undo.root, LIB, '5', name)
    with open(path, 'r+b') as f:  # one byte of the cover changed
        f.seek(-3, os.SEEK_END)
        f.write(b'X')
    assert undo.last(LIB, 5).data == b'good old cover'
    assert not os.path.exists(path) and os.path.exists(path + '.damaged')
    assert undo.prune(30) == 0 and os.path.exists(path + '.damaged')  # kept as long as an entry would be


@pytest.mark.parametrize('content', [b'', b'garbage', b'BOOKAI-COVER-UNDO 1 {not json\nxx',
                                     b'BOOKAI-COVER-UNDO 1 []\n', b'BOOKAI-COVER-UNDO 1 ' + b'{' * 5000,
                                     b'BOOKAI-COVER-UNDO 1 {"had_cover": true, "size": 99999999999, '
                                     b'"sha256": "00", "when": 1}\nabc',
                                     b'BOOKAI-COVER-UNDO 1 {"had_cover": false, "size": 3, "sha256": '
                                     b'"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "when": 1}\nabc',
                                     b'BOOKAI-COVER-UNDO 1 {"had_cover": true, "size": 1, "sha256": '
                                     b'"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "when": 1}\nabc',
                                     ])
def test_entries_that_are_not_whole_are_refused(undo, content):
    undo.keep(LIB, 6, b'older')
    folder = os.path.join(undo.root, LIB, '6')
    bad = os.path.join(folder, f'{time.time_ns() + 10 ** 9}.cover')
    with open(bad, 'wb') as f:
        f.write(content)
    assert undo.last(LIB, 6).data == b'older'
    assert os.path.exists(bad + '.damaged') and not os.path.exists(bad)
    # a second damaged entry of the same name is set aside beside the first, never over it
    with open(bad, 'wb') as f:
        f.write(content)
    undo.pop(LIB, 6)
    assert os.path.exists(bad + '.2.damaged') and undo.last(LIB, 6) is None


@pytest.mark.parametrize('hostile', ['../../escape', '/etc', '..', '.', 'a/b', 'x\x00y', '', 'C:\\Windows',
                                     'ü' * 10, 'a' * 500, '-rf'])
def test_a_hostile_library_id_stays_inside(undo, hostile, tmp_path):
    undo.keep(hostile, 1, b'cover')
    assert undo.last(hostile, 1).data == b'cover'
    assert undo.books(hostile) == [1]
    root = os.path.realpath(undo.root)
    for path in files_under(tmp_path):
        full = os.path.realpath(os.path.join(tmp_path, path))
        assert full.startswith(root + os.sep), path
    (name,) = os.listdir(undo.root)
    assert '/' not in name and name not in ('.', '..')
    assert undo.last('other', 1) is None  # another library sees nothing of it


@pytest.mark.parametrize('book_id', [0, -1, True, 1.5, '3', '../3', 2 ** 64])
def test_book_ids_must_be_ids(undo, book_id):
    with pytest.raises(ValueError):
        undo.keep(LIB, book_id, b'x')
    assert not os.path.exists(undo.root) or files_under(undo.root) == []


def test_a_cover_too_large_to_keep_is_refused_in_words(undo, monkeypatch):
    from calibre_plugins.bookai.covers import undo as undo_module
    monkeypatch.setattr(undo_module, 'MAX_ENTRY_BYTES', 100)
    with pytest.raises(undo_module.UndoNotKept) as e:
        undo.keep(LIB, 1, b'x' * 101)
    assert 'not replaced' in str(e.value)
    assert undo.last(LIB, 1) is None


def test_a_cache_that_cannot_be_written_is_told_in_words(tmp_path):
    from calibre_plugins.bookai.covers.undo import CoverUndo, UndoNotKept
    blocker = tmp_path / 'file'
    blocker.write_text('a file where the folder would be')
    with pytest.raises(UndoNotKept) as e:
        CoverUndo(str(blocker)).keep(LIB, 1, b'x')
    assert 'could not be kept for Undo' in str(e.value)


@pytest.mark.real_cover_cache
def test_the_default_root_is_in_calibres_cache():
    from calibre.constants import cache_dir
    from calibre_plugins.bookai.covers.undo import CoverUndo
    assert CoverUndo().root == os.path.join(cache_dir(), 'bookai', 'covers-undo')


@pytest.mark.parametrize('kind', ['fifo', 'link to a fifo', 'link to a device', 'folder'])
def test_what_is_not_a_file_in_an_entrys_place_is_set_aside_at_once(undo, kind, tmp_path):
    """Issue 26: a FIFO as the newest Undo entry hung cover --undo (a plain open() waits for a writer).
    Only regular files are opened, without waiting: what else is there is set aside, never opened."""
    undo.keep(LIB, 4, b'the cover before')
    folder = os.path.join(undo.root, LIB, '4')
    newest = os.path.join(folder, f'{time.time_ns() + 10 ** 9}.cover')
    if kind == 'fifo':
        os.mkfifo(newest)
    elif kind == 'link to a fifo':
        os.mkfifo(tmp_path / 'pipe')
        os.symlink(tmp_path / 'pipe', newest)
    elif kind == 'link to a device':
        os.symlink('/dev/zero', newest)
    else:
        os.mkdir(newest)
    kept = within(30, lambda: undo.last(LIB, 4))
    assert kept is not None and kept.data == b'the cover before'
    assert not os.path.lexists(newest) and os.path.lexists(newest + '.damaged')  # set aside, not removed
    if kind != 'folder':
        assert not stat.S_ISREG(os.lstat(newest + '.damaged').st_mode)


def test_a_fifo_alone_means_nothing_to_undo(undo):
    folder = os.path.join(undo.root, LIB, '8')
    os.makedirs(folder)
    os.mkfifo(os.path.join(folder, f'{time.time_ns()}.cover'))
    assert within(30, lambda: undo.last(LIB, 8)) is None
    assert undo.books(LIB) == []
