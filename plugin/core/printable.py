# License: GPLv3 Copyright: the Book AI developers
"""Text from outside as it may be shown: every character that steers a terminal or the order
text is read in made visible and inert.

One class of characters for every way text is shown (the command line, the windows' labels,
lists and tool tips, the job log, the files Book AI writes): C0 controls but line feed and tab,
DEL, C1 controls (0x9b is a terminal's CSI), the marks and overrides that reorder text (a
right-to-left override can show a name's letters in an order that hides what it is), and lone
surrogates, which no terminal can be sent. inert() shows each as an escape (ESC as \\x1b,
U+202E as \\u202e), so the reader sees that something was there; one_line() also puts the text
on one line.

The types peers' words arrive in (a Done's model, an ImageResult's words, a Model of a list,
a ProviderError's message) pass their strings through here as they are made, so that no caller
can show them raw. Applying either again changes nothing.

No Qt, no translations: every layer uses it.
"""

import re

CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]')
SPACES = re.compile(r'\s+')


def escape(match: re.Match) -> str:
    c = match.group()
    return f'\\x{ord(c):02x}' if c < '\u0100' else f'\\u{ord(c):04x}'


def inert(text: str) -> str:
    """text with its control characters visible and inert (see the module's doc); line feeds and
    tabs kept."""
    if not isinstance(text, str):
        return text
    return CONTROL.sub(escape, text)


def one_line(text: str) -> str:
    """text on one line, inert: every run of white space (a carriage return among it) one space,
    none at either end, and then inert()."""
    if not isinstance(text, str):
        return text
    return inert(SPACES.sub(' ', text).strip())


def without_controls(text: str) -> str:
    """text with its control characters taken out (see the module's doc), line feeds and tabs
    kept: for text that goes on to a model rather than to a reader (a book's description)."""
    return CONTROL.sub('', text) if isinstance(text, str) else text
