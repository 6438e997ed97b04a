# License: GPLv3 Copyright: the Book AI developers
"""Book AI decodes every image itself, in calibre's worker process (core.images.decode_images
through core.isolated.run and gui/image_decoding.py), never in calibre's: what comes back is its
own baseline JPEG within calibre's largest cover size, and RGB rows at most the size asked for;
a worker past its time or its memory is stopped, and that is said in words; an image that cannot
be decoded costs only itself, never the others decoded with it; a file that is not a regular file
is never opened to wait on."""

import os
import threading

import pytest

from calibre_plugins.bookai.core import images, isolated
from calibre_plugins.bookai.core.images import Decoded, checked_result, decode_images, structure
from helpers.hang import within
from helpers.images import PNG_SIGNATURE, chunk, gif, ihdr, jpeg_progressive, png, png_damaged
from helpers.memory import MB, peak_growth


def rgba_png(width: int, height: int) -> bytes:
    """A PNG whose every pixel is fully transparent red."""
    import zlib
    rows = b''.join(b'\x00' + b'\xff\x00\x00\x00' * width for _ in range(height))
    return PNG_SIGNATURE + ihdr(width, height, colour=6) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')


def test_a_cover_and_its_thumbnail_are_book_ais_own():
    (d,) = decode_images([png(300, 450, 0x40)], ['The new cover'], cover=True, side=120)
    assert d.ok and (d.width, d.height) == (300, 450)
    found = structure(d.jpeg, 'It')
    assert (found.mime, found.width, found.height, found.progressive) == ('image/jpeg', 300, 450, False)
    p = d.pixels
    assert (p.width, p.height) == (80, 120) and p.stride >= 240 and len(p.data) >= p.stride * p.height
    grey = p.data[:3]
    assert grey[0] == grey[1] == grey[2] and abs(grey[0] - 0x40) <= 2  # the picture's own grey


def test_every_kind_is_decoded_and_progressive_becomes_baseline():
    sources = [png(20, 30), jpeg_progressive(64, 48, 3), jpeg_progressive(40, 40, 4), gif(16, 24, 3),
               open(P('catalog/DefaultCover.jpg'), 'rb').read()]
    got = decode_images(sources, ['It'] * len(sources), cover=True, side=32)
    for d, size in zip(got, [(20, 30), (64, 48), (40, 40), (16, 24), (510, 680)]):
        assert d.ok, d.problem
        assert (d.width, d.height) == size and not structure(d.jpeg, 'It').progressive


def test_transparency_is_laid_on_white():
    (d,) = decode_images([rgba_png(10, 10)], ['It'], cover=True, side=10)
    assert d.ok and d.pixels.data[:3] == b'\xff\xff\xff'


def test_a_large_cover_is_made_to_fit_calibres_largest():
    from helpers.images import png_of_side
    (d,) = decode_images([png_of_side(5000, 4000)], ['It'], cover=True)
    box = images.cover_box()
    assert d.ok and d.width <= box[0] and d.height <= box[1] and max(d.width / box[0], d.height / box[1]) > 0.99
    assert d.pixels is None  # none asked for


def test_one_bad_image_costs_only_itself():
    sources = [png(8, 8), png_damaged(), None, b'<svg/>', png(9, 9), jpeg_progressive(64, 64, 1, 200)]
    names = [f'Image {i}' for i in range(len(sources))]
    got = decode_images(sources, names, cover=False, side=16)
    assert got[0].ok and got[4].ok and (got[4].pixels.width, got[4].pixels.height) == (9, 9)
    assert got[1].problem == 'Image 1 is damaged (its pixel data cannot be unpacked); Book AI does not use it.'
    assert got[2] is None  # no image: nothing to say
    assert got[3].problem == 'Image 3 is not an image Book AI can read (PNG, JPEG, WebP or GIF).'
    assert got[5].problem.startswith('Image 5 is a JPEG of more than 100 scans')


