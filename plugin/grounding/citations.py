# License: GPLv3 Copyright: the Book AI developers
"""Citations in an answer: the [n] markers the model was asked to use, each tied to the
passage sent as number n, with its chapter and position. A number that was not
sent is flagged, never shown as a real citation."""

import re
from dataclasses import dataclass

MARKER = re.compile(r'\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]')


@dataclass(frozen=True)
class Citation:
    number: int
    sent: bool              # False: the model cited a passage it was not given
    chapter: str = ''
    position: float = 0.0   # where the passage starts, as a fraction of the book
    text: str = ''


def citations(answer, excerpt):
    """The distinct citations in answer, in the order they first appear."""
    book_length = excerpt.book_length
    found, seen = [], set()
    for m in MARKER.finditer(answer or ''):
        for number in (int(x) for x in m.group(1).split(',')):
            if number in seen:
                continue
            seen.add(number)
            if 0 < number <= len(excerpt.passages):
                p = excerpt.passages[number - 1]
                found.append(Citation(number, True, excerpt.chapter_of(number),
                                      p.start / book_length if book_length else 0.0, p.text))
            else:
                found.append(Citation(number, False))
    return found
