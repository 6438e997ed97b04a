# License: GPLv3 Copyright: the Book AI developers
"""The books' vectors kept in a file (library_search/vectors.py VectorFiles): read back as they
were written; a file of another model or dimension not used but kept; a damaged, cut short,
oversized, other-kind or other-version file, or something that is not a regular file, set aside
(its bytes intact) and taken as absent, never written over; nothing in a file ever run."""

import hashlib
import json
import os
import pickle
import socket
import stat

import pytest

from calibre_plugins.bookai.library_search import vectors as V
from calibre_plugins.bookai.library_search.vectors import BookVectors, Stamp, VectorFiles

MODEL = 'openai_compatible/nomic-embed'


def good_index(dim=4):
    index = BookVectors(dim, MODEL)
    for book_id in (3, 1, 70, 2 ** 40):
        v = [((book_id * (d + 3)) % 7) - 3 for d in range(dim)]
        index.put(book_id, v if any(v) else [1] * dim, Stamp(1_700_000_000.5 + book_id % 1000, f'{book_id:032x}'))
    index.put(9, [0.5] * dim)  # no stamp
    return index


@pytest.fixture
def files(tmp_path):
    return VectorFiles(str(tmp_path / 'library-vectors'))


def written(files, index=None):
    files.write('lib', index or good_index())
    return files.file_of('lib')


def repacked(header_changes=None, body=None, index=None):
    """A file whose digest is right for its body: only the reader's checks of its values stop it."""
    data = (index or good_index()).to_bytes()
    head, _nl, old_body = data[len(V.MAGIC):].partition(b'\n')
    header = json.loads(head)
    body = old_body if body is None else body
    header['sha256'] = hashlib.sha256(body).hexdigest()
    header.update(header_changes or {})
    return V.MAGIC + json.dumps(header).encode() + b'\n' + body


def test_an_index_read_back_as_it_was_written(files):
    index = good_index(16)
    path = written(files, index)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(files.folder).st_mode) == 0o700
    assert os.listdir(files.folder) == ['lib.vectors']  # no half-written file left beside it
    back = files.read('lib', MODEL, 16)
    assert back is not None and files.set_aside_as == []
    assert (back.model, back.dim, sorted(back.book_ids())) == (MODEL, 16, sorted(index.book_ids()))
    for book_id in index.book_ids():
        assert back.stamp(book_id) == index.stamp(book_id)
        assert back.vector(book_id) == index.vector(book_id)
    assert back.stamp(9) == Stamp(0.0, '')
    for q in ([1] * 16, list(range(16)), [(-1) ** d for d in range(16)]):
        assert back.search(q, 3) == index.search(q, 3)
    assert back.signatures == index.signatures  # made again as they were made
    assert back.to_bytes() == index.to_bytes()
    header = json.loads(open(path, 'rb').read()[len(V.MAGIC):].split(b'\n')[0])
    assert {k: header[k] for k in ('kind', 'version', 'model', 'dimension', 'count')} == {
        'kind': 'bookai-library-vectors', 'version': 1, 'model': MODEL, 'dimension': 16, 'count': 5}
    empty = BookVectors(8, MODEL)
    files.write('other', empty)
    assert len(files.read('other')) == 0


def test_an_index_replaced_by_an_update(files):
    written(files)
    index = files.read('lib')
    index.remove(3)
    index.put(12, [1, 2, 3, 4], Stamp(5.0, 'f' * 32))
    files.write('lib', index)
    again = files.read('lib')
    assert sorted(again.book_ids()) == sorted([1, 70, 2 ** 40, 9, 12]) and again.stamp(12) == Stamp(5.0, 'f' * 32)
    assert sorted(os.listdir(files.folder)) == ['lib.vectors']
    assert files.remove('lib') and not files.remove('lib') and files.read('lib') is None


def test_none_when_there_is_none_or_it_is_of_another_model(files):
    assert files.read('lib') is None
    path = written(files)
    data = open(path, 'rb').read()
    assert files.read('lib', 'another/model') is None
    assert files.read('lib', MODEL, 8) is None
    assert files.set_aside_as == [] and open(path, 'rb').read() == data  # a good file: kept, not set aside
    assert files.read('lib', MODEL, 4) is not None


