# License: GPLv3 Copyright: the Book AI developers
"""The attacks' bytes, made by the battery itself (never by the plugin's code): JSON changed at
every level, text full of escapes, the key in every encoding a service may echo it in, numbers
no usage has, addresses that lie, templates and files that are code, books that explode. The
crafted images are helpers.images' (issue 26's, made byte by byte).

Everything here is plain data made in the test process, before a case's process starts."""

import base64
import copy
import html
import json
import math
import pickle
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from helpers.books import CONTAINER, XHTML, opf

MB = 1 << 20

# the key a case's provider is set up with, echoed back by hostile peers
KEY = 'sk-Hostile-Key-0123456789abcDEF'
# a password in a URL's userinfo: shown nowhere
PASSWORD = 'hunter2-Pass-4567'

# JSON {{{

Path_ = tuple  # a path into a JSON value: keys and indexes


def paths(value: object, at: Path_ = ()) -> Iterator[Path_]:
    """Every path in value, the value itself first (()), containers before what they hold."""
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, at + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, at + (i,))


def get(value: object, at: Path_) -> object:
    for step in at:
        value = value[step]
    return value


def replaced(value: object, at: Path_, new: object) -> object:
    """A copy of value with what is at path at replaced by new."""
    if not at:
        return new
    out = copy.deepcopy(value)
    parent = get(out, at[:-1])
    parent[at[-1]] = new
    return out


# one of each JSON type, and the empty containers
JSON_TYPES = {'null': None, 'false': False, 'zero': 0, 'float': -1.5, 'empty text': '', 'text': 'x',
              'empty list': [], 'list': [1, 'x'], 'empty object': {}, 'object': {'x': 1}}


def kind(value: object) -> str:
    return {type(None): 'null', bool: 'bool', int: 'number', float: 'number', str: 'text', list: 'list',
            tuple: 'list', dict: 'object'}[type(value)]


def wrong_types(value: object, most: int = 400) -> list[tuple[str, object]]:
    """(where and what, value changed) for every path of value and every JSON type it is not: the
    value with that one place of the wrong type. At most `most`, spread over the paths."""
    out = []
    for at in paths(value):
        here = get(value, at)
        for name, new in JSON_TYPES.items():
            if kind(new) != kind(here) or (name.startswith('empty') and here):
                out.append((f'{"/".join(map(str, at)) or "(the whole)"} as {name}', replaced(value, at, new)))
    if len(out) > most:
        step = len(out) / most
        out = [out[int(i * step)] for i in range(most)]
    return out


