# License: GPLv3 Copyright: the Book AI developers
"""Images the tests make: a real PNG written by hand, and an answer of OpenAI's images API
shape ({"created", "data": [{"b64_json"}]}) carrying one, as the servers that speak it send it.

And the crafted images of issue 26, written byte by byte as their formats lay them out, small on
disk and made in a moment (no image library): a PNG whose pixel data is damaged (89 bytes), a PNG
whose zlib stream inflates to far more than its pixels need (a decompression bomb: 28 GB of zeros
in 29 MB), a PNG of 8192x8192 (64 KB), progressive JPEGs of any size with a scan repeated any
number of times (each pass over every block of the image costs a decoder time), plain
progressive JPEGs (grey, RGB, CMYK), animated GIFs, APNGs and WebPs of many frames."""

import base64
import functools
import struct
import zlib


def chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: its length, type, data and CRC."""
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def ihdr(width: int, height: int, depth: int = 8, colour: int = 0, interlace: int = 0) -> bytes:
    return chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, depth, colour, 0, 0, interlace))


def png(width: int, height: int, grey: int = 0x80) -> bytes:
    """A real PNG of width x height grey pixels, written by hand (zlib and CRCs as the format wants)."""
    rows = b''.join(b'\x00' + bytes([grey]) * width for _ in range(height))
    return PNG_SIGNATURE + ihdr(width, height) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')


def b64(data: bytes) -> str:
    """data in base64, as text."""
    return base64.b64encode(data).decode()


def images_answer(data: bytes) -> dict:
    """The body of an images API answer carrying data (b64_json), as OpenAI documents it."""
    return {'created': 1, 'data': [{'b64_json': b64(data)}]}


# crafted PNGs {{{

def png_damaged() -> bytes:
    """An 89-byte PNG of 16x16 grey pixels whose header is whole (it sniffs as a PNG, its size
    read) but whose pixel data is not: its zlib stream changed in the middle and cut to 32
    bytes (the chunk's CRC made to match, so only the data is wrong). Qt cannot decode it."""
    rows = b''.join(b'\x00' + bytes(range(i, i + 16)) for i in range(16))
    stream = bytearray(zlib.compress(rows, 9)[:32])
    for i in range(4, 14):
        stream[i] ^= 0x5A
    return PNG_SIGNATURE + ihdr(16, 16) + chunk(b'IDAT', bytes(stream)) + chunk(b'IEND', b'')


@functools.lru_cache(maxsize=4)
def png_of_side(width: int, height: int) -> bytes:
    """A whole, valid grey PNG of width x height (8192x8192 is 64 MB of pixels in 64 KB)."""
    row = b'\x00' * (width + 1)
    z = zlib.compressobj(9)
    parts = []
    step = max(1, (4 << 20) // len(row))
    for y in range(0, height, step):
        parts.append(z.compress(row * min(step, height - y)))
    parts.append(z.flush())
    return PNG_SIGNATURE + ihdr(width, height) + chunk(b'IDAT', b''.join(parts)) + chunk(b'IEND', b'')


def adler32_of_zeros(count: int) -> int:
    """zlib's Adler-32 of count zero bytes, worked out (a = 1 throughout, b grows by 1 a byte)."""
    return ((count % 65521) << 16) | 1


@functools.lru_cache(maxsize=4)
def png_bomb(width: int = 64, height: int = 64, extra: int = 28 * 10 ** 9) -> bytes:
    """A PNG of width x height black pixels (grey, 8 bits) whose zlib stream goes on with `extra`
    more zero bytes: a whole, valid stream (Adler-32 and CRCs right) that inflates to
    height x (width + 1) + extra bytes. 28 GB of zeros take 29 MB. Made from one deflate block of
    a million zeros, flushed to a byte boundary and repeated."""
    total = height * (width + 1) + extra
    block_size = 1 << 20
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = z.compress(b'\x00' * block_size) + z.flush(zlib.Z_FULL_FLUSH)
    blocks, rest = divmod(total, block_size)
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail = z.compress(b'\x00' * rest) + z.flush(zlib.Z_FINISH)
    stream = b'\x78\xda' + block * blocks + tail + struct.pack('>I', adler32_of_zeros(total))
    idat = b''.join(chunk(b'IDAT', stream[i:i + (1 << 20)]) for i in range(0, len(stream), 1 << 20))
    return PNG_SIGNATURE + ihdr(width, height) + idat + chunk(b'IEND', b'')


def png_short() -> bytes:
    """A PNG whose zlib stream ends whole but with fewer bytes than its pixels need."""
    rows = b''.join(b'\x00' + b'\x40' * 32 for _ in range(16))  # 16 rows of a 32x32 image
    return PNG_SIGNATURE + ihdr(32, 32) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')


def apng(width: int, height: int, frames: int) -> bytes:
    """An animated PNG of `frames` frames (acTL, then fcTL and fdAT for each after the first)."""
    row = b'\x00' + b'\x60' * width
    data = zlib.compress(row * height)
    out = [PNG_SIGNATURE, ihdr(width, height), chunk(b'acTL', struct.pack('>II', frames, 0))]
    seq = 0
    for f in range(frames):
        out.append(chunk(b'fcTL', struct.pack('>IIIIIHHBB', seq, width, height, 0, 0, 1, 10, 0, 0)))
        seq += 1
        if f == 0:
            out.append(chunk(b'IDAT', data))
        else:
            out.append(chunk(b'fdAT', struct.pack('>I', seq) + data))
            seq += 1
    out.append(chunk(b'IEND', b''))
    return b''.join(out)


def png_with_text_bomb(inflated: int) -> bytes:
    """A small valid PNG with a zTXt chunk whose text inflates to `inflated` bytes."""
    good = png(8, 8)
    text = chunk(b'zTXt', b'Comment\x00\x00' + zlib.compress(b'a' * inflated, 9))
    return good[:33] + text + good[33:]

# }}}


# crafted JPEGs {{{

class Bits:
    """Bits written most significant first, as JPEG's entropy-coded data has them (a 0xFF byte
    followed by a stuffed 0x00)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value: int, count: int) -> None:
        self.acc = (self.acc << count) | (value & ((1 << count) - 1))
        self.n += count
        while self.n >= 8:
            self.n -= 8
            byte = (self.acc >> self.n) & 0xFF
            self.out.append(byte)
            if byte == 0xFF:
                self.out.append(0)
        self.acc &= (1 << self.n) - 1

    def zeros(self, count: int) -> None:
        """count zero bits, fast."""
        if self.n == 0 and count >= 8:
            self.out += bytes(count // 8)
            count %= 8
        while count:
            step = min(count, 16)
            self.put(0, step)
            count -= step

    def done(self) -> bytes:
        if self.n:
            self.put((1 << (8 - self.n)) - 1, 8 - self.n)  # padded with one bits
        return bytes(self.out)


def segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack('>H', len(body) + 2) + body


# DC table 0: category 0 only, the one-bit code 0; AC table 0: EOB0 to EOB14 (0x00, 0x10, ... 0xE0),
# fifteen four-bit codes 0000 to 1110 (canonical Huffman: EOBn's code is n)
DHT_DC = segment(0xC4, bytes([0x00]) + bytes([1] + [0] * 15) + bytes([0]))
DHT_AC = segment(0xC4, bytes([0x10]) + bytes([0, 0, 0, 15] + [0] * 12) + bytes(range(0x00, 0xF0, 0x10)))
DQT = segment(0xDB, bytes([0]) + bytes([1] * 64))
ADOBE_CMYK = segment(0xEE, b'Adobe' + struct.pack('>HHHB', 100, 0, 0, 0))  # transform 0: CMYK as it is


def eob_runs(blocks: int) -> bytes:
    """The entropy-coded data of an AC scan in which every block of `blocks` has no coefficient:
    end-of-band runs of up to 32767 blocks each."""
    bits = Bits()
    while blocks:
        run = min(blocks, 32767)
        r = run.bit_length() - 1
        bits.put(r, 4)
        if r:
            bits.put(run - (1 << r), r)
        blocks -= run
    return bits.done()


def sos(components: list[int], start: int, end: int) -> bytes:
    body = bytes([len(components)]) + b''.join(bytes([c, 0x00]) for c in components) + bytes([start, end, 0])
    return segment(0xDA, body)


@functools.lru_cache(maxsize=8)
def jpeg_progressive(width: int, height: int, components: int = 3, repeats: int = 0) -> bytes:
    """A whole progressive JPEG (SOF2) of width x height, every component sampled 1x1: a DC scan
    of all components (every block grey), one AC scan per component; then the first AC scan
    repeated `repeats` times more (each repeat costs the decoder a pass over every block of the
    image, for a few bytes). components: 1 (grey), 3 (YCbCr) or 4 (CMYK, with Adobe's marker)."""
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    ids = list(range(1, components + 1))
    sof = segment(0xC2, bytes([8]) + struct.pack('>HH', height, width) + bytes([components]) + b''.join(
        bytes([c, 0x11, 0]) for c in ids))
    out = [b'\xff\xd8', ADOBE_CMYK if components == 4 else b'', DQT, sof, DHT_DC, DHT_AC]
    dc = Bits()
    dc.zeros(blocks * components)  # each block: DC difference of category 0, the code 0
    out += [sos(ids, 0, 0), dc.done()]
    ac = eob_runs(blocks)
    for c in ids:
        out += [sos([c], 1, 63), ac]
    for _ in range(repeats):
        out += [sos([1], 1, 63), ac]
    out.append(b'\xff\xd9')
    return b''.join(out)

# }}}


# crafted GIFs and WebPs {{{

def gif(width: int, height: int, frames: int = 1) -> bytes:
    """A GIF of `frames` frames of width x height, each one colour (2-colour table, LZW data of
    a clear code then end)."""
    head = b'GIF89a' + struct.pack('<HHBBB', width, height, 0x80, 0, 0) + b'\x00\x00\x00\xff\xff\xff'
    # LZW, minimum code size 2: clear (4), end (5), as 3-bit codes: 100 101 -> packed LSB first
    lzw = bytes([2, 2, 0x2C, 0x00, 0])  # code size 2; one sub-block of 2 bytes; end
    frame = b'\x2c' + struct.pack('<HHHHB', 0, 0, width, height, 0) + lzw
    return head + frame * frames + b'\x3b'


def riff(chunks: list[tuple[bytes, bytes]]) -> bytes:
    body = b'WEBP' + b''.join(k + struct.pack('<I', len(d)) + d + (b'\x00' if len(d) % 2 else b'') for k, d in chunks)
    return b'RIFF' + struct.pack('<I', len(body)) + body


# a real 1x1 lossless WebP's VP8L payload (browsers' feature test)
VP8L_1X1 = base64.b64decode('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==')[20:33]


def webp_animated(width: int, height: int, frames: int) -> bytes:
    """An animated WebP (VP8X, ANIM, then `frames` ANMF frames of 1x1 pixels each)."""
    vp8x = bytes([0x02, 0, 0, 0]) + (width - 1).to_bytes(3, 'little') + (height - 1).to_bytes(3, 'little')
    anim = b'\x00\x00\x00\x00' + b'\x00\x00'
    anmf = (b'\x00' * 6 + (0).to_bytes(3, 'little') + (0).to_bytes(3, 'little') + (100).to_bytes(3, 'little')
            + b'\x00' + b'VP8L' + struct.pack('<I', len(VP8L_1X1)) + VP8L_1X1 + b'\x00')
    return riff([(b'VP8X', vp8x), (b'ANIM', anim)] + [(b'ANMF', anmf)] * frames)

# }}}
