# License: GPLv3 Copyright: the Book AI developers
"""Passages of a book and a lexical ranker (BM25) over them: no network, no model.

A passage is a run of whole paragraphs of one chapter, about PASSAGE_WORDS words.
search() ranks passages for a question; with until (a character offset: the
reader's position), a passage that reaches past it is never returned, so nothing
after where the reader is can be sent.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book, Paragraph

PASSAGE_WORDS = 120
K1, B = 1.2, 0.75
WORD = re.compile(r'\w+', re.UNICODE)
# words too common to tell passages apart (English; other languages rank fine without)
STOP = frozenset('''a an and are as at be but by for from has have he her his i in is it its of on or she that the
their them they this to was were what when where which who why will with you your about how does did do'''.split())


def words(text: str) -> list[str]:
    """The words of text that tell passages apart, lower case."""
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


@dataclass(frozen=True)
class Passage:
    number: int
    chapter: int
    start: int      # character offsets in the book's text
    end: int
    text: str


def passages(book: 'Book', size: int = PASSAGE_WORDS) -> list[Passage]:
    """The book's paragraphs grouped into passages of about size words, within chapters."""
    out: list[Passage] = []
    current: list['Paragraph'] = []
    count = 0

    def close() -> None:
        if current:
            first, last = current[0], current[-1]
            out.append(Passage(len(out), first.chapter, first.start, last.start + len(last.text),
                               '\n'.join(p.text for p in current)))
    for p in book.paragraphs:
        n = len(p.text.split())
        if current and (p.chapter != current[0].chapter or count + n > size):
            close()
            current, count = [], 0
        current.append(p)
        count += n
    close()
    return out


class Index:
    """The BM25 ranking of a book's passages."""

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        self.terms = [Counter(words(p.text)) for p in passages]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0
        df: Counter[str] = Counter()
        for t in self.terms:
            df.update(t.keys())
        n = len(passages)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    def search(self, question: str, k: int = 5, until: int | None = None) -> list[Passage]:
        """The k passages that best match question, best first; with until, only passages that
        end at or before that character offset."""
        query = set(words(question))
        scored = []
        for i, (terms, length) in enumerate(zip(self.terms, self.lengths)):
            p = self.passages[i]
            if until is not None and p.end > until:
                continue
            score = 0.0
            for w in query:
                f = terms.get(w)
                if f:
                    score += self.idf[w] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / self.average))
            if score > 0:
                scored.append((score, -i, p))
        scored.sort(reverse=True)
        return [p for score, i, p in scored[:k]]
