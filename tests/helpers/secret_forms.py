# License: GPLv3 Copyright: the Book AI developers
"""The forms a careless or hostile service may echo a secret in, spelled out by the tests
themselves (not by the plugin's code), and a check that finds them in a text."""

import base64
import json
import re
from urllib.parse import quote, quote_plus


def forms_of(secret: str) -> dict[str, str]:
    """What a careless or hostile service may echo back, as the tests spell it out."""
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode()
    return {
        'raw': secret,
        'percent': quote(secret, safe=''),
        'percent-lower': re.sub('%[0-9A-F]{2}', lambda m: m.group().lower(), quote(secret, safe='')),
        'percent-plus': quote_plus(secret),
        'base64': b64,
        'base64-unpadded': b64.rstrip('='),
        'base64-url': base64.urlsafe_b64encode(raw).decode().rstrip('='),
        'base64-bearer': base64.b64encode(b'Bearer ' + raw).decode(),
        'base64-offset-2': base64.b64encode(b'k=' + raw).decode(),
        'json-ascii': json.dumps(secret)[1:-1],
        'json-slash': json.dumps(secret)[1:-1].replace('/', '\\/'),
    }


def leaks(text: str, secret: str) -> list[str]:
    """The forms of secret that text still holds, found as the tests see them."""
    found = []
    raw = secret.encode()
    for name, form in forms_of(secret).items():
        core = form if not name.startswith('base64') else form[4:-4]  # the edges depend on the neighbours
        if core in text:
            found.append(name)
    for offset in range(3):
        core = base64.b64encode(bytes(offset) + raw).decode()[4:-4]
        if core in text or core.replace('+', '-').replace('/', '_') in text:
            found.append(f'base64 at offset {offset}')
    return found
