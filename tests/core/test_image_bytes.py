# License: GPLv3 Copyright: the Book AI developers
"""core/images.py: an image from outside is recognised from its own bytes (PNG, JPEG, WebP,
GIF), its size read from its header as Qt reads it, and refused in words when it is cut short,
not an image, too large or too big a side; its whole structure checked before any decoder sees
it, in one pass and a few MB: the crafted images of issue 26 (a damaged PNG, a decompression
bomb, 8192x8192 pixels, progressive JPEGs of many scans or of gigabytes of coefficients, too many
frames) refused in words, the bounds holding exactly where they are said, every cut and random
changes of whole images ending in a sentence; core/multipart.py's form bodies parse back as
Python's own email parser reads multipart/form-data; the image price table."""

import base64
import email.parser
import email.policy
import struct
import zlib

import pytest

from calibre_plugins.bookai.core import images, limits
from calibre_plugins.bookai.core.errors import ProtocolError, TooLarge
from calibre_plugins.bookai.core.images import (
    ASPECTS, Image, NotAnImage, image_from_base64, image_from_bytes, no_image, said, sniff, structure,
)
from calibre_plugins.bookai.core.messages import Usage
from calibre_plugins.bookai.core.multipart import encode_multipart
from calibre_plugins.bookai.providers import pricing
from helpers import images as crafted
from helpers.images import png

# real WebP files, 1x1, as browsers' feature tests use them: lossless (VP8L) and lossy (VP8)
WEBP_LOSSLESS = base64.b64decode('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==')
WEBP_LOSSY = base64.b64decode('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA')


def webp_vp8x(width: int, height: int, picture: bool = False) -> bytes:
    """The header of an extended WebP (VP8X) of that size, as the format lays it out; with
    picture, a VP8L chunk after it (a 1x1 one: what structure() looks for is that there is one)."""
    body = b'VP8X' + struct.pack('<I', 10) + b'\x00\x00\x00\x00' + (width - 1).to_bytes(3, 'little') + (
        height - 1).to_bytes(3, 'little')
    if picture:
        body += WEBP_LOSSLESS[12:] + b'\x00'
    return b'RIFF' + struct.pack('<I', 4 + len(body)) + b'WEBP' + body


def webp_vp8l(width: int, height: int) -> bytes:
    """The header of a lossless WebP (VP8L) of that size, as the format lays it out."""
    bits = (width - 1) | (height - 1) << 14
    body = b'VP8L' + struct.pack('<I', 5) + b'\x2f' + bits.to_bytes(4, 'little') + b'\x00' * 8
    return b'RIFF' + struct.pack('<I', 4 + len(body)) + b'WEBP' + body


def qt_size(data: bytes, qapp) -> tuple[int, int]:
    """The image's size as Qt reads it (and Qt can decode it: a real image)."""
    from qt.core import QImage
    image = QImage()
    assert image.loadFromData(data), 'Qt cannot read this image'
    return image.width(), image.height()


def qt_jpeg(width: int, height: int, qapp) -> bytes:
    from qt.core import QBuffer, QByteArray, QColor, QImage, QIODevice
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(200, 30, 30))
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buf, 'JPEG', 80)
    buf.close()
    return bytes(data)


@pytest.mark.parametrize('size', [(1, 1), (512, 768), (1024, 1536), (1536, 1024), (8192, 3)])
def test_png_size_is_read_as_qt_reads_it(size, qapp):
    data = png(*size)
    image = image_from_bytes(data, 'Test')
    assert (image.mime, image.width, image.height) == ('image/png', *size)
    assert qt_size(data, qapp) == size
    assert image.extension == 'png' and image.data == data


@pytest.mark.parametrize('size', [(1, 1), (333, 500), (1024, 1536), (1536, 1024)])
def test_jpeg_size_is_read_as_qt_reads_it(size, qapp):
    data = qt_jpeg(*size, qapp)
    image = image_from_bytes(data, 'Test')
    assert (image.mime, image.width, image.height) == ('image/jpeg', *size)
    assert image.extension == 'jpg'


