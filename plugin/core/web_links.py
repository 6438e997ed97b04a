# License: GPLv3 Copyright: the Book AI developers
"""The web pages an answer says it used (web search), as Book AI keeps and shows them.

A provider's Done carries them as they came (core.messages.WebLink: a title and an
address, both from outside). kept_links() is the one way they become what a turn
keeps, in the History too, and what the chat shows under the answer: web addresses
only (http or https, with a host, nothing unprintable in them, of a sane length),
each once, titles on one line with their control characters shown rather than
obeyed, at most limits.MAX_WEB_LINKS pages; what was left out is counted, never
silently lost. Applying it again to what it kept changes nothing, so a History file
edited by hand is held to the same rules when it is read back.

Shown text cannot lie about where a click goes. An address is kept without any
user:password@ (never printed, never sent on: https://paypal.com@evil.example opens
evil.example, and that is what is shown), and a host that could pass for another is kept
and shown as its punycode (xn--...), which is what the browser is given: shown_host() follows
the rules browsers use for IDN display (Chromium's and Firefox's "moderately restrictive"
profile, from unicodedata alone): each label of one script, or Latin with Han, Hiragana and
Katakana, Latin with Han and Bopomofo, Latin with Han and Hangul, and only scripts
recommended for identifiers; no label wholly made of letters that look Latin in another script
(Cyrillic раураl, аррӏе); no Latin look-alike letter (dotless ı, small capitals); no
combining mark on a Latin letter, no mark twice, no character that NFKC would change (full-width
letters), no digits of two numbering systems or foreign digits among Latin letters. A host in
any other shape (a percent sign, a backslash, punctuation) is not a web address at all.

No Qt, no translations here: the command line and the windows both use it.
"""

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit, urlunsplit

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.messages import WebLink
from calibre_plugins.bookai.core.printable import one_line


def is_web_address(url: str) -> bool:
    """Whether url is a web page's address that may be opened: http or https, with a host, of at
    most limits.MAX_WEB_LINK_URL_CHARS characters, with no space or unprintable character in it."""
    if not isinstance(url, str) or not url or len(url) > limits.MAX_WEB_LINK_URL_CHARS:
        return False
    if not url.isprintable() or any(c.isspace() for c in url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a port that is not a number raises ValueError)
    except ValueError:  # a broken address, such as an unclosed [IPv6
        return False
    return parts.scheme.lower() in ('http', 'https') and bool(host and is_host(host))


def is_host(host: str) -> bool:
    """Whether host (as urlsplit() gives it: lower case, no brackets) is a host name or an IP
    address: labels of letters, digits, marks, '-' and '_' between dots, or an IPv6 address.
    A percent sign, a backslash, a full-width or ideographic full stop or any other punctuation
    is refused: browsers and Qt read such hosts differently from one another."""
    if ':' in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    return all(c.isalnum() or c in '-._' or unicodedata.category(c)[0] == 'M' for c in host)


# The scripts recommended for identifiers (Unicode UTS #39 / UTS #31, table 5), as the first
# word(s) of their characters' names; a label in any other script is shown as punycode.
RECOMMENDED_SCRIPTS = frozenset((
    'Arabic', 'Armenian', 'Bengali', 'Bopomofo', 'Cyrillic', 'Devanagari', 'Ethiopic', 'Georgian', 'Greek',
    'Gujarati', 'Gurmukhi', 'Han', 'Hangul', 'Hebrew', 'Hiragana', 'Kannada', 'Katakana', 'Khmer', 'Lao',
    'Latin', 'Malayalam', 'Myanmar', 'Oriya', 'Sinhala', 'Tamil', 'Telugu', 'Thaana', 'Thai', 'Tibetan'))
# The mixes the moderately restrictive profile allows besides one script alone
ALLOWED_MIXES = (frozenset(('Latin', 'Han', 'Hiragana', 'Katakana')), frozenset(('Latin', 'Han', 'Bopomofo')),
                 frozenset(('Latin', 'Han', 'Hangul')))
