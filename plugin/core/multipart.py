# License: GPLv3 Copyright: the Book AI developers
"""multipart/form-data bodies (RFC 7578), as OpenAI's /images/edits takes an image and its prompt.

The boundary is random (os.urandom), so that no byte of an image can end a part early by
chance; a part whose content happens to hold it anyway is refused (ValueError), not sent
broken. Field names and file names are quoted as browsers quote them (WHATWG's
multipart/form-data encoding): a double quote becomes %22, CR and LF become %0D and %0A,
so that nothing the caller passes can start a header or a part of its own. Text is UTF-8.
"""

import os
from collections.abc import Iterable

CRLF = b'\r\n'


def quoted(name: str) -> str:
    """name as it may stand between the double quotes of a Content-Disposition header."""
    return name.replace('"', '%22').replace('\r', '%0D').replace('\n', '%0A')


def content_type_value(value: str) -> str:
    """A part's Content-Type, on one line (whatever the caller gave)."""
    return ''.join(ch for ch in value if ch.isprintable() and ch not in '\r\n') or 'application/octet-stream'


def encode_multipart(fields: Iterable[tuple[str, str]] = (),
                     files: Iterable[tuple[str, str, str, bytes]] = ()) -> tuple[bytes, str]:
    """(body, Content-Type header value) for fields (name, text) and files (name, file name,
    content type, bytes), in that order. ValueError if a part's content holds the boundary."""
    boundary = '-' * 12 + 'BookAI' + os.urandom(16).hex()
    delimiter = b'--' + boundary.encode('ascii')
    parts = []
    for name, value in fields:
        content = str(value).encode('utf-8')
        head = f'Content-Disposition: form-data; name="{quoted(name)}"'.encode()
        parts.append((head, content))
    for name, filename, mime, data in files:
        head = (f'Content-Disposition: form-data; name="{quoted(name)}"; filename="{quoted(filename)}"\r\n'
                f'Content-Type: {content_type_value(mime)}').encode()
        parts.append((head, bytes(data)))
    body = []
    for head, content in parts:
        if delimiter in content:
            raise ValueError('a part of the form holds its boundary')
        body += [delimiter, CRLF, head, CRLF, CRLF, content, CRLF]
    body += [delimiter, b'--', CRLF]
    return b''.join(body), f'multipart/form-data; boundary={boundary}'