def test_calibres_own_jpeg_and_gif_are_read_as_qt_reads_them(qapp):
    for name, mime in (('catalog/DefaultCover.jpg', 'image/jpeg'), ('catalog/mastheadImage.gif', 'image/gif')):
        with open(P(name), 'rb') as f:
            data = f.read()
        image = image_from_bytes(data, 'Test')
        assert image.mime == mime
        assert (image.width, image.height) == qt_size(data, qapp), name


def test_a_jpeg_with_metadata_before_its_frame_is_sized(qapp):
    data = qt_jpeg(300, 450, qapp)
    exif = b'Exif\x00\x00' + b'\x00' * 200  # an APP1 segment before the frame header, and a comment
    comment = b'made by a test \xff\x00'
    data = data[:2] + b'\xff\xe1' + struct.pack('>H', len(exif) + 2) + exif + b'\xff\xfe' + struct.pack(
        '>H', len(comment) + 2) + comment + data[2:]
    assert (image_from_bytes(data, 'Test').width, image_from_bytes(data, 'Test').height) == (300, 450)


def test_webp_sizes():
    assert sniff(WEBP_LOSSLESS) == ('image/webp', (1, 1))
    assert sniff(WEBP_LOSSY) == ('image/webp', (1, 1))
    assert sniff(webp_vp8x(1024, 1536)) == ('image/webp', (1024, 1536))
    assert sniff(webp_vp8l(640, 960)) == ('image/webp', (640, 960))
    image = image_from_bytes(webp_vp8x(4000, 6000, picture=True), 'Test')
    assert (image.mime, image.extension, image.width, image.height) == ('image/webp', 'webp', 4000, 6000)
    with pytest.raises(NotAnImage) as e:  # a header with no picture after it: nothing a decoder should see
        image_from_bytes(webp_vp8x(4000, 6000), 'Test')
    assert str(e.value) == 'The image Test sent is damaged (it has no image data); Book AI does not use it.'
    try:  # where Pillow is at hand, it agrees on the real files
        from PIL import Image as PILImage
    except ImportError:
        return
    import io
    for data in (WEBP_LOSSLESS, WEBP_LOSSY):
        assert PILImage.open(io.BytesIO(data)).size == sniff(data)[1]


def test_gif_size():
    data = b'GIF89a' + struct.pack('<HH', 320, 480) + b'\x00' * 20
    assert sniff(data) == ('image/gif', (320, 480))


@pytest.mark.parametrize('kind', ['png', 'jpeg', 'webp-lossless', 'webp-lossy', 'webp-vp8x', 'gif'])
def test_headers_cut_short_are_not_images(kind, qapp):
    data = {'png': png(64, 96), 'jpeg': qt_jpeg(64, 96, qapp), 'webp-lossless': WEBP_LOSSLESS,
            'webp-lossy': WEBP_LOSSY, 'webp-vp8x': webp_vp8x(64, 96),
            'gif': b'GIF89a' + struct.pack('<HH', 64, 96) + b'\x00' * 20}[kind]
    whole = sniff(data)[1]
    assert whole is not None
    header_ends = {'png': 24, 'gif': 10, 'webp-lossless': 30, 'webp-lossy': 30, 'webp-vp8x': 30}.get(kind)
    if header_ends is None:  # the JPEG's frame header: just after the SOF marker's size fields
        header_ends = next(i for i in range(2, len(data) - 1) if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC2)) + 9
    for end in range(0, header_ends):
        with pytest.raises(NotAnImage) as e:
            image_from_bytes(data[:end], 'Pictor')
        assert 'Pictor sent something that is not an image' in str(e.value)
    assert sniff(data[:header_ends])[1] == whole