NAME_SCRIPTS = {'CJK': 'Han', 'IDEOGRAPHIC': 'Han', 'KATAKANA-HIRAGANA': 'Katakana'}
# Letters of other scripts that look like Latin ones: a label made only of them (and digits,
# hyphens) is a whole-script confusable, such as Cyrillic "аррӏе" for apple (Cyrillic's as Chromium
# lists them)
LATIN_LOOKALIKES = {
    'Cyrillic': frozenset('асԁеһіјӏорԛѕԝхуъьҽпгѵѡ'),
    'Greek': frozenset('αβγεικνορτυχωη'),
    'Armenian': frozenset('օսհոցզ'),
}
# Latin letters that pass for others: dotless i and j, kra, the IPA and phonetic letters, small
# capitals, the click letters, Latin Extended-D and -E
LATIN_TRAPS = re.compile('[\u0131\u0138\u01c0-\u01c3\u0237\u0250-\u02af\u1d00-\u1dbf'
                         '\ua720-\ua7ff\uab30-\uab6f]')


def script_of(c: str) -> str:
    """The script of c as unicodedata tells it: 'Common' for ASCII digits and hyphens (and any
    decimal digit, checked apart), 'Inherited' for combining marks, '' when c has no name."""
    if c.isascii() and not c.isalpha():
        return 'Common'
    if unicodedata.category(c) == 'Nd':
        return 'Common'
    name = unicodedata.name(c, '')
    if not name:
        return ''
    word = name.split(' ', 1)[0]
    if word == 'COMBINING':
        return 'Inherited'
    return NAME_SCRIPTS.get(word, word.capitalize())


def label_is_safe(label: str) -> bool:
    """Whether one label of a host (lower case) may be shown as Unicode: see the module's doc."""
    if label.isascii():
        return True
    if unicodedata.normalize('NFKC', label).lower() != label or LATIN_TRAPS.search(label):
        return False
    scripts, zeros, previous = set(), set(), ''
    for c in label:
        script = script_of(c)
        if not script:
            return False
        category = unicodedata.category(c)
        if category[0] == 'M':
            if c == previous or script_of(previous) in ('Latin', 'Common', ''):
                return False  # a mark twice, or on a Latin letter (i + dot above passes for i)
        elif category == 'Nd':
            zeros.add(ord(c) - unicodedata.decimal(c))
        elif category[0] != 'L' and c not in '-_':
            return False
        if script not in ('Common', 'Inherited'):
            scripts.add(script)
        previous = c
    if len(zeros) > 1 or (zeros - {ord('0')} and 'Latin' in scripts):
        return False  # digits of two systems (1 and ١), or foreign digits among Latin letters
    if not scripts <= RECOMMENDED_SCRIPTS:
        return False
    if len(scripts) > 1 and not any(scripts <= mix for mix in ALLOWED_MIXES):
        return False
    if len(scripts) == 1:
        lookalikes = LATIN_LOOKALIKES.get(next(iter(scripts)))
        letters = [c for c in label if unicodedata.category(c)[0] == 'L']
        if lookalikes and letters and all(c in lookalikes for c in letters):
            return False
    return True


def unicode_label(label: str) -> str:
    """A label as Unicode: an xn-- label decoded; as it is when it does not decode into letters
    that are not all ASCII and that encode back to it (xn--abc- "decodes" to abc, which is not
    what a browser opens)."""
    if label.startswith('xn--') and label.isascii():
        try:
            decoded = label[4:].encode('ascii').decode('punycode')
        except (UnicodeError, ValueError):
            return label
        if decoded.isascii() or decoded != decoded.lower() or ascii_label(decoded) != label:
            return label
        return decoded
    return label


def ascii_label(label: str) -> str:
    """A label as ASCII: a Unicode one as its punycode (xn--...), as it is otherwise."""
    return label if label.isascii() else 'xn--' + label.encode('punycode').decode('ascii')


def shown_host(host: str) -> str:
    """host (lower case, as urlsplit() gives it) as it may be shown: in Unicode when every label
    is safe to show (label_is_safe()), else wholly as punycode, the ASCII a browser is given.
    An IP address is shown as it is."""
    if ':' in host or not host:
        return host
    labels = host.split('.')
    decoded = [unicode_label(label) for label in labels]
    if all(label_is_safe(label.lower()) for label in decoded):
        return '.'.join(decoded)
    return '.'.join(ascii_label(label) for label in labels)