def test_a_file_that_is_not_a_regular_file_is_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / 'pipe')
    (tmp_path / 'cover.png').write_bytes(png(5, 5))
    got = within(60, lambda: decode_images([str(tmp_path / 'pipe'), str(tmp_path / 'none.png'),
                                            str(tmp_path / 'cover.png'), str(tmp_path)],
                                           ['A', 'B', 'C', 'D'], cover=False, side=8))
    assert got[0].problem == 'A is not a file (a pipe, a device or a folder is in its place).'
    assert got[1].problem == 'B could not be read: No such file or directory'
    assert got[2].ok
    assert got[3].problem in ('D is not a file (a pipe, a device or a folder is in its place).',
                              'D could not be read: Is a directory')


def test_stopped_before_it_starts():
    stop = threading.Event()
    stop.set()
    (d,) = decode_images([png(5, 5)], ['It'], cover=True, abort=stop)
    assert d.problem == 'It was not decoded: stopped.'


def test_a_bomb_costs_this_process_nothing_and_no_worker():
    from helpers.images import png_bomb
    bomb = png_bomb()
    started = []
    outcome, grew = peak_growth(lambda: decode_images([bomb], ['The new cover'], cover=True, side=180,
                                                      started=started.append))
    (d,) = outcome
    assert 'holds far more data than its 64x64 pixels need (a decompression bomb)' in d.problem
    assert started == [] and grew < 64 * MB  # refused here, before any decoder


def test_the_worker_is_stopped_past_its_time():
    with pytest.raises(isolated.Refused) as e:
        isolated.run('core.isolated', 'exercise', (60, 1), 1)
    assert str(e.value) == 'It took longer than Book AI allows it (1 seconds).'


def test_the_worker_is_stopped_past_its_memory():
    assert isolated.run('core.isolated', 'exercise', (0, 50), 10) == 50
    with pytest.raises(isolated.Refused) as e:
        isolated.run('core.isolated', 'exercise', (0, 400), 10)
    assert str(e.value) == f'It needed more memory than Book AI allows it ({isolated.WORKER_MEMORY // MB} MB).'
    with pytest.raises(isolated.Refused):
        isolated.run('core.isolated', 'exercise', (0, 50), 10, memory=20 * MB)


def test_a_worker_spinning_at_its_memory_limit_is_ended_and_told_as_memory():
    """A worker whose every allocation fails but which goes on working (calibre 8.5's conversion on
    Python 3.13 was seen doing that) is ended by MemoryWatch, and said to need more memory; without
    it, its CPU time (120 s here) would end it, said as time."""
    with pytest.raises(isolated.Refused) as e:
        isolated.run('core.isolated', 'exercise', (120, 0, True), 120, memory=64 * MB)
    assert str(e.value) == 'It needed more memory than Book AI allows it (64 MB).', e.value.details
    assert 'memory limit' in e.value.details


def test_what_the_worker_sends_back_is_checked():
    """Only what Book AI asked for is used: a whole baseline JPEG of the size said, within the box;
    RGB rows of the size said, within the side."""
    (good,) = decode_images([png(30, 40)], ['It'], cover=True, side=20)
    box = (1650, 2200)
    plain = {'problem': '', 'jpeg': good.jpeg, 'width': 30, 'height': 40,
             'pixels': (good.pixels.width, good.pixels.height, good.pixels.stride, good.pixels.data)}
    assert checked_result(plain, 'It', box, 20).ok
    progressive = jpeg_progressive(30, 40, 3)
    for wrong in ({'jpeg': progressive}, {'jpeg': png(30, 40)}, {'jpeg': good.jpeg[:-40]}, {'width': 31},
                  {'pixels': (15, 20, 45, b'\x00' * 10)}, {'pixels': (40, 40, 120, b'\x00' * 4800)},
                  {'pixels': None}, {'jpeg': None}):
        assert checked_result(dict(plain, **wrong), 'It', box, 20).problem == 'It could not be decoded.', wrong
    assert checked_result(dict(plain, width=3000, height=4000), 'It', box, 20).problem == 'It could not be decoded.'
    said = checked_result({'problem': 'It is bad.\x1b[2J'}, 'It', box, 20).problem
    assert said == 'It is bad.\\x1b[2J'  # a worker's words, shown inert
    assert checked_result(None, 'It', box, 20) == Decoded('It could not be decoded.')