@pytest.mark.parametrize('data', [b'', b'<html><body>Bad gateway</body></html>', b'{"data": []}',
                                  b'BM' + b'\x00' * 60, b'II*\x00' + b'\x00' * 60,
                                  b'\xff\xd8\xff\xda\x00\x08' + b'x' * 40,
                                  b'RIFF\x00\x00\x00\x00WAVEfmt ' + b'\x00' * 40, png(2, 2)[:8] + b'\x00' * 30])
def test_what_is_not_a_known_image_is_refused_in_words(data):
    with pytest.raises(NotAnImage) as e:
        image_from_bytes(data, 'Pictor')
    assert isinstance(e.value, ProtocolError)
    assert str(e.value) == 'Pictor sent something that is not an image Book AI can read (PNG, JPEG, WebP or GIF).'


def test_an_image_over_the_largest_side_is_refused_before_anything_decodes_it():
    side = limits.MAX_IMAGE_SIDE
    assert sniff(png(side, 1)[:33]) == ('image/png', (side, 1))  # the header is all that is read
    assert image_from_bytes(png(side, 1), 'Pictor').width == side
    for w, h in ((side + 1, 10), (10, side + 1), (2 ** 31, 2 ** 31)):
        data = b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR' + struct.pack('>II', w, h) + b'\x08\x02\x00\x00\x00'
        with pytest.raises(TooLarge) as e:
            image_from_bytes(data, 'Pictor')
        assert f'Pictor sent an image of {w}x{h} pixels; Book AI accepts at most {side} pixels a side.' == str(e.value)
    with pytest.raises(TooLarge):
        image_from_bytes(webp_vp8x(side + 1, 100), 'Pictor')
    with pytest.raises(NotAnImage) as e:  # no pixels at all
        image_from_bytes(b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR' + struct.pack('>II', 0, 10) + b'\x00' * 5, 'Pictor')
    assert str(e.value) == 'Pictor sent an image with no pixels.'


def test_an_image_over_the_largest_size_is_refused(monkeypatch):
    data = png(100, 100)
    monkeypatch.setattr(limits, 'MAX_IMAGE_BYTES', len(data) - 1)
    with pytest.raises(TooLarge) as e:
        image_from_bytes(data, 'Pictor')
    assert str(e.value).startswith('Pictor sent an image larger than')
    with pytest.raises(TooLarge):  # base64 text too long is refused before it is decoded
        image_from_base64('A' * (len(data) * 2 + 8192), 'Pictor')


def test_base64_forms():
    data = png(3, 5)
    b64 = base64.b64encode(data).decode()
    for text in (b64, b64.rstrip('='), base64.urlsafe_b64encode(data).decode(), '\n'.join(
            b64[i:i + 76] for i in range(0, len(b64), 76)), 'data:image/png;base64,' + b64,
            'data:image/jpeg;base64,' + b64):  # the type named is not trusted: the bytes say PNG
        image = image_from_base64(text, 'Pictor')
        assert (image.data, image.mime, image.width, image.height) == (data, 'image/png', 3, 5)
    assert image_from_base64(image.data_url(), 'Pictor') == image
    assert image.data_url().startswith('data:image/png;base64,iVBORw0KGgo')


@pytest.mark.parametrize('text', ['data:image/png,%89PNG%0D%0A', 'data:image/png;charset=utf-8,abc', 'data:',
                                  'https://example.com/cover.png', 'iVBORw0KGgo!!!', 'iVBOR w0KG\x00go', 12, None,
                                  ['iVBORw0KGgo'], 'A'])
def test_what_is_not_base64_is_refused_in_words(text):
    with pytest.raises(NotAnImage) as e:
        image_from_base64(text, 'Pictor')
    assert str(e.value) in ('Pictor sent an image in a form Book AI cannot read.',
                            'Pictor sent something that is not an image Book AI can read (PNG, JPEG, WebP or GIF).')


def test_no_image_says_what_the_model_said_inert_and_bounded():
    e = no_image('Pictor', 'text-model-1', 'I can only write words.\x1b[31m\u202e ' + 'x' * 5000)
    assert str(e).startswith("Pictor's model text-model-1 made no image. The service said: I can only write words.")
    assert '\x1b' not in str(e) and '\u202e' not in str(e) and '\\x1b' in str(e) and '\\u202e' in str(e)
    assert len(e.provider_message) <= 301
    assert str(no_image('Pictor', 'm')) == "Pictor's model m made no image."
    assert said(None) == '' and said('a\nb') == 'a b'


def test_aspects_are_calibres_shapes():
    assert ASPECTS == ('2:3', '3:4', '1:1', '9:16', '4:3')
    assert [pricing.image_shape(a) for a in ASPECTS] == ['tall', 'tall', 'square', 'tall', 'wide']


# multipart/form-data

def parsed_form(body: bytes, content_type: str) -> list:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b'Content-Type: ' + content_type.encode() + b'\r\n\r\n' + body)
    assert message.is_multipart()
    return list(message.iter_parts())


