# License: GPLv3 Copyright: the Book AI developers
"""Images the tests make: a real PNG written by hand, and an answer of OpenAI's images API
shape ({"created", "data": [{"b64_json"}]}) carrying one, as the servers that speak it send it."""

import base64
import struct
import zlib


def png(width: int, height: int, grey: int = 0x80) -> bytes:
    """A real PNG of width x height grey pixels, written by hand (zlib and CRCs as the format wants)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
    rows = b''.join(b'\x00' + bytes([grey]) * width for _ in range(height))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))


def b64(data: bytes) -> str:
    """data in base64, as text."""
    return base64.b64encode(data).decode()


def images_answer(data: bytes) -> dict:
    """The body of an images API answer carrying data (b64_json), as OpenAI documents it."""
    return {'created': 1, 'data': [{'b64_json': b64(data)}]}