def netloc_of(parts: SplitResult, host: str) -> str:
    """The host and port of parts, with host in its place, and no user:password@."""
    where = f'[{host}]' if ':' in host else host
    return where if parts.port is None else f'{where}:{parts.port}'


def web_address(url: str) -> str | None:
    """url as Book AI keeps, shows and opens it, or None when it is not a web address
    (is_web_address()): without user:password@, its host as punycode when it could pass for
    another (shown_host()); otherwise as it came, character for character."""
    if not is_web_address(url):
        return None
    parts = urlsplit(url)
    host = parts.hostname or ''  # is_web_address(): it has one
    unsafe = not host.isascii() and shown_host(host).isascii()
    if '@' not in parts.netloc and not unsafe:
        return url
    if unsafe:
        host = '.'.join(ascii_label(label) for label in host.split('.'))
    rebuilt = urlunsplit(parts._replace(netloc=netloc_of(parts, host)))
    return rebuilt if is_web_address(rebuilt) else None


USERINFO = re.compile(r'(?<=://)[^/?#]*@')  # the user:password@ of an address, also one that does not parse


def shown_address(url: str) -> str:
    """Any address (a web page's, a service's, one a service redirects to) as it may be printed
    or shown: without user:password@, its host as shown_host() (a look-alike as punycode), its
    control characters shown (one_line()); otherwise as it is."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ''
        parts.port  # noqa: B018 (ValueError for a port that is not one)
    except ValueError:
        return one_line(USERINFO.sub('', url))
    display = shown_host(host) if host and is_host(host) else host
    if '@' not in parts.netloc and display == host:
        return one_line(url)
    return one_line(urlunsplit(parts._replace(netloc=netloc_of(parts, display) if host else '')))


# An address among words (a page titled by its own address): shown as shown_address() shows it
ADDRESS_IN_WORDS = re.compile(r'\b[a-z][a-z0-9+.-]{1,15}://[^\s<>"]+', re.IGNORECASE)


def shown_in_words(text: str) -> str:
    """Words from outside that may name addresses (a page's title, a service's message) as they
    may be shown: one_line(), and every address in them as shown_address() shows it (no
    user:password@, a look-alike host as punycode)."""
    return one_line(ADDRESS_IN_WORDS.sub(lambda m: shown_address(m.group()), text))


def site(url: str) -> str:
    """The host of a web address ('' when there is none), as shown beside a page's title:
    shown_host(), so that it names the site a click opens."""
    try:
        host = urlsplit(url).hostname or ''
    except ValueError:
        return ''
    return one_line(shown_host(host)) if host and is_host(host) else ''


def kept_links(links: Iterable[object]) -> tuple[tuple[WebLink, ...], int]:
    """The pages of links as an answer keeps them, and how many others were left out: each
    address once, web addresses only (is_web_address()) as web_address() keeps them (no
    user:password@, a look-alike host as punycode), titles one_line() and cut at
    limits.MAX_WEB_LINK_TITLE_CHARS, at most limits.MAX_WEB_LINKS pages. Anything in links that
    is not a WebLink of text is left out too."""
    kept: list[WebLink] = []
    seen: set[str] = set()
    left_out = 0
    for link in links:
        if not isinstance(link, WebLink) or not isinstance(link.url, str) or not isinstance(link.title, str):
            left_out += 1
            continue
        url = web_address(link.url.strip()) or link.url.strip()
        if url in seen:
            continue
        seen.add(url)
        if not is_web_address(url) or len(kept) >= limits.MAX_WEB_LINKS:
            left_out += 1
            continue
        title = shown_in_words(link.title[:limits.MAX_WEB_LINK_TITLE_CHARS * 8])  # a huge title is not scanned whole
        if len(title) > limits.MAX_WEB_LINK_TITLE_CHARS:
            title = title[:limits.MAX_WEB_LINK_TITLE_CHARS - 1].rstrip() + '…'
        kept.append(WebLink(title, url))
    return tuple(kept), left_out