def test_a_form_parses_back_with_its_fields_and_image():
    image = png(4, 6)
    fields = [('model', 'gpt-image-1'), ('prompt', 'A cover — with “quotes”\nand lines')]
    body, content_type = encode_multipart(fields, [('image[]', 'image.png', 'image/png', image)])
    assert content_type.startswith('multipart/form-data; boundary=')
    model_part, prompt, image_part = parsed_form(body, content_type)
    assert model_part.get_param('name', header='content-disposition') == 'model'
    assert model_part.get_payload(decode=True) == b'gpt-image-1'
    assert prompt.get_payload(decode=True).decode('utf-8') == 'A cover — with “quotes”\nand lines'
    assert image_part.get_filename() == 'image.png' and image_part.get_content_type() == 'image/png'
    assert image_part.get_payload(decode=True) == image
    assert image_part.get_param('name', header='content-disposition') == 'image[]'


def test_a_forms_boundary_is_new_each_time_and_names_cannot_break_out():
    one, two = encode_multipart([('a', 'b')])[1], encode_multipart([('a', 'b')])[1]
    assert one != two
    body, content_type = encode_multipart([('x"; filename="evil.sh\r\nContent-Type: text/x-sh', 'v')],
                                          [('f', 'a"b\r\n.png', 'image/png\r\nX-Injected: 1', b'\x89PNG')])
    head = body.split(b'\r\n\r\n')[0]
    assert b'\r\nContent-Type: text/x-sh' not in head and b'%22' in head and b'%0D%0A' in head
    parts = parsed_form(body, content_type)
    assert len(parts) == 2
    assert parts[0].get_payload(decode=True) == b'v'
    assert 'X-Injected' not in parts[1] and parts[1].get_payload(decode=True) == b'\x89PNG'


def test_content_holding_the_boundary_is_refused(monkeypatch):
    import os
    monkeypatch.setattr(os, 'urandom', lambda n: b'\x01' * n)
    boundary = '-' * 12 + 'BookAI' + '01' * 16
    with pytest.raises(ValueError):
        encode_multipart([], [('f', 'x.png', 'image/png', b'abc--' + boundary.encode() + b'--')])


# prices

