# License: GPLv3 Copyright: the Book AI developers
"""What of the book's text goes with a question, by scope, within a token budget:

- metadata: nothing (the default until the reader turns book text on);
- selection: the paragraph holding the selected text, with its neighbours;
- chapter: the chapter the reader is in, up to the reader's position;
- position: the passages that best match the question, all before the reader's position;
- so-far: everything read, up to the reader's position, in order (grounding.so_far), when the
  budget holds it all (conversation.question sizes that budget to the model's context window);
- book: the passages that best match the question, anywhere (spoilers allowed).

With a reading position, nothing after it is sent in any scope but "book"; with
none, the scopes that keep to it ("chapter", "position") send nothing: excerpt()
raises NoPlace, and the window, the viewer and the command line each say so. What
is chosen is data (an Excerpt); conversation.prompts numbers the passages for the
prompt, and the model cites them as [n] (citations.py reads those back).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, ranked
from calibre_plugins.bookai.grounding.index import Index, Passage, passages
from calibre_plugins.bookai.grounding.so_far import passages_read, tokens_of

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book, Paragraph

SCOPES = ('metadata', 'selection', 'chapter', 'position', 'so-far', 'book')
NEEDS_PLACE = ('chapter', 'position', 'so-far')  # the scopes that keep to the reader's place
DEFAULT_BUDGET = 1500  # tokens of book text
NEIGHBOURS = 2


@dataclass(frozen=True)
class Place:
    """Where a passage sent is in the book, kept with the turn for its citations."""
    chapter: str             # its chapter (for a passage found across the library: its book's title)
    position: float          # a fraction of the book
    cfi: str = ''            # for the E-book viewer to go there ('' when not known)
    book_id: int = 0         # for a passage found across the library: its book, and the format
    fmt: str = ''


class NoPlace(ValueError):
    """The scope keeps to the reader's place, and no place is known: nothing is sent,
    rather than guess and spoil."""


def check_place(scope: str, position: float | None) -> None:
    """Raises NoPlace when scope keeps to the reader's place (NEEDS_PLACE) and position is None."""
    if position is None and scope in NEEDS_PLACE:
        raise NoPlace(scope)


@dataclass(frozen=True)
class Excerpt:
    """The passages sent with a question, numbered from 1 in the prompt."""
    scope: str
    passages: tuple[Passage, ...]
    chapters: tuple[str, ...]  # the book's chapter titles, for citations
    until: int | None          # the reader's position (a character offset), when there is one
    book_length: int           # in characters: positions are fractions of it
    places: tuple[Place, ...] = ()  # a Place for each passage

    def chapter_of(self, number: int) -> str:
        """The chapter of passage number (from 1), '' for a number not sent."""
        return self.chapters[self.passages[number - 1].chapter] if 0 < number <= len(self.passages) else ''


def excerpt(book: 'Book', scope: str, question: str = '', position: float | None = None, selection: str = '',
            budget: int = DEFAULT_BUDGET, index: Index | None = None, embedding_index: EmbeddingIndex | None = None,
            question_vector: list[float] | None = None) -> Excerpt:
    """The Excerpt for a question. position: a fraction of the book, or None. With an
    embedding_index of the book's passages and the question's vector (grounding.embeddings),
    passages are ranked by meaning as well as by their words. Raises NoPlace for a scope
    that keeps to the reader's place (NEEDS_PLACE) when position is None."""
    if scope not in SCOPES:
        raise ValueError(f'unknown scope {scope!r}; the scopes are {", ".join(SCOPES)}')
    check_place(scope, position)
    until = None if position is None or scope == 'book' else int(max(0.0, min(1.0, position)) * book.length)
    chapters = tuple(c.title for c in book.chapters)
    chosen = []
    if scope == 'selection':
        chosen = around_selection(book, selection, until)
    elif scope == 'chapter':
        chosen = chapter_up_to(book, until if until is not None else book.length)
    elif scope == 'so-far':  # all of it, or none: a part would be a beginning, not what was read
        chosen = passages_read(book, until if until is not None else book.length)
        if tokens_of(chosen) > budget:
            chosen = []
    elif scope in ('position', 'book'):
        index = index or Index(passages(book))
        chosen = ranked(index, embedding_index, question, question_vector, k=50, until=until)
    kept, used = [], 0
    for p in chosen:
        cost = len(p.text) // CHARS_PER_TOKEN + 1
        if used + cost > budget:
            if scope == 'chapter':  # the end of the chapter, where the reader is, matters most
                continue
            break
        kept.append(p)
        used += cost
    if scope in ('selection', 'chapter'):
        kept.sort(key=lambda p: p.start)
    places = tuple(Place(chapters[p.chapter] if p.chapter < len(chapters) else '', book.fraction(p.start),
                         book.cfi_at(p.start) or '') for p in kept)
    return Excerpt(scope, tuple(kept), chapters, until, book.length, places)


def around_selection(book: 'Book', selection: str, until: int | None) -> list[Passage]:
    text = ' '.join((selection or '').split())
    if not text:
        return []
    probe = text[:200]
    paras = book.paragraphs
    hits = [i for i, p in enumerate(paras) if probe in p.text and (until is None or p.start <= until)]
    if not hits:
        return []
    i = hits[-1]  # the occurrence nearest to (before) the reader's position
    chosen = paras[max(0, i - NEIGHBOURS):i + NEIGHBOURS + 1]
    if until is not None:
        chosen = [p for p in chosen if p.start + len(p.text) <= until or p is paras[i]]
    return as_passages(chosen)


def chapter_up_to(book: 'Book', until: int) -> list[Passage]:
    chapter = next((p.chapter for p in reversed(book.paragraphs) if p.start <= until), 0)
    paras = [p for p in book.paragraphs if p.chapter == chapter and p.start + len(p.text) <= until]
    # newest first, so that the budget keeps what is nearest the reader's position
    return as_passages(paras)[::-1]


def as_passages(paragraphs: 'list[Paragraph]') -> list[Passage]:
    """Paragraphs as passages of one paragraph each."""
    return [Passage(k, p.chapter, p.start, p.start + len(p.text), p.text) for k, p in enumerate(paragraphs)]
