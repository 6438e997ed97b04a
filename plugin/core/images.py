# License: GPLv3 Copyright: the Book AI developers
"""An image a service made, checked before anything else sees it.

Every image from outside (a cover an image model made, whatever the wire format) comes in
through image_from_bytes() or image_from_base64(): bounded in size (limits.MAX_IMAGE_BYTES,
limits.MAX_IMAGE_SIDE) and recognised from its own first bytes as PNG, JPEG, WebP or GIF,
whatever the service says it is. Its width and height are read from its header, without
decoding it: no Qt and no image library here, so the core stays testable without a display.

Before any decoder sees an image (from a service, a staged file, a library, Undo), structure()
reads all of it in one linear pass and refuses, in a sentence, what would cost a decoder minutes
or gigabytes though it is small: too many pixels (MAX_IMAGE_PIXELS), a PNG stream that inflates
past what its pixels need (a decompression bomb), a progressive JPEG of too many scans or too
many coefficients, too many frames or parts, broken data. Then decode_images() has it decoded by
Book AI itself, in calibre's worker process (core.isolated, gui/image_decoding.py), bounded in time
and memory: what comes back, checked, is Book AI's own baseline JPEG for the library and RGB rows
for the windows (Decoded, Pixels), never the bytes that came in. Nothing in calibre's process
decodes an image from outside.

ImageResult is what a provider's generate_image() gives back: the image, the model that
made it, its usage and cost (unknown, never free, when nobody said), and anything the
service said alongside (a revised prompt, a few words of text).
"""

import base64
import binascii
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import ProtocolError, ProviderError, TooLarge
from calibre_plugins.bookai.core.files import NotRegular, TooBig, read_regular
from calibre_plugins.bookai.core.messages import Usage
from calibre_plugins.bookai.core.printable import inert, one_line

load_translations()

EXTENSIONS = {'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif'}

# calibre's cover shapes (width:height) as the reader chooses them; 2:3 is a printed book's
ASPECTS = ('2:3', '3:4', '1:1', '9:16', '4:3')


@dataclass(frozen=True)
class Image:
    """An image's bytes, its type as read from them, and its size in pixels."""
    data: bytes = field(repr=False)
    mime: str
    width: int
    height: int

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.mime]

    def data_url(self) -> str:
        """The image as a data: URL, as OpenRouter and OpenAI's chat formats take one."""
        return f'data:{self.mime};base64,' + base64.b64encode(self.data).decode('ascii')


@dataclass(frozen=True)
class ImageResult:
    """One image a provider made, and what it cost."""
    image: Image
    model: str
    usage: Usage = field(default_factory=Usage)
    revised_prompt: str = ''  # the prompt as the service rewrote it, when it says
    text: str = ''            # words the model sent with the image

    def __post_init__(self) -> None:
        # the service's words, as every window and the command line may show them (core/printable.py)
        for name, made in (('model', one_line), ('revised_prompt', inert), ('text', inert)):
            object.__setattr__(self, name, made(getattr(self, name)))


class NotAnImage(ProtocolError):
    """What came is not an image Book AI can read."""


class NoImageMade(ProviderError):
    """The model answered, but with no image (only words, or nothing): a model that cannot make
    images, or one that chose not to."""


class ImageAddress(Exception):
    """Raised by a provider's parse_image_answer() when the service sent the address of the image
    rather than the image itself: generate_image() fetches it only from the provider's own
    server, and says so in words otherwise. Not an error the reader sees."""

    def __init__(self, url: str, usage: Usage | None = None, revised_prompt: str = '', text: str = '') -> None:
        super().__init__('image address')
        self.url, self.usage, self.revised_prompt, self.text = url, usage or Usage(), revised_prompt, text


MOST_SAID_CHARS = 300  # of what a model said instead of making an image, in an error


def said(text: object, most: int = MOST_SAID_CHARS) -> str:
    """What a service or a model said, as an error may quote it: a string, on one line, its
    control characters shown inert, at most `most` characters."""
    if not isinstance(text, str):
        return ''
    text = one_line(text[:most * 4])
    return text if len(text) <= most else text[:most] + '…'


def no_image(provider: str, model: str, text: object = '', why: str = '') -> NoImageMade:
    """The error for an answer with no image in it: what the model said instead, when it said
    anything, and why (a sentence), when known."""
    model = said(model, 100)
    sentence = (_("{provider}'s model {model} made no image.").format(provider=provider, model=model) if model
                else _('{provider} made no image.').format(provider=provider))
    if why:
        sentence += ' ' + why
    return NoImageMade(sentence, provider_message=said(text))