def test_image_prices_are_estimated_and_unknown_is_none():
    cost = pricing.image_token_cost('openai', 'gpt-image-1', 10, 20, 1000)
    assert cost.amount == pytest.approx((10 * 5 + 20 * 10 + 1000 * 40) / 1e6)  # as calibre's test of its own
    assert (cost.currency, cost.source, cost.price_date) == ('USD', 'estimated', pricing.PRICE_DATE)
    assert pricing.image_token_cost('openai', 'gpt-image-1-mini', 10, 20, 1000).amount == pytest.approx(
        (10 * 2 + 20 * 2.5 + 1000 * 8) / 1e6)
    assert pricing.image_token_cost('openai', 'gpt-image-1.5', 10, 20, 1000).amount == pytest.approx(
        (10 * 5 + 20 * 8 + 1000 * 32) / 1e6)
    assert pricing.image_token_cost('openai', 'gpt-image-2', 10, 20, 1000) is None  # not guessed
    assert pricing.estimate_image('gemini', 'imagen-4.0-generate-001', Usage(), '2:3').amount == 0.04
    assert pricing.estimate_image('gemini', 'imagen-4.0-fast-generate-001', Usage(), '1:1').amount == 0.02
    assert pricing.estimate_image('gemini', 'models/imagen-4.0-ultra-generate-001', Usage(), '4:3').amount == 0.06
    flash = pricing.estimate_image('gemini', 'gemini-2.5-flash-image-preview', Usage(12, 1290), '3:4')
    assert flash.amount == pytest.approx((12 * 0.30 + 1290 * 30) / 1e6)
    assert pricing.estimate_image('gemini', 'gemini-2.5-flash-image', Usage(), '3:4') is None  # no counts
    assert pricing.estimate_image('grok', 'grok-imagine-image', Usage(), '2:3').amount == 0.02
    for provider, model in (('grok', 'grok-imagine-image-2.0'), ('openai_compatible', 'sd-turbo'),
                            ('openrouter', 'google/gemini-2.5-flash-image'), ('gemini', ''), ('openai', None)):
        assert pricing.estimate_image(provider, model, Usage(10, 10), '2:3') is None, (provider, model)


def test_an_images_usage_is_priced_from_the_table(monkeypatch):
    monkeypatch.setitem(pricing.IMAGE_PRICES, 'test', {'square-and-tall': {'square': 0.01, 'tall': 0.02, 'wide': 0.03}})
    assert [pricing.estimate_image('test', 'square-and-tall', Usage(), a).amount for a in ('1:1', '2:3', '4:3')] == [
        0.01, 0.02, 0.03]
    assert isinstance(Image(b'', 'image/png', 1, 1), Image)


# the structure, checked before any decoder sees it (issue 26, finding 2)

def interlaced_png(width: int, height: int) -> bytes:
    """A whole Adam7-interlaced grey PNG, its seven passes written as the format lays them out."""
    from helpers.images import PNG_SIGNATURE, chunk, ihdr
    rows = b''
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                           (0, 1, 1, 2)):
        w = len(range(x0, width, dx))
        h = len(range(y0, height, dy))
        if w and h:
            rows += (b'\x00' + b'\x33' * w) * h
    return PNG_SIGNATURE + ihdr(width, height, interlace=1) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')


def whole_images() -> dict[str, bytes]:
    """Small whole images of every kind structure() reads, as the formats lay them out."""
    return {'png': png(12, 9), 'interlaced png': interlaced_png(13, 11), 'apng': crafted.apng(8, 6, 3),
            'gif': crafted.gif(10, 7, 2), 'webp': WEBP_LOSSLESS, 'webp lossy': WEBP_LOSSY,
            'animated webp': crafted.webp_animated(9, 5, 3), 'progressive jpeg': crafted.jpeg_progressive(24, 16, 3),
            'grey progressive jpeg': crafted.jpeg_progressive(17, 9, 1), 'cmyk jpeg': crafted.jpeg_progressive(8, 8, 4)}


@pytest.mark.parametrize('kind', sorted(whole_images()))
def test_whole_images_of_every_kind_pass(kind):
    data = whole_images()[kind]
    found = structure(data, 'The image')
    assert (found.mime, (found.width, found.height)) == sniff(data)
    assert image_from_bytes(data, 'Test').data == data


def test_calibres_own_images_pass():
    import glob
    names = sorted(glob.glob(P('images/*.png')))[::15] + [P('catalog/DefaultCover.jpg'), P('catalog/mastheadImage.gif')]
    assert len(names) > 10
    for name in names:
        with open(name, 'rb') as f:
            data = f.read()
        assert structure(data, name).mime in ('image/png', 'image/jpeg', 'image/gif'), name


