# License: GPLv3 Copyright: the Book AI developers
"""The forms a careless or hostile service may echo a secret in, spelled out by the tests
themselves (not by the plugin's code), and a check that finds them in a text.

forms_of() gives issue 26's fourteen forms and more: the key as it is, in another case, with
some or all of its characters percent-encoded (upper and lower hex, once or twice), JSON's
\\uXXXX per character, HTML's entities (decimal, hex, named), hex, base64 at any offset, and the
combinations a service plausibly makes (a 401 that lower-cases "Bearer <key>", a lower-cased
key percent-encoded, the address of a page with the key in it written into HTML)."""

import base64
import json
import re
from urllib.parse import quote, quote_plus

# the HTML 5 names of the characters an API key may hold, as the tests know them; '-' has none, and
# careless encoders write the hyphen's (U+2010) for it
HTML_NAMES = {'/': '&sol;', '+': '&plus;', '=': '&equals;', '.': '&period;', '_': '&lowbar;', ':': '&colon;',
              '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\u00e9': '&eacute;',
              '-': '&hyphen;'}


def json_u(text: str, upper: bool = False) -> str:
    """Every character as JSON's \\uXXXX (a surrogate pair past U+FFFF)."""
    units = text.encode('utf-16-be')
    out = ''.join('\\u' + units[i:i + 2].hex() for i in range(0, len(units), 2))
    return re.sub(r'\\u([0-9a-f]{4})', lambda m: '\\u' + m.group(1).upper(), out) if upper else out


def every_byte(text: str, upper: bool = True) -> str:
    return ''.join(('%%%02X' if upper else '%%%02x') % b for b in text.encode())


def forms_of(secret: str) -> dict[str, str]:
    """What a careless or hostile service may echo back, as the tests spell it out."""
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode()
    return {
        'raw': secret,
        'lower': secret.lower(),
        'upper': secret.upper(),
        'bearer-lower': ('Bearer ' + secret).lower(),  # a live 401 printed "bearer sk-rt-secretkey-..."
        'percent': quote(secret, safe=''),
        'percent-lower': re.sub('%[0-9A-F]{2}', lambda m: m.group().lower(), quote(secret, safe='')),
        'percent-plus': quote_plus(secret),
        'percent-unsafe-only': quote(secret, safe='/+~'),
        'percent-dash': secret.replace('-', '%2D'),
        'percent-every-byte': every_byte(secret),
        'percent-every-byte-lower': every_byte(secret, upper=False),
        'percent-twice': quote(quote(secret, safe=''), safe=''),
        'percent-of-lower': quote(secret.lower(), safe=''),
        'base64': b64,
        'base64-unpadded': b64.rstrip('='),
        'base64-url': base64.urlsafe_b64encode(raw).decode().rstrip('='),
        'base64-bearer': base64.b64encode(b'Bearer ' + raw).decode(),
        'base64-offset-2': base64.b64encode(b'k=' + raw).decode(),
        'json-ascii': json.dumps(secret)[1:-1],
        'json-slash': json.dumps(secret)[1:-1].replace('/', '\\/'),
        'json-u': json_u(secret),
        'json-u-upper': json_u(secret, upper=True),
        'json-u-of-upper': json_u(secret.upper()),
        'html-decimal': ''.join(f'&#{ord(c)};' for c in secret),
        'html-hex': ''.join(f'&#x{ord(c):x};' for c in secret),
        'html-hex-upper': ''.join(f'&#X{ord(c):X};' for c in secret),
        'html-named': ''.join(HTML_NAMES.get(c, c) for c in secret),
        'html-of-url': ''.join(HTML_NAMES.get(c, c) for c in quote(secret, safe='/+')),
        'hex': raw.hex(),
        'hex-upper': raw.hex().upper(),
    }


CASE_SENSITIVE = ('base64',)  # base64 in another case is other bytes: these are looked for as they are


def leaks(text: str, secret: str) -> list[str]:
    """The forms of secret that text still holds, found as the tests see them: in any case, but
    base64 as it is."""
    found = []
    raw = secret.encode()
    folded = text.lower()
    for name, form in forms_of(secret).items():
        if name.startswith(CASE_SENSITIVE):
            if form[4:-4] in text:  # the edges depend on the neighbours
                found.append(name)
        elif form.lower() in folded:
            found.append(name)
    for offset in range(3):
        core = base64.b64encode(bytes(offset) + raw).decode()[4:-4]
        if core in text or core.replace('+', '-').replace('/', '_') in text:
            found.append(f'base64 at offset {offset}')
    return found
