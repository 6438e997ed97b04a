# License: GPLv3 Copyright: the Book AI developers
"""What the reader has read: the book's text up to their place, chapter by chapter.

The one place that cuts a book at the reader's place for everything that works from the whole
text read so far (the "Everything up to where I am" scope, chapter summaries, the recap, the
X-Ray): a paragraph goes only when it ends at or before the place, so that nothing after the
place reaches a model; the chapter the reader is inside is cut there and marked not complete.

Passages are numbered as grounding.index.passages() numbers them over the whole book, so a
passage read here is the same passage (the same number, start and text) as in the book's index,
whichever the place, as long as it is wholly read.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN
from calibre_plugins.bookai.grounding.index import Passage, passages

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book


def passage_tokens(text: str) -> int:
    """The tokens a passage's text is counted as, as scopes.excerpt() counts them."""
    return len(text) // CHARS_PER_TOKEN + 1


def tokens_of(chosen: Iterable[Passage]) -> int:
    return sum(passage_tokens(p.text) for p in chosen)


@dataclass(frozen=True)
class ChapterRead:
    """One chapter of the book as far as it was read."""
    number: int                     # index into Book.chapters
    title: str
    passages: tuple[Passage, ...]   # its passages read, in order (numbered over the whole book)
    complete: bool                  # read to its end (else the reader is inside it)
    end: int                        # character offset where what was read of it ends

    @property
    def tokens(self) -> int:
        return tokens_of(self.passages)


def read_until(book: 'Book', position: float | None) -> int:
    """The character offset of the reader's place, a fraction of the book (None: the whole book)."""
    if position is None:
        return book.length
    return int(max(0.0, min(1.0, position)) * book.length)


def passages_read(book: 'Book', until: int) -> list[Passage]:
    """The book's passages (grounding.index.passages()) made of the paragraphs wholly read
    before until, a character offset."""
    from calibre_plugins.bookai.grounding.extract import Book
    read = [p for p in book.paragraphs if p.start + len(p.text) <= until]
    return passages(Book(book.chapters, read))


def chapters_read(book: 'Book', until: int) -> list[ChapterRead]:
    """The chapters read up to until (a character offset), each with its passages read, in
    order; a chapter none of whose paragraphs was wholly read is left out."""
    ends: dict[int, int] = {}
    for p in book.paragraphs:
        ends[p.chapter] = p.start + len(p.text)
    by_chapter: dict[int, list[Passage]] = {}
    for passage in passages_read(book, until):
        by_chapter.setdefault(passage.chapter, []).append(passage)
    titles = [c.title for c in book.chapters]
    return [ChapterRead(n, titles[n] if n < len(titles) else '', tuple(chosen), ends.get(n, 0) <= until,
                        chosen[-1].end)
            for n, chosen in sorted(by_chapter.items())]