def strings_replaced(value: object, change) -> object:
    """value with every string in it (values, and the keys of objects but the ones a format
    needs) given to change(text)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [strings_replaced(v, change) for v in value]
    if isinstance(value, dict):
        return {k: strings_replaced(v, change) for k, v in value.items()}
    return value


def numbers_replaced(value: object, new: object) -> object:
    """value with every number in it (not booleans) replaced by new."""
    if type(value) in (int, float):
        return new
    if isinstance(value, list):
        return [numbers_replaced(v, new) for v in value]
    if isinstance(value, dict):
        return {k: numbers_replaced(v, new) for k, v in value.items()}
    return value


def dumps(value: object) -> bytes:
    """JSON as a hostile server may write it: NaN and Infinity allowed, big integers as they are."""
    return json.dumps(value, allow_nan=True).encode()


DEPTH = 100_000
DEEP = b'[' * DEPTH + b']' * DEPTH  # JSON nested 100,000 levels: 200 KB


def deep_in(value: object) -> bytes:
    """value's JSON with its first string replaced by JSON nested DEPTH levels (or, with no
    string, the whole)."""
    marker = '\ue000deep\ue000'
    done = [False]

    def first(text):
        if done[0]:
            return text
        done[0] = True
        return marker
    changed = strings_replaced(value, first)
    raw = dumps(changed)
    quoted = dumps(marker)
    return raw.replace(quoted, DEEP, 1) if done[0] else DEEP


def tiny_values(size: int, unit: bytes = b'{},', head: bytes = b'{"data": [', tail: bytes = b'{}]}') -> bytes:
    """JSON of size bytes at most: one list of millions of tiny values (empty objects)."""
    count = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail

# }}}


# text that steers a terminal, and addresses that lie {{{

# OSC 52 (writes the clipboard), CSI 2J (clears the screen), a colour, CSI as its C1 byte, a carriage
# return and a backspace (overwrite what was shown), BEL, NUL, the right-to-left override
ESCAPES = '\x1b]52;c;aG9zdGlsZQ==\x07\x1b[2J\x1b[31m\x9b1m\r\x08\x07\x00\u202e'
# what must never reach the reader raw: C0 but line feed and tab, DEL, C1, the marks that reorder text
RAW_CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]')


def with_escapes(text: str) -> str:
    return f'{text}{ESCAPES}end'


# hosts that look like others: Cyrillic letters among Latin ones ("раураl.com" is p-a-y-p-a-l in
# Cyrillic but its last letter), a whole-script confusable, Greek omicron in "gοogle"
LOOKALIKE_HOSTS = ('раураl.com', 'exаmple.org', 'gοogle.com')
LOOKALIKE_URLS = tuple(f'https://{h}/login' for h in LOOKALIKE_HOSTS)
USERINFO_URL = f'https://reader:{PASSWORD}@example.org/page'


def lookalike_shown(text: str) -> list[str]:
    """The look-alike hosts text shows in their Unicode form (a click would open another site)."""
    return [h for h in LOOKALIKE_HOSTS if h in text or h.split('.')[0] in text]

# }}}


# the key, echoed {{{

def key_forms(key: str = KEY) -> dict[str, str]:
    """The key in every form a careless or hostile service may echo it in."""
    raw = key.encode()
    return {
        'raw': key,
        'upper case': key.upper(),
        'lower case': key.lower(),
        'bearer, lower case': f'bearer {key}'.lower(),
        'percent, - as %2D': key.replace('-', '%2D'),
        'percent, every byte': ''.join(f'%{b:02X}' for b in raw),
        'percent, every byte, lower hex': ''.join(f'%{b:02x}' for b in raw),
        'JSON \\u per character (as text)': ''.join(f'\\u{ord(c):04x}' for c in key),
        'HTML entities, decimal': ''.join(f'&#{ord(c)};' for c in key),
        'HTML entities, hex': ''.join(f'&#x{ord(c):x};' for c in key),
        'HTML entities for the signs only': key.replace('-', '&#x2D;'),
        'base64': base64.b64encode(raw).decode(),
        'base64 of "Bearer key"': base64.b64encode(b'Bearer ' + raw).decode(),
        'base64, URL-safe': base64.urlsafe_b64encode(raw).decode().rstrip('='),
        'hex': raw.hex(),
        'hex, upper case': raw.hex().upper(),
    }


UNICODE_ESCAPE = re.compile(r'\\u([0-9a-fA-F]{4})')


def decodings(text: str) -> Iterator[str]:
    """text, and text as each encoding would read it back."""
    yield text
    yield unquote(text)
    yield unquote(unquote(text))
    yield html.unescape(text)
    yield UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def leaked(text: str, key: str = KEY) -> list[str]:
    """How text still holds the key: found raw in any case after percent-, HTML- or \\u-decoding,
    as hex in any case, or as base64 (standard or URL-safe, at any offset)."""
    if not text:
        return []
    found = []
    low = key.lower()
    for i, decoded in enumerate(decodings(text)):
        if low in decoded.lower():
            found.append(('raw', 'percent', 'percent twice', 'HTML entities', '\\u escapes')[i])
    if key.encode().hex() in text.lower():
        found.append('hex')
    raw = key.encode()
    for offset in range(3):
        core = base64.b64encode(bytes(offset) + raw).decode()[4:-4]
        if core in text or core.replace('+', '-').replace('/', '_') in text:
            found.append('base64')
            break
    return found

# }}}


# numbers no usage or price has {{{

HUGE_INT = 10 ** 400  # JSON allows it: Python reads it as an int of 400 digits
BAD_NUMBERS = {'NaN': math.nan, 'Infinity': math.inf, '-Infinity': -math.inf, 'negative': -5,
               'huge float': 1e308, 'huge integer': HUGE_INT}


def sane_number(value: object, most: float = 1e12) -> bool:
    """A count or an amount a reader can be shown: finite, not negative, not absurd."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value) and 0 <= value <= most
    except OverflowError:
        return False


