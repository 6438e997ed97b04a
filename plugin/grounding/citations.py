# License: GPLv3 Copyright: the Book AI developers
"""Citations in an answer: the [n] markers the model was asked to use (or "passage n"),
each tied to the passage sent as number n, with its chapter and position. A number
that was not sent is flagged, never shown as a real citation."""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.scopes import Excerpt

# the ways a model cites passage n: [n] and [n, m] as it is asked to, and "passage n"
MARKERS = re.compile(r'\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]|\b[Pp]assages?\s+(\d{1,3}(?:\s*(?:,|and)\s*\d{1,3})*)\b')


def cited_numbers(answer: str) -> Iterator[int]:
    """The passage numbers answer cites, each once, in the order they are first cited."""
    seen = set()
    for m in MARKERS.finditer(answer or ''):
        for number in (int(n) for n in re.findall(r'\d+', next(g for g in m.groups() if g))):
            if number not in seen:
                seen.add(number)
                yield number


def linked(text: str, cite: Callable[[int], str]) -> str:
    """text with the number of each citation through cite(number) -> str."""
    def replace(m):
        i = next(i for i, g in enumerate(m.groups(), 1) if g)
        start, end = m.start(i) - m.start(), m.end(i) - m.start()
        whole = m.group(0)
        return whole[:start] + re.sub(r'\d+', lambda d: cite(int(d.group())), whole[start:end]) + whole[end:]
    return MARKERS.sub(replace, text)


@dataclass(frozen=True)
class Citation:
    number: int
    sent: bool              # False: the model cited a passage it was not given
    chapter: str = ''
    position: float = 0.0   # where the passage starts, as a fraction of the book
    text: str = ''


def citations(answer: str, excerpt: 'Excerpt') -> list[Citation]:
    """The distinct citations in answer, in the order they first appear."""
    book_length = excerpt.book_length
    found = []
    for number in cited_numbers(answer):
        if 0 < number <= len(excerpt.passages):
            p = excerpt.passages[number - 1]
            found.append(Citation(number, True, excerpt.chapter_of(number),
                                  p.start / book_length if book_length else 0.0, p.text))
        else:
            found.append(Citation(number, False))
    return found
