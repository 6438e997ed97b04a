# License: GPLv3 Copyright: the Book AI developers
"""Images from a real local image server: stable-diffusion.cpp's sd-server (helpers.peers.SdServer,
with dev/peers.py's random SD 1.x model), through Book AI's "OpenAI compatible" provider as a
reader would set it up (an address; no image model: the server has one loaded), on every host.

The server is started with one sampling step and cfg 1 (its own defaults for every request), so
Book AI sends only what it sends to any such server: prompt, n, size, response_format. The
provider asks a local server for Stable Diffusion's own sizes (LOCAL_IMAGE_SIZES: 512x768 for a
2:3 cover, about 100 s of CPU here); the provider has no setting for the size, so these tests
shrink that table, and only that, to sizes that take a second or two (sd-server rounds each
side up to a multiple of 64, so they are multiples of 64: 64x128 is the smallest tall one, not
quite 2:3, but a width and height swapped anywhere shows). The pictures are flat grey (random
weights): the tests check the wire, the size, the cost and the PNG, not the content."""

import struct
import threading
import time

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.images import image_from_bytes
from calibre_plugins.bookai.providers import openai_chat
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import SdServer

SMALL_SIZES = {'2:3': '64x128', '1:1': '64x64'}


@pytest.fixture(scope='module')
def sd():
    with SdServer(steps=1, cfg=1.0) as server:
        yield server


@pytest.fixture
def small_sizes(monkeypatch):
    for aspect, size in SMALL_SIZES.items():
        monkeypatch.setitem(openai_chat.LOCAL_IMAGE_SIZES, aspect, size)


def provider(sd, **settings):
    return get_provider('openai_compatible', settings=dict({'base_url': sd.base_url}, **settings))


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR, read here independently of Book AI's own reader."""
    assert data[:8] == b'\x89PNG\r\n\x1a\n' and data[12:16] == b'IHDR', data[:16]
    return struct.unpack('>II', data[16:24])


def generations(sd, start: int) -> list[str]:
    """The sizes sd-server made since log position start, as its log says them."""
    return [line.split('generate_image ', 1)[1].strip() for line in sd.log()[start:].splitlines()
            if 'generate_image ' in line and 'completed' not in line]


def test_a_cover_from_sd_server(sd, small_sizes):
    start = len(sd.log())
    result = provider(sd).generate_image('A lighthouse at dusk, a painted book cover', aspect='2:3')
    assert result.image.mime == 'image/png'
    assert (result.image.width, result.image.height) == (64, 128)
    assert png_size(result.image.data) == (64, 128)
    assert image_from_bytes(result.image.data, 'test') == result.image
    # no image model set: none is sent, none is claimed; sd-server says nothing of usage or price
    assert result.model == ''
    assert result.usage.cost is None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (None, None)
    assert generations(sd, start) == ['64x128']


def test_the_image_model_as_set_is_the_model_reported(sd, small_sizes):
    start = len(sd.log())
    result = provider(sd, image_model='sd-cpp-local').generate_image('A fox in the snow', aspect='1:1')
    assert (result.image.width, result.image.height) == png_size(result.image.data) == (64, 64)
    assert result.model == 'sd-cpp-local'
    assert result.usage.cost is None
    assert generations(sd, start) == ['64x64']


def test_covers_for_two_books_at_once_against_a_server_that_makes_one_at_a_time(sd, small_sizes, tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run, run_covers
    from calibre_plugins.bookai.covers.making import BookRequest
    start = len(sd.log())
    progress = []
    lock = threading.Lock()

    def seen(done, total, outcome):
        with lock:
            progress.append((done, total, outcome.book_id))

    requests = [BookRequest(i, f'Book {i}', f'Design a book cover for the book "Book {i}".') for i in (7, 12)]
    began = time.monotonic()
    outcomes = run_covers(requests, provider(sd), '1:1', 2, str(tmp_path / 'run'), CancelToken(), seen,
                          library_id='lib')
    assert time.monotonic() - began < 120
    assert [(o.book_id, o.status, o.error) for o in outcomes] == [(7, 'made', ''), (12, 'made', '')]
    for o in outcomes:
        data = (tmp_path / 'run' / f'{o.book_id}.png').read_bytes()
        assert o.path == str(tmp_path / 'run' / f'{o.book_id}.png')
        assert png_size(data) == (64, 64)
        assert image_from_bytes(data, 'test').mime == 'image/png'
        assert o.cost is None and o.model == ''
    assert sorted(p[0] for p in progress) == [1, 2] and {p[1] for p in progress} == {2}
    assert sorted(p[2] for p in progress) == [7, 12]
    run = load_run(str(tmp_path / 'run'))
    assert run.finished and [o.status for o in run.made] == ['made', 'made']
    # both requests reached the server, which made them one after the other, each at the size asked
    assert generations(sd, start) == ['64x64', '64x64']