def image_from_bytes(data: bytes, provider: str) -> Image:
    """data as an Image, its type and size read from its first bytes, its whole structure checked
    (structure()). Raises TooLarge over limits.MAX_IMAGE_BYTES, limits.MAX_IMAGE_SIDE or a bound
    of structure(), NotAnImage (with provider's name, in words) when it is no PNG, JPEG, WebP or
    GIF, or a damaged one."""
    if len(data) > limits.MAX_IMAGE_BYTES:
        raise TooLarge(_('{provider} sent an image larger than {megabytes:g} MB, the most Book AI accepts.').format(
            provider=provider, megabytes=limits.MAX_IMAGE_BYTES / 2 ** 20))
    mime, size = sniff(data)
    if mime is None or size is None:
        raise NotAnImage(_('{provider} sent something that is not an image Book AI can read (PNG, JPEG, WebP '
                           'or GIF).').format(provider=provider), details=repr(bytes(data[:16])))
    width, height = size
    if width <= 0 or height <= 0:
        raise NotAnImage(_('{provider} sent an image with no pixels.').format(provider=provider),
                         details=repr(bytes(data[:32])))
    if not (width <= limits.MAX_IMAGE_SIDE and height <= limits.MAX_IMAGE_SIDE):
        raise TooLarge(_('{provider} sent an image of {width}x{height} pixels; Book AI accepts at most {most} '
                         'pixels a side.').format(provider=provider, width=width, height=height,
                                                  most=limits.MAX_IMAGE_SIDE))
    data = bytes(data)
    found = structure(data, _('The image {provider} sent').format(provider=provider))
    return Image(data, found.mime, found.width, found.height)


# Characters of base64 decoded in one step. A worker decoding a cover of several MB holds Python's
# GIL for each step: about a millisecond each, never the 15 ms a whole 2 MB image takes at once, so
# that the window's thread never waits long for it (bench/covers.py measures the pauses).
BASE64_STEP = 256 * 1024
BASE64_BODY = re.compile(rb'[A-Za-z0-9+/]*')
BASE64_STANDARD = bytes.maketrans(b'-_', b'+/')  # URL-safe letters to the standard ones
WHITE_SPACE = b' \t\n\r\f\v'  # base64 wrapped in lines


def decoded_base64(text: str) -> bytes:
    """The bytes of base64 text (standard or URL-safe alphabet, white space anywhere, padding at its
    end only), decoded BASE64_STEP characters at a time. ValueError when it is not base64."""
    body = text.rstrip().encode('ascii')  # UnicodeEncodeError is a ValueError
    unpadded = body.rstrip(b'=')
    if len(body) - len(unpadded) > 2:
        raise ValueError('too much padding')
    parts, carry = [], b''
    for start in range(0, len(unpadded), BASE64_STEP):
        piece = carry + unpadded[start:start + BASE64_STEP].translate(BASE64_STANDARD, WHITE_SPACE)
        if not BASE64_BODY.fullmatch(piece):
            raise ValueError('not base64')
        whole = len(piece) - len(piece) % 4
        parts.append(binascii.a2b_base64(piece[:whole]))
        carry = piece[whole:]
    if len(carry) == 1:
        raise ValueError('not base64: a lone character at the end')
    if carry:
        parts.append(binascii.a2b_base64(carry + b'=' * (-len(carry) % 4)))
    return b''.join(parts)


def image_from_base64(text: object, provider: str) -> Image:
    """The image in base64 text (standard or URL-safe alphabet, white space allowed), or in a
    data: URL; bounded before it is decoded. Raises as image_from_bytes() does."""
    if not isinstance(text, str):
        raise NotAnImage(_('{provider} sent an image in a form Book AI cannot read.').format(provider=provider))
    if text.startswith('data:'):
        head, sep, text = text.partition(',')
        if not sep or not head.endswith(';base64'):
            raise NotAnImage(_('{provider} sent an image in a form Book AI cannot read.').format(provider=provider))
    if len(text) > limits.MAX_IMAGE_BYTES * 4 // 3 + 4096:
        raise TooLarge(_('{provider} sent an image larger than {megabytes:g} MB, the most Book AI accepts.').format(
            provider=provider, megabytes=limits.MAX_IMAGE_BYTES / 2 ** 20))
    try:
        data = decoded_base64(text)
    except (binascii.Error, ValueError):
        raise NotAnImage(_('{provider} sent an image in a form Book AI cannot read.').format(
            provider=provider)) from None
    return image_from_bytes(data, provider)