def damages() -> dict:
    good = good_index().to_bytes()
    head_end = good.index(b'\n', len(V.MAGIC))
    out = {
        'empty': b'', 'magic only': V.MAGIC, 'NUL bytes': bytes(64), 'not UTF-8': b'\xff\xfe' + good[2:],
        'another file': b'{"kind": "bookai-library-vectors", "version": 1}',
        'a pickle': pickle.dumps({'model': MODEL, 'vectors': [[1.0, 0.0]]}),
        'trailing bytes': good + b'\0',
        'header not JSON': V.MAGIC + b'{"kind": \n' + good[head_end + 1:],
        'header without end': V.MAGIC + b' ' * (V.MAX_HEADER_BYTES + 10) + b'\n',
        'deep header': V.MAGIC + b'[' * 100_000 + b'\n',
        'header a list': V.MAGIC + b'[1, 2]\n',
        'another version': repacked({'version': 2}),
        'another kind': repacked({'kind': 'bookai-summaries'}),
        'no digest': repacked({'sha256': None}),
        'a model that is no name': repacked({'model': ['x']}),
        'a model too long': repacked({'model': 'm' * (V.MAX_MODEL_CHARS + 1)}),
        'no dimension': repacked({'dimension': 0}),
        'a dimension too large': repacked({'dimension': V.MAX_DIMENSION + 1}),
        'a dimension as text': repacked({'dimension': '4'}),
        'a count too large': repacked({'count': V.MAX_BOOKS + 1}),
        'a negative count': repacked({'count': -1}),
        'a count that is not the books': repacked({'count': 4}),
        'a NaN count': repacked({'count': float('nan')}),
    }
    for cut in (1, len(V.MAGIC), head_end, head_end + 1, head_end + 9, len(good) // 2, len(good) - 1):
        out[f'cut short at {cut}'] = good[:cut]
    for at in (len(V.MAGIC) + 3, head_end - 5, head_end + 1, head_end + 40, head_end + 100, len(good) - 1):
        flipped = bytearray(good)
        flipped[at] ^= 0x41
        out[f'a byte changed at {at}'] = bytes(flipped)
    for where, value in (('ids', -5), ('ids', 0), ('scales', float('nan')), ('scales', float('inf')),
                         ('scales', 0.0), ('scales', 2.0), ('modified', float('nan')), ('modified', -1.0),
                         ('modified', 1e300)):
        index = good_index()
        getattr(index, where)[1] = value
        out[f'{where} holding {value}'] = index.to_bytes()  # its digest right
    index = good_index()
    index.ids[1] = index.ids[0]
    out['an id twice'] = index.to_bytes()
    return out


DAMAGES = damages()


@pytest.mark.parametrize('damage', DAMAGES)
def test_a_damaged_file_is_set_aside_and_taken_as_absent(files, damage):
    path = files.file_of('lib')
    os.makedirs(files.folder, exist_ok=True)
    with open(path, 'wb') as f:
        f.write(DAMAGES[damage])
    with pytest.raises(ValueError):  # the damage is real: the reader's checks stop it
        BookVectors.from_bytes(DAMAGES[damage])
    assert files.read('lib') is None
    assert files.set_aside_as == [path + '.damaged'] and not os.path.exists(path)
    assert open(path + '.damaged', 'rb').read() == DAMAGES[damage]  # kept as it was
    files.write('lib', good_index())  # made again: a new file, the damaged one kept
    assert files.read('lib') is not None and open(path + '.damaged', 'rb').read() == DAMAGES[damage]


def test_a_damaged_file_not_read_first_is_still_never_written_over(files):
    path = written(files)
    with open(path, 'r+b') as f:
        f.seek(-3, os.SEEK_END)
        f.write(b'xyz')
    damaged = open(path, 'rb').read()
    VectorFiles(files.folder).write('lib', good_index(8))  # a writer that never read it
    assert open(path + '.damaged', 'rb').read() == damaged and files.read('lib', dim=8) is not None
    files.write('lib', good_index(8))  # a good file is replaced in one step, nothing set aside
    assert sorted(os.listdir(files.folder)) == ['lib.vectors', 'lib.vectors.damaged']


def test_a_file_read_whole_then_damaged_is_set_aside_when_written(files):
    path = written(files)
    assert files.read('lib') is not None
    with open(path, 'r+b') as f:  # the same size, in place
        f.seek(-3, os.SEEK_END)
        f.write(b'xyz')
    os.utime(path, ns=(1, 1))
    damaged = open(path, 'rb').read()
    files.write('lib', good_index(8))
    assert open(path + '.damaged', 'rb').read() == damaged and files.read('lib', dim=8) is not None


def test_one_set_aside_before_is_never_written_over(files):
    path = files.file_of('lib')
    os.makedirs(files.folder)
    for n, data in enumerate((b'first', b'second', b'third')):
        with open(path, 'wb') as f:
            f.write(data)
        assert files.read('lib') is None
    assert open(path + '.damaged', 'rb').read() == b'first'
    assert open(path + '.2.damaged', 'rb').read() == b'second'
    assert open(path + '.3.damaged', 'rb').read() == b'third'


def test_an_oversized_file_is_set_aside_unread(files, monkeypatch):
    path = written(files)
    good = open(path, 'rb').read()
    monkeypatch.setattr(V, 'MAX_FILE_BYTES', len(good) - 1)
    assert files.read('lib') is None and open(path + '.damaged', 'rb').read() == good
    monkeypatch.setattr(V, 'MAX_FILE_BYTES', 1 << 30)
    with open(path, 'wb') as f:
        f.truncate((1 << 30) + 1)  # sparse: takes no room, and is never read
    assert files.read('lib') is None and os.path.getsize(path + '.2.damaged') == (1 << 30) + 1


@pytest.mark.parametrize('kind', ['fifo', 'folder', 'device', 'socket', 'symlink to a FIFO', 'dangling symlink'])
def test_what_is_not_a_regular_file_is_set_aside_never_waited_on(files, kind):
    path = files.file_of('lib')
    os.makedirs(files.folder)
    if kind == 'fifo':
        os.mkfifo(path)
    elif kind == 'folder':
        os.mkdir(path)
    elif kind == 'device':
        os.symlink('/dev/zero', path)
    elif kind == 'socket':
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
    elif kind == 'symlink to a FIFO':
        os.mkfifo(path + '.target')
        os.symlink(path + '.target', path)
    else:
        os.symlink(path + '.nowhere', path)
    assert files.read('lib') is None  # returns: a FIFO with no writer is not opened for reading blocked
    if kind != 'dangling symlink':  # one that points nowhere is no file: absent
        assert files.set_aside_as == [path + '.damaged'] and os.path.lexists(path + '.damaged')
    files.write('lib', good_index())
    assert files.read('lib') is not None


def test_nothing_in_a_file_is_ever_run(files, tmp_path):
    ran = tmp_path / 'ran'

    class Payload:
        def __reduce__(self):
            return (open, (str(ran), 'w'))
    body = pickle.dumps(Payload())
    path = files.file_of('lib')
    os.makedirs(files.folder)
    with open(path, 'wb') as f:
        f.write(repacked({'count': 1, 'dimension': len(body) - V.PER_BOOK_BYTES}, body))
    assert files.read('lib') is None and not ran.exists()
