# License: GPLv3 Copyright: the Book AI developers
"""core/images.py decodes an image's base64 a step at a time (so that a worker decoding a cover of
several MB never holds Python's GIL long enough to pause a window): the same bytes as the standard
decoder, whatever falls on a step's boundary, and what is not base64 refused."""

import base64
import binascii
import random

import pytest

from calibre_plugins.bookai.core import images


@pytest.mark.parametrize('step', [4, 7, 8, 4096])
def test_the_bytes_are_the_standard_decoders_whatever_the_steps(monkeypatch, step):
    monkeypatch.setattr(images, 'BASE64_STEP', step)
    rng = random.Random(step)
    for size in list(range(40)) + [1000, 4097, 65537]:
        data = bytes(rng.randrange(256) for _ in range(size))
        forms = (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode(),
                 base64.b64encode(data).decode().rstrip('='), base64.encodebytes(data).decode(),
                 ' ' + base64.b64encode(data).decode() + '\r\n')
        for text in forms:
            assert images.decoded_base64(text) == data, (size, text[:40])


@pytest.mark.parametrize('text', ['A', 'ABCDE', 'AB=C', 'AB===', 'A*BC', 'AB\x00C', 'é€', 'AB CD=E'])
def test_what_is_not_base64_is_refused(monkeypatch, text):
    monkeypatch.setattr(images, 'BASE64_STEP', 3)
    with pytest.raises((ValueError, binascii.Error)):
        images.decoded_base64(text)


def test_a_large_image_is_decoded_in_many_steps(monkeypatch):
    data = bytes(range(256)) * 8000  # 2 MB
    steps = []
    real = binascii.a2b_base64

    def counted(piece):
        steps.append(len(piece))
        return real(piece)
    monkeypatch.setattr(images.binascii, 'a2b_base64', counted)
    assert images.decoded_base64(base64.b64encode(data).decode()) == data
    assert len(steps) >= 10 and max(steps) <= images.BASE64_STEP