# a figure shown that is none: nan, inf, a negative amount, a number of sixteen digits or more
SHOWN_NUMBER = re.compile(r'(?i)\bnan\b|\binf(inity)?\b|(?:^|[\s(:$])-\s*\$?\d|\d[\d,]{19,}|\$-')

# }}}


# templates and files that are code {{{

def sentinel_code(sentinel: Path) -> str:
    """Python that, if run, leaves a file at sentinel."""
    return f'open({str(sentinel)!r}, "w").write("code from outside ran")'


def python_template(sentinel: Path) -> str:
    """A calibre template that calibre runs as Python (its 'python:' prefix)."""
    return (f'python:\ndef evaluate(book, context):\n    {sentinel_code(sentinel)}\n    return "ran"\n')


# a calibre template whose regular expression backtracks for ever on the book's title: (a|a)+ over
# forty a's and a character that fails the match
BACKTRACKING_TEMPLATE = '{title:re(^(a|a)+$,x)}'
BACKTRACKING_TITLE = 'a' * 40 + '!'
# calibre's template language asked to build a list of a hundred million items
LOOPING_TEMPLATE = "program: strlen(list_repeat('x', 100000000, ','))"
# Python's str.format reaching into objects, and a width that would take a gigabyte
FORMAT_ATTACKS = ('{title.__class__.__mro__}', '{0.__globals__}', '{title:>1000000000}', '{title!r:>999999999}')


class Sentinel:
    """Unpickled, leaves a file: a pickle that is code (pickle runs what it names)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (exec, (f'open({self.path!r}, "w").write("code from a pickle ran")',))


def code_pickle(sentinel: Path) -> bytes:
    return pickle.dumps(Sentinel(str(sentinel)), protocol=2)

# }}}


# hostile books {{{

def epub_bytes(chapters: list[bytes | str], container: str = CONTAINER, package: str | None = None) -> bytes:
    """An EPUB of these chapters (XHTML bodies, or bytes as the whole file), as bytes."""
    import io
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', container)
        zf.writestr('OEBPS/content.opf', package if package is not None else opf(chapters))
        for i, body in enumerate(chapters):
            zf.writestr(f'OEBPS/c{i}.xhtml', body if isinstance(body, bytes) else XHTML.format(body=body))
    return out.getvalue()


def write_bomb(path: Path, unpacked: int, name: str = 'OEBPS/c0.xhtml', good_first: bool = True) -> Path:
    """An EPUB whose one chapter (after a good one) unpacks to `unpacked` bytes of spaces."""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', CONTAINER)
        zf.writestr('OEBPS/content.opf', opf(['a', 'b']))
        zf.writestr('OEBPS/c0.xhtml', XHTML.format(body='<p>The good chapter.</p>'))
        info = zipfile.ZipInfo('OEBPS/c1.xhtml')
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, 'w', force_zip64=True) as f:
            f.write(b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>')
            piece = b' ' * MB
            for _ in range(unpacked // MB):
                f.write(piece)
            f.write(b'</p></body></html>')
    return path


def hostile_chapters() -> dict[str, list[bytes | str]]:
    """Books' chapters that cost a reader more than their size: each after a good chapter."""
    good = '<p>The good chapter.</p>'
    return {
        'millions of elements': [good, '<p>a</p>' * 3_000_000],
        'deep nesting': [good, '<div>' * 200_000 + 'deep' + '</div>' * 200_000],
        'huge chapter': [good, '<p>' + 'word ' * (64 * MB // 5) + '</p>'],
        'many attributes': [good, '<p ' + ' '.join(f'a{i}="v"' for i in range(500_000)) + '>x</p>'],
        'entity expansion': [good, (
            b'<?xml version="1.0"?><!DOCTYPE html [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">'
            + b''.join(b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b'&' + bytes([97 + i]) + b';') * 20)
                       for i in range(10))
            + b']><html xmlns="http://www.w3.org/1999/xhtml"><body><p>&k;</p></body></html>')],
    }

# }}}
