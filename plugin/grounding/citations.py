# License: GPLv3 Copyright: the Book AI developers
"""Citations in an answer: the [n] markers the model was asked to use (or "passage n"),
each tied to the passage sent as number n, with its chapter and position. A number
that was not sent is flagged, never shown as a real citation.

Small local models often answer from the passages without citing any. For such an
answer, repeated_passages() finds the passages whose words it repeats, runs of several
words in the same order, so the reader still sees where the answer comes from; these
are shown as repeated, never as the model's own citations."""

import re
from collections.abc import Callable, Iterator, Sequence
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


# a run of this many words, in order, that answer and passage share, is repeated from it
RUN = 5
WORD = re.compile(r'\w+')


def runs(text: str, size: int = RUN) -> set[tuple[str, ...]]:
    words = [w.casefold() for w in WORD.findall(text)]
    return {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}


def repeated_passages(answer: str, passages: 'Sequence[str]', least: int = 2, most: int = 3) -> list[int]:
    """The numbers (from 1) of the passages whose words answer repeats (at least least runs of
    RUN words in the same order), the most repeated first, at most most of them; [] when it
    repeats none, and for an answer that cites any passage, whose own citations stand."""
    said = runs(answer)
    if not said or next(cited_numbers(answer), None) is not None:
        return []
    shared = [(len(said & runs(text)), n) for n, text in enumerate(passages, 1)]
    return [n for count, n in sorted(shared, key=lambda c: (-c[0], c[1])) if count >= least][:most]


@dataclass(frozen=True)
class Citation:
    number: int
    sent: bool              # False: the model cited a passage it was not given
    chapter: str = ''
    position: float = 0.0   # where the passage starts, as a fraction of the book
    text: str = ''
    repeated: bool = False  # not cited by the model: the answer repeats this passage's words


def citations(answer: str, excerpt: 'Excerpt') -> list[Citation]:
    """The distinct citations in answer, in the order they first appear; for an answer that
    cites none, the passages it repeats (repeated_passages), marked repeated."""
    book_length = excerpt.book_length

    def of(number: int, repeated: bool = False) -> Citation:
        p = excerpt.passages[number - 1]
        return Citation(number, True, excerpt.chapter_of(number), p.start / book_length if book_length else 0.0,
                        p.text, repeated)
    found = [of(n) if 0 < n <= len(excerpt.passages) else Citation(n, False) for n in cited_numbers(answer)]
    return found or [of(n, True) for n in repeated_passages(answer, [p.text for p in excerpt.passages])]
