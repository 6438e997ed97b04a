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

No Qt, no translations here: the command line and the windows both use it.
"""

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.messages import WebLink

# Shown escaped: C0 and C1 controls but the spaces among them, the marks that reorder text
# (a title could otherwise show its words in an order that hides what it is), lone surrogates.
CONTROL = re.compile('[\x00-\x08\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
SPACES = re.compile(r'\s+')


def escaped(match: re.Match) -> str:
    c = match.group()
    return f'\\x{ord(c):02x}' if c < '\u0100' else f'\\u{ord(c):04x}'


def shown(text: str) -> str:
    """text on one line, its control characters visible and inert: ESC as \\x1b, U+202E as \\u202e."""
    return SPACES.sub(' ', CONTROL.sub(escaped, text)).strip()


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
    except ValueError:  # a broken address, such as an unclosed [IPv6
        return False
    return parts.scheme.lower() in ('http', 'https') and bool(host)


def site(url: str) -> str:
    """The host of a web address ('' when there is none), as shown beside a page's title."""
    try:
        return shown(urlsplit(url).hostname or '')
    except ValueError:
        return ''


def kept_links(links: Iterable[object]) -> tuple[tuple[WebLink, ...], int]:
    """The pages of links as an answer keeps them, and how many others were left out: each
    address once, web addresses only (is_web_address()), titles shown() and cut at
    limits.MAX_WEB_LINK_TITLE_CHARS, at most limits.MAX_WEB_LINKS pages. Anything in links that
    is not a WebLink of text is left out too."""
    kept: list[WebLink] = []
    seen: set[str] = set()
    left_out = 0
    for link in links:
        if not isinstance(link, WebLink) or not isinstance(link.url, str) or not isinstance(link.title, str):
            left_out += 1
            continue
        url = link.url.strip()
        if url in seen:
            continue
        seen.add(url)
        if not is_web_address(url) or len(kept) >= limits.MAX_WEB_LINKS:
            left_out += 1
            continue
        title = shown(link.title[:limits.MAX_WEB_LINK_TITLE_CHARS * 8])  # a huge title is not scanned whole
        if len(title) > limits.MAX_WEB_LINK_TITLE_CHARS:
            title = title[:limits.MAX_WEB_LINK_TITLE_CHARS - 1].rstrip() + '…'
        kept.append(WebLink(title, url))
    return tuple(kept), left_out
