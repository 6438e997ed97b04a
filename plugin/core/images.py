# License: GPLv3 Copyright: the Book AI developers
"""An image a service made, checked before anything else sees it.

Every image from outside (a cover an image model made, whatever the wire format) comes in
through image_from_bytes() or image_from_base64(): bounded in size (limits.MAX_IMAGE_BYTES,
limits.MAX_IMAGE_SIDE) and recognised from its own first bytes as PNG, JPEG, WebP or GIF,
whatever the service says it is. Its width and height are read from its header, without
decoding it: no Qt and no image library here, so the core stays testable without a display.

ImageResult is what a provider's generate_image() gives back: the image, the model that
made it, its usage and cost (unknown, never free, when nobody said), and anything the
service said alongside (a revised prompt, a few words of text).
"""

import base64
import binascii
import re
import struct
from dataclasses import dataclass, field

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import ProtocolError, ProviderError, TooLarge
from calibre_plugins.bookai.core.messages import Usage
from calibre_plugins.bookai.core.web_links import shown

load_translations()

MIME_TYPES = ('image/png', 'image/jpeg', 'image/webp', 'image/gif')
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
    text = shown(text[:most * 4])
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
    """data as an Image, its type and size read from its first bytes. Raises TooLarge over
    limits.MAX_IMAGE_BYTES or limits.MAX_IMAGE_SIDE, NotAnImage (with provider's name, in
    words) when it is no PNG, JPEG, WebP or GIF."""
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
    return Image(bytes(data), mime, width, height)


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


def images_api_result(data: object, provider: str, model: str, usage: Usage | None = None) -> ImageResult:
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
            return 'image/png', struct.unpack('>II', data[16:24])
        if data.startswith(b'\xff\xd8'):
            return 'image/jpeg', jpeg_size(data)
        if data[:4] == b'RIFF' and data[8:12] == b'WEBP':
            return 'image/webp', webp_size(data)
        if data[:6] in (b'GIF87a', b'GIF89a'):
            return 'image/gif', struct.unpack('<HH', data[6:10])
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