CRAFTED = {
    # name: (the image, what the sentence says)
    'damaged pixel data (89 bytes)': (crafted.png_damaged, 'is damaged (its pixel data cannot be unpacked)'),
    'pixel data cut short': (crafted.png_short, 'is damaged (its pixel data is cut short)'),
    '28 GB of zeros in 29 MB': (crafted.png_bomb, 'holds far more data than its 64x64 pixels need (a decompression '
                                                  'bomb)'),
    'PNG of 8192x8192': (lambda: crafted.png_of_side(8192, 8192), 'has 8192x8192 pixels; Book AI accepts at most 8192 '
                                                                  'pixels a side and 24 million in all.'),
    'progressive JPEG of 8192x8192': (lambda: crafted.jpeg_progressive(8192, 8192, 3), 'has 8192x8192 pixels'),
    'progressive CMYK JPEG of 8192x8192': (lambda: crafted.jpeg_progressive(8192, 8192, 4), 'has 8192x8192 pixels'),
    '100,000 scans of 8192x8192': (lambda: crafted.jpeg_progressive(8192, 8192, 1, 100_000), 'has 8192x8192 pixels'),
    '10,000 scans of 2048x2048': (lambda: crafted.jpeg_progressive(2048, 2048, 1, 10_000),
                                  'is a JPEG of more than 100 scans'),
    'progressive CMYK JPEG of 4800x4800': (lambda: crafted.jpeg_progressive(4800, 4800, 4),
                                           'is a progressive JPEG whose decoder would keep 175 MB while it reads it'),
    'APNG of 101 frames': (lambda: crafted.apng(4, 4, 101), 'has more than 100 frames'),
    'GIF of 101 frames': (lambda: crafted.gif(4, 4, 101), 'has more than 100 frames'),
    'WebP of 101 frames': (lambda: crafted.webp_animated(4, 4, 101), 'has more than 100 frames'),
    'text inflating to 64 MB': (lambda: crafted.png_with_text_bomb(64 * 2 ** 20), 'holds text that inflates to more '
                                                                                  'than 8 MB'),
}


@pytest.mark.parametrize('name', sorted(CRAFTED))
def test_crafted_images_are_refused_in_words_before_any_decoder(name):
    from helpers.memory import MB, peak_growth
    make, words = CRAFTED[name]
    data = make()
    outcome, grew = peak_growth(lambda: structure(data, 'The new cover'))
    assert isinstance(outcome, (NotAnImage, TooLarge)), outcome
    assert str(outcome).startswith('The new cover ') and words in str(outcome), str(outcome)
    assert grew < 64 * MB  # inflated in steps, never whole: a bomb costs a few MB to refuse
    with pytest.raises((NotAnImage, TooLarge)) as e:  # and from a service: refused on arrival
        image_from_bytes(data, 'Pictor')
    assert str(e.value).startswith('The image Pictor sent ') and words in str(e.value)