def images_api_result(data: Any, provider: str, model: str, usage: Usage | None = None) -> ImageResult:
    """The image in an answer of OpenAI's images API shape ({"data": [{"b64_json" or "url",
    "revised_prompt", ...}]}), as OpenAI and the servers that copy it send it, with the usage the
    provider read from it. Raises ImageAddress for an address, no_image() when there is none,
    and as image_from_base64() does."""
    usage = usage or Usage()
    for item in data.get('data') or ():
        revised = said(item.get('revised_prompt'), 2000)
        if item.get('b64_json'):
            return ImageResult(image_from_base64(item['b64_json'], provider), model, usage, revised)
        if item.get('url'):
            raise ImageAddress(item['url'], usage, revised)
    raise no_image(provider, model)


def sniff(data: bytes) -> tuple[str | None, tuple[int, int] | None]:
    """(mime type, (width, height)) read from an image's header; None for what is not known."""
    try:
        if data.startswith(b'\x89PNG\r\n\x1a\n') and data[12:16] == b'IHDR':
            return 'image/png', cast('tuple[int, int]', struct.unpack('>II', data[16:24]))
        if data.startswith(b'\xff\xd8'):
            return 'image/jpeg', jpeg_size(data)
        if data[:4] == b'RIFF' and data[8:12] == b'WEBP':
            return 'image/webp', webp_size(data)
        if data[:6] in (b'GIF87a', b'GIF89a'):
            return 'image/gif', cast('tuple[int, int]', struct.unpack('<HH', data[6:10]))
    except (struct.error, IndexError):  # a header cut short
        pass
    return None, None


# JPEG markers that start a frame and carry its size (SOF0 to SOF15 but DHT, JPG and DAC)
SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, walking its segments; None if there is none."""
    i, end = 2, len(data)
    while i + 4 <= end:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        length = struct.unpack('>H', data[i + 2:i + 4])[0]
        if length < 2:
            return None
        if marker in SOF_MARKERS:
            height, width = struct.unpack('>HH', data[i + 5:i + 9])
            return width, height
        if marker == 0xDA:  # the scan starts before any frame header: not a JPEG we can size
            return None
        i += 2 + length
    return None


def webp_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a WebP image, from its VP8, VP8L or VP8X chunk."""
    chunk = data[12:16]
    if len(data) < 30:  # every kind's size ends by byte 30
        return None
    if chunk == b'VP8 ' and data[23:26] == b'\x9d\x01\x2a':
        w, h = struct.unpack('<HH', data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b'VP8L' and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], 'little')
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b'VP8X':
        return int.from_bytes(data[24:27], 'little') + 1, int.from_bytes(data[27:30], 'little') + 1
    return None


# the structure, checked before anything decodes the image {{{

# What a decoder's time and memory grow with, besides the bytes (limits.MAX_IMAGE_BYTES) and the
# longest side (limits.MAX_IMAGE_SIDE): the pixels (an 8192x8192 image is 256 MB of them once
# decoded); the bytes a PNG's zlib stream inflates to (a 29 MB file can carry 28 GB of zeros
# after its pixels, which libpng inflates to the end); the scans of a progressive JPEG (each one
# a pass over every block of the image: 100,000 scans of an 8192x8192 image take a decoder ten
# minutes in 13 MB) and the coefficients it keeps while it decodes them; the frames of an
# animation; the parts a file is made of (each a step for the decoder and for this check).
# structure() reads them all in one linear pass, inflating a PNG's stream at most to the size
# its header implies plus MAX_PNG_EXTRA, in steps of INFLATE_STEP, never into memory whole.
# Covers from image models are 1 to 17 million pixels (a 4K image of Gemini's: 3392x5056).
MAX_IMAGE_PIXELS = 24_000_000
MAX_JPEG_SCANS = 100                      # libjpeg's progressive JPEGs have 10, mozjpeg's a few more
MAX_JPEG_COEFFICIENT_BYTES = 160 * 2 ** 20  # what a progressive JPEG keeps while its scans come
MAX_IMAGE_PARTS = 100_000                 # PNG chunks, JPEG segments, GIF blocks, WebP chunks
MAX_FRAMES = 100                          # of an animated GIF, PNG or WebP (the first is used)
MAX_PNG_EXTRA = 64 * 1024                 # inflated bytes past what a PNG's pixels need
MAX_PNG_TEXT = 8 * 2 ** 20                # inflated bytes of its compressed text and colour profile
INFLATE_STEP = 1 << 20


@dataclass(frozen=True)
class Structure:
    """What structure() read of an image: its type, size in pixels, frames and (JPEG) scans."""
    mime: str
    width: int
    height: int
    frames: int = 1
    scans: int = 0
    progressive: bool = False


class Damaged(NotAnImage):
    """An image whose structure is broken (cut short, a checksum wrong, data that cannot be
    unpacked): no decoder is given it."""


