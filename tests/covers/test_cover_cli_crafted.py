# License: GPLv3 Copyright: the Book AI developers
"""Issue 26 on the command line, in a calibre of its own with a real library, against an
OpenAI-compatible server that sends the crafted images: `cover --apply` with a PNG whose pixel data
is damaged (89 bytes: a traceback and a cover.jpg of 0 bytes before), a PNG of 8192x8192, a PNG
carrying 28 GB of zeros, a progressive JPEG of 100,000 scans, a plain progressive CMYK JPEG of
8192x8192: each ends in one sentence and exit 4, the old cover's bytes where they were, nothing to
undo; then a good one is applied and undone. And a FIFO as the newest Undo entry: `cover --undo`
ends in a sentence (it hung before), putting back the entry before it."""

import hashlib
import json
import os
import time

import pytest

from helpers.books import quick_start_epub
from helpers.images import images_answer, jpeg_progressive, png, png_bomb, png_damaged, png_of_side
from helpers.scripted_server import Reply, ScriptedServer

CRAFTED = {
    'damaged pixel data (89 bytes)': (png_damaged, 'is damaged (its pixel data cannot be unpacked)'),
    '8192x8192 PNG': (lambda: png_of_side(8192, 8192), 'has 8192x8192 pixels'),
    '28 GB of zeros in 29 MB': (png_bomb, 'holds far more data than its 64x64 pixels need'),
    '100,000 scans': (lambda: jpeg_progressive(8192, 8192, 3, 100_000), 'has 8192x8192 pixels'),
    'progressive CMYK 8192x8192': (lambda: jpeg_progressive(8192, 8192, 4), 'has 8192x8192 pixels'),
}


def reply(data: bytes) -> Reply:
    return Reply(200, json.dumps(images_answer(data)).encode(), headers=[('Content-Type', 'application/json')])


def cover_of(sandbox, lib) -> str:
    """The book's cover as calibre has it: its SHA-256, or 'none'."""
    r = sandbox.debug('import hashlib; from calibre.library import db; c = db({!r}).new_api.cover(1); '
                      'print(hashlib.sha256(c).hexdigest() if c else "none")'.format(str(lib)))
    assert r.returncode == 0, r
    return r.stdout.strip().splitlines()[-1]


def cover_jpg(lib) -> bytes:
    """The first book's cover.jpg, as it is on disk."""
    for folder, _dirs, names in os.walk(lib):
        if 'cover.jpg' in names:
            with open(os.path.join(folder, 'cover.jpg'), 'rb') as f:
                return f.read()
    return b''


def test_crafted_images_end_in_a_sentence_and_the_old_cover_stays(cli, sandbox):
    lib = sandbox.make_library(quick_start_epub())
    original, original_file = cover_of(sandbox, lib), cover_jpg(lib)
    assert original != 'none' and hashlib.sha256(original_file).hexdigest() == original
    names = sorted(CRAFTED)
    with ScriptedServer([reply(CRAFTED[n][0]()) for n in names] + [reply(png(60, 90, 0x70))]) as server:
        r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'image_model=sd-turbo')
        assert r.returncode == 0, r
        for name in names:
            r = cli('cover', '--library', lib, '1', '--apply', '--provider', 'openai_compatible')
            words = CRAFTED[name][1]
            assert r.returncode == 4, (name, r)
            assert r.stderr.strip().startswith('The image OpenAI compatible sent ') and words in r.stderr, (name, r)
            assert 'Traceback' not in r.stderr and r.stdout == '', (name, r)
            assert cover_of(sandbox, lib) == original and cover_jpg(lib) == original_file, name
        r = cli('cover', '--library', lib, '1', '--undo')
        assert r.returncode == 5 and 'could put back' in r.stderr, r  # nothing was replaced
        # a good one goes in (as Book AI's own JPEG), and Undo puts the original back, byte for byte
        r = cli('cover', '--library', lib, '1', '--apply', '--provider', 'openai_compatible')
        assert r.returncode == 0 and 'cover --undo' in r.stdout, r
        replaced = cover_jpg(lib)
        assert replaced[:2] == b'\xff\xd8' and cover_of(sandbox, lib) not in (original, 'none')
    r = cli('cover', '--library', lib, '1', '--undo')
    assert r.returncode == 0 and 'is back' in r.stdout, r
    assert cover_of(sandbox, lib) == original and cover_jpg(lib) == original_file


def undo_folder(sandbox) -> str:
    """The one book's folder of covers kept for Undo in the sandbox's calibre cache."""
    root = sandbox.cache / 'bookai' / 'covers-undo'
    (library,) = os.listdir(root)
    return str(root / library / '1')


@pytest.mark.parametrize('kind', ['fifo', 'link to a fifo'])
def test_a_fifo_as_the_newest_undo_entry_ends_in_a_sentence(cli, sandbox, tmp_path, kind):
    lib = sandbox.make_library(quick_start_epub())
    original = cover_of(sandbox, lib)
    with ScriptedServer([reply(png(40, 60, 0x30))]) as server:
        assert cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'image_model=m').returncode == 0
        assert cli('cover', '--library', lib, '1', '--apply', '--provider', 'openai_compatible').returncode == 0
    folder = undo_folder(sandbox)
    fifo = os.path.join(folder, f'{time.time_ns() + 10 ** 9}.cover')  # newer than the real entry
    if kind == 'fifo':
        os.mkfifo(fifo)
    else:
        os.mkfifo(tmp_path / 'pipe')
        os.symlink(tmp_path / 'pipe', fifo)
    r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'cover', '--library', str(lib), '1', '--undo'],
                    timeout=120)  # hung for ever before
    assert r.returncode == 0 and 'The cover book 1 had before is back.' in r.stdout, r
    assert cover_of(sandbox, lib) == original
    assert os.path.lexists(fifo + '.damaged') and not os.path.lexists(fifo)  # set aside, never opened
    r = cli('cover', '--library', lib, '1', '--undo')
    assert r.returncode == 5 and 'could put back' in r.stderr and 'Traceback' not in r.stderr, r