def test_the_bounds_hold_where_they_are_said():
    def ok(data):
        return structure(data, 'It')

    def refused(data):
        with pytest.raises((NotAnImage, TooLarge)):
            structure(data, 'It')
    # scans: a progressive JPEG of one component has 2, each repeat one more
    assert ok(crafted.jpeg_progressive(64, 64, 1, images.MAX_JPEG_SCANS - 2)).scans == images.MAX_JPEG_SCANS
    refused(crafted.jpeg_progressive(64, 64, 1, images.MAX_JPEG_SCANS - 1))
    # frames
    assert ok(crafted.gif(3, 3, images.MAX_FRAMES)).frames == images.MAX_FRAMES
    assert ok(crafted.apng(3, 3, images.MAX_FRAMES)).frames == images.MAX_FRAMES
    assert ok(crafted.webp_animated(3, 3, images.MAX_FRAMES)).frames == images.MAX_FRAMES
    for make in (crafted.gif, crafted.apng, crafted.webp_animated):
        refused(make(3, 3, images.MAX_FRAMES + 1))
    # pixels: exactly the most, and one row more
    assert ok(crafted.png_of_side(6000, images.MAX_IMAGE_PIXELS // 6000)).width == 6000
    refused(crafted.png_of_side(6000, images.MAX_IMAGE_PIXELS // 6000 + 1))
    # what a PNG's stream holds past its pixels
    ok(crafted.png_bomb(8, 8, images.MAX_PNG_EXTRA))
    refused(crafted.png_bomb(8, 8, images.MAX_PNG_EXTRA + 1))
    # what its text inflates to
    ok(crafted.png_with_text_bomb(images.MAX_PNG_TEXT))
    refused(crafted.png_with_text_bomb(images.MAX_PNG_TEXT + 1))
    # a progressive JPEG's coefficients: 4096x4096 in CMYK is 128 MB, 4608x4608 162 MB
    ok(crafted.jpeg_progressive(4096, 4096, 4))
    refused(crafted.jpeg_progressive(4608, 4608, 4))
    assert ok(crafted.jpeg_progressive(4608, 4608, 3)).progressive  # 121 MB in three components


def test_parts_are_counted():
    from helpers.images import PNG_SIGNATURE, chunk, ihdr
    good = png(4, 4)
    many = good[:33] + chunk(b'tEXt', b'a\x00b') * images.MAX_IMAGE_PARTS + good[33:]
    with pytest.raises(TooLarge) as e:
        structure(many, 'It')
    assert 'is made of more than 100000 parts' in str(e.value)
    # a JPEG's markers that carry nothing count as well (a million restart markers before the frame)
    jpeg = crafted.jpeg_progressive(8, 8, 1)
    with pytest.raises(TooLarge):
        structure(jpeg[:2] + b'\xff\xd0' * 1_000_000 + jpeg[2:], 'It')
    assert PNG_SIGNATURE and ihdr


def test_a_jpeg_full_of_fill_bytes_is_read_in_one_pass():
    """0xFF fill bytes before a marker and 0xFF00 in a scan's data: found by one regular expression
    each, never a Python step a byte (nor a backtracking pattern)."""
    jpeg = crafted.jpeg_progressive(16, 16, 1)
    end = jpeg.rindex(b'\xff\xd9')
    filled = jpeg[:end] + b'\xff' * 8_000_000 + jpeg[end:]
    assert structure(filled, 'It').scans == 2
    stuffed = jpeg[:end] + b'\xff\x00' * 4_000_000 + jpeg[end:]  # within the last scan's coded data
    assert structure(stuffed, 'It').scans == 2


@pytest.mark.parametrize('kind', sorted(whole_images()))
def test_every_cut_of_a_whole_image_is_refused_in_words(kind):
    data = whole_images()[kind]
    for end in range(len(data) - 1, -1, -1):
        try:
            structure(data[:end], 'It')
        except (NotAnImage, TooLarge) as e:
            assert str(e).startswith('It ') and str(e).endswith('.'), str(e)
        else:  # what follows a whole image (a GIF's trailer, a JPEG's end) is all a cut may leave out
            assert end >= len(data) - 2 and kind in ('gif', 'progressive jpeg', 'grey progressive jpeg', 'cmyk jpeg',
                                                     'webp', 'webp lossy', 'animated webp'), (kind, end)


@pytest.mark.parametrize('kind', sorted(whole_images()))
def test_bytes_changed_anywhere_end_in_a_structure_or_a_sentence(kind):
    import random
    data = whole_images()[kind]
    rnd = random.Random(26)
    for _ in range(400):
        changed = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            changed[rnd.randrange(8, len(changed))] = rnd.randrange(256)
        try:
            found = structure(bytes(changed), 'It')
        except (NotAnImage, TooLarge) as e:
            assert str(e).startswith('It ')
        else:
            assert 0 < found.width * found.height <= images.MAX_IMAGE_PIXELS and found.frames <= images.MAX_FRAMES