def damaged(image: str, why: str) -> Damaged:
    return Damaged(_('{image} is damaged ({why}); Book AI does not use it.').format(image=image, why=why))


def too_many(image: str, why: str) -> TooLarge:
    return TooLarge(_('{image} {why}: decoding it would take minutes or gigabytes, so Book AI does not decode '
                      'it.').format(image=image, why=why))


def cut_short() -> str:
    return _('it is cut short')


def check_pixels(image: str, width: int, height: int) -> None:
    """Refuses an image with no pixels, over limits.MAX_IMAGE_SIDE a side or over MAX_IMAGE_PIXELS."""
    if width <= 0 or height <= 0:
        raise NotAnImage(_('{image} has no pixels.').format(image=image))
    if width > limits.MAX_IMAGE_SIDE or height > limits.MAX_IMAGE_SIDE or width * height > MAX_IMAGE_PIXELS:
        raise TooLarge(_('{image} has {width}x{height} pixels; Book AI accepts at most {most} pixels a side and '
                         '{millions} million in all.').format(image=image, width=width, height=height,
                                                              most=limits.MAX_IMAGE_SIDE,
                                                              millions=MAX_IMAGE_PIXELS // 1_000_000))


def structure(data: bytes, image: str) -> Structure:
    """The structure of the image in data, checked whole before any decoder sees it, in time
    linear in its size and a few MB of memory: every part within the file, every checksum of what
    the decoders use right, the pixels, frames, scans and inflated data within the bounds above.
    image names it in a sentence ("The image OpenAI sent", "The new cover"). Raises NotAnImage
    (Damaged when it is broken) or TooLarge, each a sentence."""
    data = bytes(data)
    if len(data) > limits.MAX_IMAGE_BYTES:
        raise TooLarge(_('{image} is larger than {megabytes:g} MB, the most Book AI accepts.').format(
            image=image, megabytes=limits.MAX_IMAGE_BYTES / 2 ** 20))
    mime, _size = sniff(data)
    try:
        if mime == 'image/png':
            return png_structure(data, image)
        if mime == 'image/jpeg':
            return jpeg_structure(data, image)
        if mime == 'image/gif':
            return gif_structure(data, image)
        if mime == 'image/webp':
            return webp_structure(data, image)
    except (struct.error, IndexError):
        raise damaged(image, cut_short()) from None
    raise NotAnImage(_('{image} is not an image Book AI can read (PNG, JPEG, WebP or GIF).').format(image=image))


# PNG: bits a pixel by colour type, and the bit depths each allows
PNG_COLOURS = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (1, (1, 2, 4, 8)), 4: (2, (8, 16)), 6: (4, (8, 16))}
ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
PNG_CRITICAL = frozenset((b'IHDR', b'PLTE', b'IDAT', b'IEND'))


def png_data_size(width: int, height: int, bits: int, interlaced: bool) -> int:
    """The bytes a PNG's zlib stream inflates to: each row's filter byte and its pixels, for the
    whole image or for each of Adam7's seven passes."""
    if not interlaced:
        return height * (1 + (width * bits + 7) // 8)
    total = 0
    for x0, y0, dx, dy in ADAM7:
        w = (width - x0 + dx - 1) // dx if width > x0 else 0
        h = (height - y0 + dy - 1) // dy if height > y0 else 0
        if w and h:
            total += h * (1 + (w * bits + 7) // 8)
    return total


class Inflater:
    """A zlib stream inflated in steps, its output counted and dropped: refused past `most` bytes."""

    def __init__(self, most: int, over: Callable[[], Exception], broken: Callable[[], Exception]) -> None:
        self.z = zlib.decompressobj()
        self.most, self.over, self.broken = most, over, broken
        self.size = 0

    def feed(self, data: bytes) -> None:
        tail = data
        try:
            while True:
                out = self.z.decompress(tail, INFLATE_STEP)
                self.size += len(out)
                if self.size > self.most:
                    raise self.over()
                tail = self.z.unconsumed_tail
                if self.z.eof or (not tail and len(out) < INFLATE_STEP):
                    return
        except zlib.error:
            raise self.broken() from None

    @property
    def ended(self) -> bool:
        return self.z.eof


def png_structure(data: bytes, image: str) -> Structure:
    if data[12:16] != b'IHDR' or struct.unpack('>I', data[8:12])[0] != 13:
        raise damaged(image, _('its header is not where the format puts it'))
    width, height, depth, colour, compression, filtering, interlace = struct.unpack('>IIBBBBB', data[16:29])
    check_pixels(image, width, height)
    if colour not in PNG_COLOURS or depth not in PNG_COLOURS[colour][1] or compression or filtering or (
            interlace not in (0, 1)):
        raise damaged(image, _('its header holds values the format does not have'))
    need = png_data_size(width, height, PNG_COLOURS[colour][0] * depth, bool(interlace))
    pixels = Inflater(need + MAX_PNG_EXTRA, lambda: too_many(image, _(
        'holds far more data than its {width}x{height} pixels need (a decompression bomb)').format(
            width=width, height=height)), lambda: damaged(image, _('its pixel data cannot be unpacked')))
    text_left = MAX_PNG_TEXT
    pos, end, parts, frames, seen_idat = 8, len(data), 0, 0, False
    while True:
        if pos + 12 > end:
            raise damaged(image, cut_short())
        length, kind = struct.unpack_from('>I4s', data, pos)
        body_end = pos + 8 + length
        if length > 0x7FFFFFFF or body_end + 4 > end:
            raise damaged(image, cut_short())
        parts += 1
        if parts > MAX_IMAGE_PARTS:
            raise too_many(image, _('is made of more than {most} parts').format(most=MAX_IMAGE_PARTS))
        body = memoryview(data)[pos + 8:body_end]
        if kind in PNG_CRITICAL or kind == b'fdAT':
            if zlib.crc32(body, zlib.crc32(kind)) != struct.unpack_from('>I', data, body_end)[0]:
                raise damaged(image, _('a checksum does not match'))
        if kind == b'IDAT':
            seen_idat = True
            if not pixels.ended:  # what follows the end of the stream, libpng leaves alone
                pixels.feed(body)
        elif kind == b'IEND':
            break
        elif kind == b'acTL' and length >= 4 and struct.unpack_from('>I', body)[0] > MAX_FRAMES:
            raise too_many(image, _('has more than {most} frames').format(most=MAX_FRAMES))
        elif kind == b'fcTL':
            frames += 1
            if frames > MAX_FRAMES:
                raise too_many(image, _('has more than {most} frames').format(most=MAX_FRAMES))
        elif kind in (b'zTXt', b'iCCP', b'iTXt'):
            text_left -= png_text_size(kind, bytes(body), text_left, image)
        pos = body_end + 4
    if not seen_idat or not pixels.ended or pixels.size < need:
        raise damaged(image, _('its pixel data is cut short'))
    return Structure('image/png', width, height, max(1, frames))


def png_text_size(kind: bytes, body: bytes, most: int, image: str) -> int:
    """The inflated size of a zTXt, iCCP or (compressed) iTXt chunk's data; refused past most."""
    name, _sep, rest = body.partition(b'\x00')
    if kind == b'iTXt':
        if len(rest) < 2 or rest[0] != 1:  # not compressed
            return 0
        rest = rest[2:].split(b'\x00', 2)[-1]  # after the language tag and the translated keyword
    else:
        rest = rest[1:]  # the compression method
    inflater = Inflater(max(0, most), lambda: too_many(image, _('holds text that inflates to more than {megabytes} '
                                                               'MB').format(megabytes=MAX_PNG_TEXT // 2 ** 20)),
                        lambda: damaged(image, _('its text cannot be unpacked')))
    inflater.feed(rest)
    return inflater.size


JPEG_SCAN_END = re.compile(rb'\xff[^\x00\xd0-\xd7\xff]')  # the marker after a scan's coded data
JPEG_FILL = re.compile(rb'\xff+')
JPEG_PROGRESSIVE = frozenset((0xC2, 0xC6, 0xCA, 0xCE))


def jpeg_structure(data: bytes, image: str) -> Structure:
    pos, end, parts, scans = 2, len(data), 0, 0
    frame: tuple[int, int, bool] | None = None
    while True:
        if pos + 2 > end:
            raise damaged(image, cut_short())
        if data[pos] != 0xFF:
            raise damaged(image, _('its parts are not where the format puts them'))
        # fill bytes before a marker (data[pos] is one, so it matches)
        pos = cast('re.Match[bytes]', JPEG_FILL.match(data, pos)).end() - 1
        if pos + 2 > end:
            raise damaged(image, cut_short())
        marker = data[pos + 1]
        parts += 1
        if parts > MAX_IMAGE_PARTS:
            raise too_many(image, _('is made of more than {most} parts').format(most=MAX_IMAGE_PARTS))
        if marker == 0xD9:  # the end of the image
            break
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers that carry nothing
            pos += 2
            continue
        if marker == 0xD8 or pos + 4 > end:
            raise damaged(image, cut_short() if marker != 0xD8 else _('it starts twice'))
        length = struct.unpack_from('>H', data, pos + 2)[0]
        next_pos = pos + 2 + length
        if length < 2 or next_pos > end:
            raise damaged(image, cut_short())
        if marker in SOF_MARKERS:
            if frame is not None:
                raise damaged(image, _('it has two frame headers'))
            frame = jpeg_frame(data[pos + 4:next_pos], marker in JPEG_PROGRESSIVE, image)
        elif marker == 0xDA:
            if frame is None:
                raise damaged(image, _('its image data comes before its header'))
            scans += 1
            if scans > MAX_JPEG_SCANS:
                raise too_many(image, _('is a JPEG of more than {most} scans').format(most=MAX_JPEG_SCANS))
            found = JPEG_SCAN_END.search(data, next_pos)
            if found is None:
                raise damaged(image, cut_short())
            next_pos = found.start()
        pos = next_pos
    if frame is None:
        raise NotAnImage(_('{image} is not an image Book AI can read (PNG, JPEG, WebP or GIF).').format(image=image))
    if not scans:
        raise damaged(image, _('it has no image data'))
    width, height, progressive = frame
    return Structure('image/jpeg', width, height, 1, scans, progressive)


def jpeg_frame(body: bytes, progressive: bool, image: str) -> tuple[int, int, bool]:
    """(width, height, progressive) of a JPEG frame header, its components and, for a progressive
    JPEG, the coefficients its decoder keeps, checked."""
    if len(body) < 6:
        raise damaged(image, cut_short())
    height, width, count = struct.unpack_from('>HHB', body, 1)
    if height == 0:  # its height would come after the first scan (DNL): no decoder Book AI uses
        raise NotAnImage(_('{image} does not say its height in its header.').format(image=image))
    check_pixels(image, width, height)
    if not 1 <= count <= 4 or len(body) < 6 + 3 * count:
        raise damaged(image, _('its header holds values the format does not have'))
    sampling = [(body[7 + 3 * i] >> 4, body[7 + 3 * i] & 15) for i in range(count)]
    if any(not (1 <= h <= 4 and 1 <= v <= 4) for h, v in sampling):
        raise damaged(image, _('its header holds values the format does not have'))
    if progressive:
        hmax, vmax = max(h for h, v in sampling), max(v for h, v in sampling)
        across, down = -(-width // (8 * hmax)), -(-height // (8 * vmax))  # MCUs
        coefficients = sum(across * h * down * v for h, v in sampling) * 64 * 2
        if coefficients > MAX_JPEG_COEFFICIENT_BYTES:
            raise too_many(image, _('is a progressive JPEG whose decoder would keep {megabytes} MB while it reads '
                                    'it; Book AI allows {most} MB').format(
                megabytes=coefficients // 2 ** 20, most=MAX_JPEG_COEFFICIENT_BYTES // 2 ** 20))
    return width, height, progressive


def gif_structure(data: bytes, image: str) -> Structure:
    width, height, flags = struct.unpack_from('<HHB', data, 6)
    check_pixels(image, width, height)
    pos, end, parts, frames = 13, len(data), 0, 0
    if flags & 0x80:
        pos += 3 << ((flags & 7) + 1)
    while True:
        if pos >= end:
            raise damaged(image, cut_short())
        kind = data[pos]
        if kind == 0x3B:  # the trailer
            break
        if kind == 0x21:  # an extension: its label, then sub-blocks
            pos += 2
        elif kind == 0x2C:  # an image: its descriptor, colour table, LZW code size, then sub-blocks
            frames += 1
            if frames > MAX_FRAMES:
                raise too_many(image, _('has more than {most} frames').format(most=MAX_FRAMES))
            fw, fh, fflags = struct.unpack_from('<HHB', data, pos + 5)
            check_pixels(image, max(fw, 1), max(fh, 1))
            pos += 10
            if fflags & 0x80:
                pos += 3 << ((fflags & 7) + 1)
            if pos >= end or not 2 <= data[pos] <= 11:
                raise damaged(image, cut_short() if pos >= end else _('its image data cannot be unpacked'))
            pos += 1
        else:
            raise damaged(image, _('its parts are not where the format puts them'))
        while True:  # sub-blocks: a length byte, that many bytes, up to a zero length
            if pos >= end:
                raise damaged(image, cut_short())
            size = data[pos]
            pos += 1 + size
            parts += 1
            if parts > MAX_IMAGE_PARTS:
                raise too_many(image, _('is made of more than {most} parts').format(most=MAX_IMAGE_PARTS))
            if not size:
                break
    if not frames:
        raise damaged(image, _('it has no image data'))
    return Structure('image/gif', width, height, frames)


def webp_structure(data: bytes, image: str) -> Structure:
    size = webp_size(data)
    if size is None:
        raise damaged(image, _('its header is not where the format puts it'))
    width, height = size
    check_pixels(image, width, height)
    end = 8 + struct.unpack_from('<I', data, 4)[0]
    if end > len(data):  # the file is shorter than its RIFF header says
        raise damaged(image, cut_short())
    pos, parts, frames, pictures = 12, 0, 0, 0
    while pos + 8 <= end:
        kind = data[pos:pos + 4]
        length = struct.unpack_from('<I', data, pos + 4)[0]
        if pos + 8 + length > end:
            raise damaged(image, cut_short())
        parts += 1
        if parts > MAX_IMAGE_PARTS:
            raise too_many(image, _('is made of more than {most} parts').format(most=MAX_IMAGE_PARTS))
        if kind in (b'VP8 ', b'VP8L'):
            pictures += 1
        elif kind == b'ANMF':
            frames += 1
            if frames > MAX_FRAMES:
                raise too_many(image, _('has more than {most} frames').format(most=MAX_FRAMES))
            if length < 16:
                raise damaged(image, cut_short())
            fw = int.from_bytes(data[pos + 14:pos + 17], 'little') + 1
            fh = int.from_bytes(data[pos + 17:pos + 20], 'little') + 1
            if fw > width or fh > height:
                raise damaged(image, _('a frame is larger than the image'))
        pos += 8 + length + (length & 1)
    if not pictures and not frames:
        raise damaged(image, _('it has no image data') if pos >= end else cut_short())
    return Structure('image/webp', width, height, max(1, frames))

# }}}


# decoding, in calibre's worker process {{{

# Book AI decodes an image only in calibre's worker process (core.isolated.run), never in calibre's
# own: through gui/image_decoding.py's decode_in_worker, which Qt's readers run in. One worker takes
# a few images at once (at most BATCH_IMAGES, BATCH_BYTES of them), each DECODE_SECONDS of time
# past the worker's start for the first, DECODE_SECONDS_EACH for each more, and the memory
# core.isolated.WORKER_MEMORY; a few that do not finish together are tried one by one, so one bad
# image costs only itself. An image that passed structure() takes a fraction of a second.
DECODE_SECONDS = 6.0
DECODE_SECONDS_EACH = 2.0
BATCH_IMAGES = 16
BATCH_BYTES = 48 * 2 ** 20
COVER_QUALITY = 90                    # of the JPEG Book AI writes for the library, as calibre writes covers
DEFAULT_COVER_BOX = (1650, 2200)      # calibre's maximum_cover_size tweak, as it ships


@dataclass(frozen=True)
class Pixels:
    """A picture Book AI decoded itself: rows of RGB (3 bytes a pixel, `stride` bytes a row), as
    the windows make a QImage of them (gui.image_decoding.qimage) without any decoder."""
    width: int
    height: int
    stride: int
    data: bytes = field(repr=False)

    @property
    def whole(self) -> bool:
        return (0 < self.width <= limits.MAX_IMAGE_SIDE and 0 < self.height <= limits.MAX_IMAGE_SIDE
                and self.stride >= 3 * self.width and len(self.data) >= self.stride * self.height)


@dataclass(frozen=True)
class Decoded:
    """One image as Book AI decoded it (decode_images()): problem, a sentence, when it could not
    be; else (cover) jpeg, Book AI's own baseline JPEG of width x height, within the library's
    largest cover size, and (side) pixels, the picture at most that many pixels a side."""
    problem: str = ''
    jpeg: bytes = field(default=b'', repr=False)
    width: int = 0
    height: int = 0
    pixels: Pixels | None = None

    @property
    def ok(self) -> bool:
        return not self.problem


Source = bytes | str | Callable[[], bytes | None] | None


def cover_box() -> tuple[int, int]:
    """The largest cover calibre keeps in a library (its maximum_cover_size tweak), as calibre
    would scale a larger one down: Book AI's new covers are made no larger."""
    try:
        from calibre.utils.config_base import tweaks
        width, height = tweaks['maximum_cover_size']
        width, height = int(width), int(height)
    except Exception:  # a tweak that is not a size: calibre's own default
        return DEFAULT_COVER_BOX
    if not (16 <= width <= limits.MAX_IMAGE_SIDE and 16 <= height <= limits.MAX_IMAGE_SIDE):
        return DEFAULT_COVER_BOX
    return width, height


def loaded(source: Source, image: str) -> bytes | None:
    """The bytes of a source: bytes as they are, a path's file (a regular file only, opened
    without waiting, at most limits.MAX_IMAGE_BYTES), what a callable gives; None for none.
    Raises NotAnImage or TooLarge in a sentence."""
    try:
        data = source() if callable(source) else source
        if isinstance(data, str):
            data = read_regular(data, limits.MAX_IMAGE_BYTES)
    except TooBig:
        raise TooLarge(_('{image} is larger than {megabytes:g} MB, the most Book AI accepts.').format(
            image=image, megabytes=limits.MAX_IMAGE_BYTES / 2 ** 20)) from None
    except NotRegular:
        raise NotAnImage(_('{image} is not a file (a pipe, a device or a folder is in its place).').format(
            image=image)) from None
    except OSError as e:
        raise NotAnImage(_('{image} could not be read: {reason}').format(image=image, reason=e.strerror or e)) from None
    if data is None:
        return None
    return bytes(data)


class Abort(Protocol):
    """What stops decode_images(): a threading.Event, or anything else with is_set()."""

    def is_set(self) -> bool: ...


def decode_images(sources: list[Source], names: list[str], cover: bool, side: int = 0, abort: 'Abort | None' = None,
                  started: Callable[[int], object] | None = None) -> list[Decoded | None]:
    """Each source (bytes, a file's path, a callable that gives the bytes, None for none) decoded
    by Book AI itself: read (loaded()), its structure checked here (structure()), then decoded in
    calibre's worker process and written anew (cover: a JPEG for the library; side: pixels for the
    windows). names: each one's name in a sentence ("The new cover"). One Decoded each, with a
    sentence when it cannot be used; None for a source that is None. From a thread or the command
    line, never the GUI thread. abort: anything with is_set(), which stops the worker (what was
    not decoded then says so)."""
    from calibre_plugins.bookai.core import isolated  # on use: it imports calibre's worker machinery
    box = cover_box() if cover else None
    out: list[Decoded | None] = [None] * len(sources)
    batch: list[tuple[int, bytes, str]] = []

    def run(jobs: list[tuple[int, bytes, str]]) -> None:
        if abort is not None and abort.is_set():
            for i, _data, name in jobs:
                out[i] = Decoded(_('{image} was not decoded: stopped.').format(image=name))
            return
        seconds = DECODE_SECONDS + DECODE_SECONDS_EACH * (len(jobs) - 1)
        try:
            got = isolated.run('gui.image_decoding', 'decode_in_worker', (
                [(data, name) for _i, data, name in jobs], box, side, COVER_QUALITY), seconds, abort=abort,
                started=started)
        except isolated.Refused as e:
            if len(jobs) > 1:  # one by one: the one that could not be is told, the others are shown
                for job in jobs:
                    run([job])
                return
            i, _data, name = jobs[0]
            out[i] = Decoded(_('{image} could not be decoded. {why}').format(image=name, why=e))
            return
        if not isinstance(got, list) or len(got) != len(jobs):  # stopped
            got = [{'problem': _('{image} was not decoded: stopped.').format(image=name)} for _i, _d, name in jobs]
        for (i, _data, name), result in zip(jobs, got):
            out[i] = checked_result(result, name, box, side)

    size = 0
    for i, (source, name) in enumerate(zip(sources, names)):
        try:
            data = loaded(source, name)
            if data is None:
                continue
            structure(data, name)
        except ProviderError as e:
            out[i] = Decoded(str(e))
            continue
        if batch and (len(batch) >= BATCH_IMAGES or size + len(data) > BATCH_BYTES):
            run(batch)
            batch, size = [], 0
        batch.append((i, data, name))
        size += len(data)
    if batch:
        run(batch)
    return out


def checked_result(result: object, name: str, box: tuple[int, int] | None, side: int) -> Decoded:
    """What the worker sent back for one image, as a Decoded, once it is seen to be what Book AI
    asked for: a whole baseline JPEG of the size said, within the box; pixels within side."""
    unusable = Decoded(_('{image} could not be decoded.').format(image=name))
    if not isinstance(result, dict):
        return unusable
    problem = result.get('problem')
    if problem:
        return Decoded(said(problem, 1000) or unusable.problem)
    jpeg, width, height = result.get('jpeg', b''), result.get('width'), result.get('height')
    if not (isinstance(width, int) and isinstance(height, int) and isinstance(jpeg, bytes)):
        return unusable
    if box is not None:
        try:
            found = structure(jpeg, name)
        except ProviderError:
            return unusable
        if (found.mime, found.width, found.height, found.progressive) != ('image/jpeg', width, height, False) or (
                width > box[0] or height > box[1]):
            return unusable
    pixels = None
    if side > 0:
        p = result.get('pixels')
        if not (isinstance(p, tuple) and len(p) == 4 and all(isinstance(v, int) for v in p[:3])
                and isinstance(p[3], bytes)):
            return unusable
        pixels = Pixels(*p)
        if not pixels.whole or max(pixels.width, pixels.height) > side:
            return unusable
    return Decoded('', jpeg, width, height, pixels)

# }}}
